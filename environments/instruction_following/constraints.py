"""Verifiable constraints on a written reply, IFEval-style: each a rule that reads the text.

A constraint is a *kind* (one of :data:`CONSTRAINT_KINDS`) and its arguments, plain data::

    {"kind": "word_count_at_least", "args": {"n": 60}}

:func:`describe` writes it as an instruction, :func:`check` decides whether a reply keeps it.
Every checker is a small function of ``(text, **args)`` below; counting is done with the
regular expressions at the top, so the prompt's words mean what the checker counts:

* a *word* is a run of letters or digits (an apostrophe inside joins: ``don't`` is one word);
* a *sentence* ends with ``.``, ``!`` or ``?`` (then any closing quotes or brackets) followed
  by a space, a line break or the end;
* a *paragraph* is a block of text between blank lines;
* a *bullet point* is a line that starts with ``-`` or ``*`` and a space.

Words and phrases are compared case-insensitively, except by the case constraints.

Example:
    >>> check({"kind": "no_commas", "args": {}}, "Short, and sweet.")
    False
    >>> describe({"kind": "word_count_at_least", "args": {"n": 3}})
    'Answer with at least 3 words.'
    >>> check({"kind": "word_count_at_least", "args": {"n": 3}}, "Don't stop now.")
    True
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any

WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")
SENTENCE_END = re.compile(r"[.!?]+[\"')\]]*(?=\s|$)")
PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
BULLET = re.compile(r"^[ \t]*[-*][ \t]+\S", re.MULTILINE)
PLACEHOLDER = re.compile(r"\[[^\[\]\n]+\]")
HIGHLIGHT = re.compile(r"\*[^\s*][^\n*]*\*")
TITLE = re.compile(r"<<[^<>\n]+>>")
CAPITAL_WORD = re.compile(r"\b[A-Z]{2,}\b")
RESPONSE_SEPARATOR = "******"


def words(text: str) -> list[str]:
    """The words of ``text``, as the word counts count them.

    Example:
        >>> words("It's 5 o'clock, in Paris!")
        ["It's", '5', "o'clock", 'in', 'Paris']
    """
    return WORD.findall(text)


def sentence_count(text: str) -> int:
    """Sentences in ``text``: ends (``.``, ``!``, ``?``) followed by a space, a line or the end.

    Example:
        >>> sentence_count("One. Two? Three!! And 3.5 is not an end")
        3
    """
    return len(SENTENCE_END.findall(text))


def paragraphs(text: str) -> list[str]:
    """The non-empty blocks of ``text`` between blank lines, stripped."""
    return [block.strip() for block in PARAGRAPH_BREAK.split(text.strip()) if block.strip()]


def _has_word(text: str, word: str) -> bool:
    return re.search(rf"\b{re.escape(word)}\b", text, re.IGNORECASE) is not None


def _word_occurrences(text: str, word: str) -> int:
    return len(re.findall(rf"\b{re.escape(word)}\b", text, re.IGNORECASE))


def _strip_code_fence(text: str) -> str:
    stripped = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*\n?(.*?)\n?```", stripped, re.DOTALL)
    return fenced.group(1) if fenced else stripped


# ------------------------------------------------------------------------------ the checkers
def word_count_at_least(text: str, n: int) -> bool:
    return len(words(text)) >= n


def word_count_at_most(text: str, n: int) -> bool:
    return len(words(text)) <= n


def sentence_count_at_least(text: str, n: int) -> bool:
    return sentence_count(text) >= n


def paragraphs_exactly(text: str, n: int) -> bool:
    return len(paragraphs(text)) == n


def include_keywords(text: str, keywords: list[str]) -> bool:
    return all(_has_word(text, k) for k in keywords)


def keyword_frequency(text: str, keyword: str, n: int) -> bool:
    return _word_occurrences(text, keyword) >= n


def forbidden_words(text: str, forbidden: list[str]) -> bool:
    return not any(_has_word(text, w) for w in forbidden)


def letter_frequency(text: str, letter: str, relation: str, n: int) -> bool:
    count = text.lower().count(letter.lower())
    return count >= n if relation == "at least" else count < n


def json_format(text: str) -> bool:
    try:
        value = json.loads(_strip_code_fence(text))
    except ValueError:
        return False
    return isinstance(value, dict | list)


def bullet_points_exactly(text: str, n: int) -> bool:
    return len(BULLET.findall(text)) == n


def sections_exactly(text: str, n: int, marker: str) -> bool:
    found = re.findall(rf"^[ \t]*{re.escape(marker)} (\d+)\b", text, re.MULTILINE)
    return [int(number) for number in found] == list(range(1, n + 1))


def all_lowercase(text: str) -> bool:
    return any(c.isalpha() for c in text) and text == text.lower()


def all_uppercase(text: str) -> bool:
    return any(c.isalpha() for c in text) and text == text.upper()


def capital_words_at_least(text: str, n: int) -> bool:
    return len(CAPITAL_WORD.findall(text)) >= n


def starts_with(text: str, phrase: str) -> bool:
    return text.strip().lower().startswith(phrase.lower())


def ends_with(text: str, phrase: str) -> bool:
    return text.strip().lower().endswith(phrase.lower())


def postscript(text: str, marker: str) -> bool:
    # a line that starts with the marker, after some text of the reply's own: the stripped
    # text starts with that text, so any line break in it has some before. (Spelled out as
    # r"\S[\s\S]*\n..." the search backtracked quadratically: 9 s on a long reply.)
    pattern = rf"\n[ \t]*{re.escape(marker)}[ \t]+\S"
    return re.search(pattern, text.strip(), re.IGNORECASE) is not None


def title(text: str) -> bool:
    return TITLE.search(text) is not None


def placeholders_at_least(text: str, n: int) -> bool:
    return len(PLACEHOLDER.findall(text)) >= n


def highlighted_at_least(text: str, n: int) -> bool:
    return len(HIGHLIGHT.findall(text)) >= n


def no_commas(text: str) -> bool:
    return "," not in text


def quoted(text: str) -> bool:
    stripped = text.strip()
    return len(stripped) >= 2 and stripped[0] == '"' and stripped[-1] == '"'


def two_responses(text: str) -> bool:
    parts = text.split(RESPONSE_SEPARATOR)
    return (
        len(parts) == 2
        and all(part.strip() for part in parts)
        and parts[0].strip() != parts[1].strip()
    )


# ------------------------------------------------------------------------------ the table
@dataclass(frozen=True)
class ConstraintKind:
    """One kind of constraint.

    Attributes:
        name: its id (``"word_count_at_least"``).
        check: ``check(text, **args) -> bool``.
        template: the instruction, formatted with the arguments (lists are written out).
        claims: what part of a reply it governs; two constraints that claim the same part are
            never drawn together (a reply cannot both start with a title and a given phrase).
    """

    name: str
    check: Callable[..., bool]
    template: str
    claims: frozenset[str] = frozenset()


def _kind(name: str, template: str, *claims: str) -> ConstraintKind:
    return ConstraintKind(name, globals()[name], template, frozenset(claims))


# "layout": how the reply is cut up; "start"/"end": its first and last characters; "case":
# its letters' case; "commas", "words", "letters", "sentences": what those constraints count
_WHOLE_REPLY = ("layout", "start", "end", "case", "commas", "sentences")
_KINDS = [
    _kind("word_count_at_least", "Answer with at least {n} words.", "words"),
    _kind("word_count_at_most", "Answer with at most {n} words.", "words"),
    _kind("sentence_count_at_least", "Write at least {n} sentences.", "sentences"),
    _kind(
        "paragraphs_exactly",
        "Write exactly {n} paragraphs, separated by blank lines.",
        "layout",
    ),
    _kind("include_keywords", "Include the keywords {keywords}."),
    _kind("keyword_frequency", 'Use the word "{keyword}" at least {n} times.'),
    _kind("forbidden_words", "Do not use the words {forbidden}."),
    _kind(
        "letter_frequency",
        'Use the letter "{letter}" {relation} {n} times (either case).',
        "letters",
    ),
    _kind("json_format", "Format your entire reply as JSON.", *_WHOLE_REPLY),
    _kind(
        "bullet_points_exactly",
        "Include exactly {n} bullet points, each a line starting with '- '.",
        "layout",
    ),
    _kind(
        "sections_exactly",
        "Divide your reply into {n} sections, each starting on its own line with "
        '"{marker} X" where X is 1, 2, ...',
        "layout",
        "case",
        "start",  # the first section's line starts the reply
    ),
    _kind("all_lowercase", "Write your entire reply in lowercase letters.", "case"),
    _kind("all_uppercase", "Write your entire reply in capital letters.", "case"),
    _kind(
        "capital_words_at_least",
        "Write at least {n} words in all capital letters.",
        "case",
    ),
    _kind("starts_with", 'Start your reply with the exact phrase "{phrase}".', "start"),
    _kind(
        "ends_with",
        'End your reply with the exact phrase "{phrase}"; nothing may follow it.',
        "end",
    ),
    _kind(
        "postscript",
        'At the end of your reply, add a postscript on its own line starting with "{marker}".',
        "end",
    ),
    _kind(
        "title", "Give your reply a title in double angular brackets, like <<my title>>.", "start"
    ),
    _kind(
        "placeholders_at_least",
        "Include at least {n} placeholders in square brackets, like [address].",
    ),
    _kind(
        "highlighted_at_least",
        "Highlight at least {n} parts of your reply with markdown, like *highlighted part*.",
    ),
    _kind("no_commas", "Do not use any commas.", "commas"),
    _kind("quoted", "Wrap your entire reply in double quotation marks.", "start", "end"),
    _kind(
        "two_responses",
        f"Give two different replies, separated by a line of six asterisks: {RESPONSE_SEPARATOR}",
        "layout",
    ),
]
#: Every kind, by name.
CONSTRAINT_KINDS: dict[str, ConstraintKind] = {kind.name: kind for kind in _KINDS}


class UnknownConstraintError(ValueError):
    """A constraint whose kind does not exist, or whose arguments it does not take."""


def kind_of(name: str) -> ConstraintKind:
    """The kind called ``name``; an unknown one raises with the closest names.

    Example:
        >>> try:
        ...     kind_of("no_comma")
        ... except UnknownConstraintError as error:
        ...     print(error)
        unknown constraint kind 'no_comma'; did you mean: no_commas? (all kinds: CONSTRAINT_KINDS)
    """
    kind = CONSTRAINT_KINDS.get(name)
    if kind is None:
        close = get_close_matches(str(name), CONSTRAINT_KINDS, n=3, cutoff=0.7)
        hint = f"did you mean: {', '.join(close)}?" if close else "known kinds: "
        if not close:
            hint += ", ".join(sorted(CONSTRAINT_KINDS))
        raise UnknownConstraintError(
            f"unknown constraint kind {name!r}; {hint} (all kinds: CONSTRAINT_KINDS)"
        )
    return kind


def _written(value: Any) -> str:
    if isinstance(value, list | tuple):
        quoted_items = [f'"{item}"' for item in value]
        if len(quoted_items) == 1:
            return quoted_items[0]
        return ", ".join(quoted_items[:-1]) + " and " + quoted_items[-1]
    return str(value)


def validate(constraint: Mapping[str, Any]) -> None:
    """Raises :class:`UnknownConstraintError` unless ``constraint`` names a kind and exactly
    the arguments its checker takes."""
    if not isinstance(constraint, Mapping) or "kind" not in constraint:
        raise UnknownConstraintError(
            f"a constraint is a mapping {{'kind': ..., 'args': {{...}}}}, got {constraint!r}"
        )
    kind = kind_of(constraint["kind"])
    args = dict(constraint.get("args") or {})
    expected = list(kind.check.__code__.co_varnames[1 : kind.check.__code__.co_argcount])
    if sorted(args) != sorted(expected):
        raise UnknownConstraintError(
            f"constraint {kind.name!r} takes the arguments {expected}, got {sorted(args)}"
        )


def describe(constraint: Mapping[str, Any]) -> str:
    """The constraint as an instruction to the writer."""
    kind = kind_of(constraint["kind"])
    args = {name: _written(value) for name, value in (constraint.get("args") or {}).items()}
    return kind.template.format(**args)


def check(constraint: Mapping[str, Any], text: str) -> bool:
    """Whether ``text`` keeps ``constraint``."""
    return bool(kind_of(constraint["kind"]).check(text, **(constraint.get("args") or {})))


def compatible(kinds: list[str]) -> bool:
    """Whether no two of ``kinds`` claim the same part of a reply.

    Example:
        >>> compatible(["title", "no_commas"]), compatible(["title", "starts_with"])
        (True, False)
    """
    seen: set[str] = set()
    for name in kinds:
        claims = kind_of(name).claims
        if claims & seen:
            return False
        seen |= claims
    return True


__all__ = [
    "CONSTRAINT_KINDS",
    "ConstraintKind",
    "UnknownConstraintError",
    "check",
    "compatible",
    "describe",
    "kind_of",
    "paragraphs",
    "sentence_count",
    "validate",
    "words",
]
