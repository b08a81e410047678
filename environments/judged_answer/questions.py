"""Free-form questions with a short text reference answer, from reasoning-gym's generators.

Each source is a reasoning-gym task whose answer is a word or a short phrase (a family
relationship, a colour, a weekday, a word spelled backward). The dataset's own
``score_answer`` is the rule verifier; it rejects right answers in other words ("The answer is
mother-in-law" scores 0), which is what a judge is for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

JUDGED_EXTRA = 'pip install "rollenv[math]"'
#: reasoning-gym tasks with short text answers
SOURCES = ("family_relationships", "color_cube_rotation", "calendar_arithmetic", "spell_backward")
#: reasoning-gym 0.1.x's calendar task asks several kinds of question; these have text answers
_WEEKDAY_TASKS = {"tasks": ["weekday_of_date", "weekday_offset"]}


@dataclass(frozen=True)
class Question:
    """One question, its reference answer, its source task and the generator's record (for the
    dataset's ``score_answer``)."""

    question: str
    reference: str
    source: str
    entry: dict[str, Any]


def _dataset(source: str, seed: int) -> Any:
    try:
        import reasoning_gym
    except ImportError:
        raise ImportError(f"judged questions need reasoning-gym: {JUDGED_EXTRA}") from None
    options = _WEEKDAY_TASKS if source == "calendar_arithmetic" else {}
    return reasoning_gym.create_dataset(source, seed=seed, size=1, **options)


@cache
def _verifier(source: str) -> Any:
    """A dataset of ``source`` kept for its ``score_answer`` (building one per answer cost a
    generator's set-up at every step)."""
    return _dataset(source, 0)


def make_question(source: str, seed: int) -> Question:
    """The question of reasoning-gym's ``source`` for ``seed``.

    Example:
        >>> make_question("spell_backward", seed=1).reference  # doctest: +SKIP
        'ainomma'
    """
    if source not in SOURCES:
        raise ValueError(f"unknown question source {source!r}; sources: {', '.join(SOURCES)}")
    item = _dataset(source, seed)[0]
    return Question(str(item["question"]), str(item["answer"]), source, dict(item))


def rule_accepts(question: Question, answer: str) -> bool:
    """Whether the rule verifier takes ``answer``: the reference up to case, spaces, quotes and
    a final full stop, or a full score from the dataset's ``score_answer``.

    Example:
        >>> q = Question("What is Ann to Bo?", "mother-in-law", "family_relationships", {})
        >>> rule_accepts(q, " Mother-in-law. "), rule_accepts(q, "She is his mother-in-law")
        (True, False)
    """
    if normalized(answer) == normalized(question.reference):
        return True
    if not question.entry:
        return False
    try:
        return float(_verifier(question.source).score_answer(answer, question.entry)) >= 1.0
    except Exception:  # a verifier that fails on an odd answer rejects it
        return False


def normalized(text: str) -> str:
    """Lower case, single spaces, no surrounding quotes or final full stop."""
    text = re.sub(r"\s+", " ", text).strip().strip("\"'`").strip()
    return text.removesuffix(".").strip().casefold()


__all__ = ["SOURCES", "Question", "make_question", "normalized", "rule_accepts"]
