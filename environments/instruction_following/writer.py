"""``write_reply``: a scripted writer that keeps every constraint of a prompt (the oracle's).

It writes plain sentences about the topic from a small vocabulary (no commas, no forbidden
word, no letter a "fewer than" constraint counts), adds a sentence for each constraint that
asks for content (keywords, a letter, capital words, placeholders, highlights), lays them out
as the layout constraint asks (paragraphs, bullet points, sections, two replies, JSON), then
adds the start, the end and the case. It never reads the checkers: the tests prove that what
it writes passes them.

Example:
    >>> import random
    >>> from environments.instruction_following.constraints import check
    >>> from environments.instruction_following.generator import generate_prompt
    >>> prompt = generate_prompt(random.Random(3))
    >>> reply = write_reply(prompt)
    >>> all(check(c, reply) for c in prompt.constraints)
    True
"""

from __future__ import annotations

import json
from typing import Any

from environments.instruction_following.constraints import RESPONSE_SEPARATOR, words
from environments.instruction_following.generator import Prompt

SUBJECTS = (
    "The old keeper", "A small child", "My neighbor", "The crew", "Our guide",
    "A tired painter", "The baker", "Every visitor", "My brother", "The teacher",
)  # fmt: skip
VERBS = (
    "watches", "remembers", "describes", "admires", "visits", "paints", "studies",
    "follows", "draws", "loves",
)  # fmt: skip
ENDINGS = (
    "in the early light", "after the long rain", "before the crowd arrives",
    "with calm delight", "from the hill above", "during the cold season",
    "for many hours", "on a calm evening", "with a warm smile", "under the open sky",
)  # fmt: skip
#: a word holding each letter a "at least" letter constraint may ask for
LETTER_WORDS = {"b": "boat", "k": "kite", "p": "pier", "v": "valley", "w": "wave", "y": "sky"}
CAPITAL_WORDS = ("TRULY", "WORTH", "SEEING", "TODAY", "AGAIN")
PLACEHOLDERS = ("[name]", "[address]", "[date]")
HIGHLIGHTS = ("*the first part*", "*the second part*", "*the third part*")


def _sentence(index: int, topic: str) -> str:
    n = len(SUBJECTS)
    subject, verb = SUBJECTS[index % n], VERBS[(index // n + index) % len(VERBS)]
    return f"{subject} {verb} the {topic} {ENDINGS[(index * 3) % len(ENDINGS)]}."


def _content_sentences(args: dict[str, dict[str, Any]], topic: str) -> list[str]:
    """A sentence for each constraint that asks for content."""
    extra = []
    for keyword in args.get("include_keywords", {}).get("keywords", []):
        extra.append(f"The {topic} keeps a {keyword} close.")
    if "keyword_frequency" in args:
        keyword, n = args["keyword_frequency"]["keyword"], args["keyword_frequency"]["n"]
        extra.append("I see the " + " and the ".join([keyword] * n) + ".")
    letter = args.get("letter_frequency", {})
    if letter.get("relation") == "at least":
        extra.append(
            "Look at the " + " and the ".join([LETTER_WORDS[letter["letter"]]] * letter["n"]) + "."
        )
    if "capital_words_at_least" in args:
        extra.append(
            "It is " + " ".join(CAPITAL_WORDS[: args["capital_words_at_least"]["n"]]) + "."
        )
    if "placeholders_at_least" in args:
        extra.append(
            "Write to " + " or ".join(PLACEHOLDERS[: args["placeholders_at_least"]["n"]]) + "."
        )
    if "highlighted_at_least" in args:
        extra.append("Read " + " and ".join(HIGHLIGHTS[: args["highlighted_at_least"]["n"]]) + ".")
    return extra


def _lay_out(sentences: list[str], args: dict[str, dict[str, Any]], topic: str) -> str:
    if "paragraphs_exactly" in args:
        n = args["paragraphs_exactly"]["n"]
        return "\n\n".join(" ".join(sentences[i::n]) for i in range(n))
    if "sections_exactly" in args:
        n, marker = args["sections_exactly"]["n"], args["sections_exactly"]["marker"]
        parts = [" ".join(sentences[i::n]) for i in range(n)]
        return "\n\n".join(f"{marker} {i + 1}\n{part}" for i, part in enumerate(parts))
    if "bullet_points_exactly" in args:
        n = args["bullet_points_exactly"]["n"]
        points = [_sentence(len(sentences) + i, topic) for i in range(n)]
        return " ".join(sentences) + "\n\n" + "\n".join(f"- {point}" for point in points)
    if "two_responses" in args:
        second = " ".join(_sentence(5 + i, topic) for i in range(2))  # not the first's
        return " ".join(sentences) + f"\n{RESPONSE_SEPARATOR}\n" + second
    if "json_format" in args:
        return json.dumps({"topic": topic, "body": " ".join(sentences)}, indent=2)
    return " ".join(sentences)


def write_reply(prompt: Prompt) -> str:
    """A reply to ``prompt`` that keeps every one of its constraints (without the answer tag)."""
    args = {c["kind"]: dict(c.get("args") or {}) for c in prompt.constraints}
    topic = prompt.topic
    content = _content_sentences(args, topic)
    fewest = max(
        2,
        args.get("sentence_count_at_least", {}).get("n", 0),
        args.get("paragraphs_exactly", {}).get("n", 0),
        args.get("sections_exactly", {}).get("n", 0),
    )
    base = [_sentence(i, topic) for i in range(max(2, fewest - len(content)))]
    while True:
        text = _decorated(_lay_out(base + content, args, topic), args, topic)
        if len(words(text)) >= args.get("word_count_at_least", {}).get("n", 0):
            return text
        base.append(_sentence(len(base), topic))


def _decorated(text: str, args: dict[str, dict[str, Any]], topic: str) -> str:
    if "starts_with" in args:
        text = f"{args['starts_with']['phrase']}.\n{text}"  # its own line: a section follows
    if "title" in args:
        text = f"<<Notes on the {topic}>>\n{text}"
    if "ends_with" in args:
        text = f"{text} {args['ends_with']['phrase']}"
    if "postscript" in args:
        text = f"{text}\n{args['postscript']['marker']} {_sentence(300, topic)}"
    if "all_lowercase" in args:
        text = text.lower()
    if "all_uppercase" in args:
        text = text.upper()
    if "quoted" in args:
        text = f'"{text}"'
    return text


__all__ = ["write_reply"]
