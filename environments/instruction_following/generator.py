"""Prompts for ``InstructionFollowing-v0``: a writing task and 1-3 constraints, drawn as data.

A task is a template from :data:`TASKS` about a topic from :data:`TOPICS` (the reply must name
the topic). Constraints are drawn without two that claim the same part of the reply (see
:func:`~environments.instruction_following.constraints.compatible`), each with arguments from
the pools below. The pools keep clear of one another: no forbidden word is a keyword, a topic
or a word the oracle writes, and no word of a topic, keyword, phrase or placeholder holds a
letter that a "fewer than" letter constraint counts.

Example:
    >>> import random
    >>> prompt = generate_prompt(random.Random(0))
    >>> prompt.topic in prompt.task
    True
    >>> 1 <= len(prompt.constraints) <= 3
    True
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from environments.instruction_following.constraints import CONSTRAINT_KINDS, compatible

TASKS = (
    "Write a short story about the {topic}.",
    "Write a letter to a friend about the {topic}.",
    "Write a product description for a model of the {topic}.",
    "Explain how the {topic} works to a ten-year-old.",
    "Write a blog post about a day spent near the {topic}.",
    "Write a short speech praising the {topic}.",
    "Write a travel note about visiting the {topic}.",
    "Write a diary entry about the {topic}.",
)
TOPICS = (
    "lighthouse", "volcano", "bicycle", "library", "garden", "harbor", "castle", "orchard",
    "telescope", "bakery", "railway", "glacier", "desert", "island", "canal", "windmill",
    "theater", "market", "forest", "river", "mountain", "village", "bridge", "tunnel",
    "museum", "school", "kitchen", "airport", "rainbow", "storm",
)  # fmt: skip
KEYWORDS = (
    "lantern", "silver", "blossom", "whisper", "morning", "thunder", "meadow", "velvet",
    "compass", "harvest", "candle", "shadow", "ribbon", "pebble", "anchor", "melody",
)  # fmt: skip
#: never written by the oracle (nor in any pool above or its vocabulary)
FORBIDDEN = (
    "very", "really", "actually", "basically", "amazing", "awesome", "nice", "thing",
    "stuff", "literally", "totally", "simply", "just", "good", "bad", "great",
)  # fmt: skip
START_PHRASES = ("Here is my reply", "Let me begin", "Once upon a time", "Dear reader")
END_PHRASES = ("That is all for now.", "Thank you for reading.", "The end.", "Until we meet again.")
#: letters a reply must use at least n times, and those it must use fewer than n times (no
#: word in the pools above, nor in the oracle's vocabulary, holds one of the latter)
FREQUENT_LETTERS = ("b", "k", "p", "v", "w", "y")
RARE_LETTERS = ("j", "q", "x", "z")
SECTION_MARKERS = ("SECTION", "PART")
POSTSCRIPT_MARKERS = ("P.S.", "P.P.S.")


@dataclass(frozen=True)
class Prompt:
    """One episode's task.

    Attributes:
        task: the writing task, in words.
        topic: the word the reply must name.
        constraints: ``[{"kind": ..., "args": {...}}, ...]``.
    """

    task: str
    topic: str
    constraints: list[dict[str, Any]] = field(default_factory=list)


def draw_arguments(kind: str, rng: random.Random) -> dict[str, Any]:
    """Arguments for a constraint of ``kind``, drawn from the pools."""
    if kind == "word_count_at_least":
        return {"n": rng.choice((40, 60, 80, 100, 120))}
    if kind == "word_count_at_most":
        return {"n": rng.choice((100, 120, 150, 200))}
    if kind == "sentence_count_at_least":
        return {"n": rng.randint(3, 8)}
    if kind == "paragraphs_exactly":
        return {"n": rng.randint(2, 4)}
    if kind == "include_keywords":
        return {"keywords": rng.sample(KEYWORDS, rng.randint(2, 3))}
    if kind == "keyword_frequency":
        return {"keyword": rng.choice(KEYWORDS), "n": rng.randint(2, 4)}
    if kind == "forbidden_words":
        return {"forbidden": rng.sample(FORBIDDEN, rng.randint(2, 3))}
    if kind == "letter_frequency":
        if rng.random() < 0.5:
            return {
                "letter": rng.choice(FREQUENT_LETTERS),
                "relation": "at least",
                "n": rng.randint(3, 8),
            }
        return {
            "letter": rng.choice(RARE_LETTERS),
            "relation": "fewer than",
            "n": rng.randint(1, 3),
        }
    if kind in ("bullet_points_exactly",):
        return {"n": rng.randint(2, 5)}
    if kind == "sections_exactly":
        return {"n": rng.randint(2, 4), "marker": rng.choice(SECTION_MARKERS)}
    if kind in ("capital_words_at_least", "highlighted_at_least", "placeholders_at_least"):
        return {"n": rng.randint(1, 3) if kind != "capital_words_at_least" else rng.randint(2, 5)}
    if kind == "starts_with":
        return {"phrase": rng.choice(START_PHRASES)}
    if kind == "ends_with":
        return {"phrase": rng.choice(END_PHRASES)}
    if kind == "postscript":
        return {"marker": rng.choice(POSTSCRIPT_MARKERS)}
    return {}


def draw_constraints(rng: random.Random, kinds: Sequence[str], count: int) -> list[dict[str, Any]]:
    """``count`` constraints of distinct, compatible kinds among ``kinds`` (fewer when no
    compatible kind is left)."""
    chosen: list[str] = []
    candidates = list(kinds)
    rng.shuffle(candidates)
    for name in candidates:
        if len(chosen) == count:
            break
        if compatible([*chosen, name]):
            chosen.append(name)
    return [{"kind": name, "args": draw_arguments(name, rng)} for name in chosen]


def generate_prompt(
    rng: random.Random,
    kinds: Sequence[str] | None = None,
    constraints: tuple[int, int] = (1, 3),
) -> Prompt:
    """A task and between ``constraints[0]`` and ``constraints[1]`` constraints of ``kinds``
    (default: every kind)."""
    topic = rng.choice(TOPICS)
    task = rng.choice(TASKS).format(topic=topic)
    count = rng.randint(*constraints)
    return Prompt(task, topic, draw_constraints(rng, kinds or list(CONSTRAINT_KINDS), count))


__all__ = [
    "END_PHRASES",
    "FORBIDDEN",
    "KEYWORDS",
    "RARE_LETTERS",
    "START_PHRASES",
    "TASKS",
    "TOPICS",
    "Prompt",
    "draw_constraints",
    "generate_prompt",
]
