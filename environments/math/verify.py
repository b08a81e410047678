"""Checking a final answer against the reference with HF's ``math-verify`` (equivalence)."""

from __future__ import annotations

import logging
import re
import threading

from environments.math.data import MATH_EXTRA, last_boxed

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.IGNORECASE | re.DOTALL)


def extract_answer(reply: str) -> str | None:
    """The final answer of a reply: the last ``<answer>`` tag, else the last ``\\boxed{}``.

    Example:
        >>> extract_answer("so it is \\\\boxed{\\\\frac{1}{2}}")
        '\\\\frac{1}{2}'
    """
    if not isinstance(reply, str):
        return None
    tags = _ANSWER.findall(reply)
    answer = tags[-1] if tags else last_boxed(reply)
    if answer is not None:
        inner = last_boxed(answer)
        answer = (inner if inner is not None else answer).strip()
    return answer or None


def _timeout() -> int | None:
    # math-verify's timeouts use SIGALRM, which only the main thread may set; envs stepped in
    # worker threads go without (and its warning about that is silenced)
    if threading.current_thread() is threading.main_thread():
        return 5
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    return None


def _parse(text: str):
    from math_verify import parse

    for candidate in (f"${text}$", text):
        parsed = parse(candidate, parsing_timeout=_timeout())
        if parsed:
            return parsed
    return []


def is_equivalent(answer: str, reference: str) -> bool:
    """Whether ``answer`` equals ``reference`` mathematically (``0.5`` = ``\\frac{1}{2}``).

    Non-mathematical answers (words, lists that do not parse) fall back to comparing the
    whitespace-normalised strings.

    Raises:
        ImportError: math-verify is missing (the message names the extra to install).

    Example:
        >>> is_equivalent("0.5", "\\\\frac{1}{2}")  # doctest: +SKIP
        True
    """
    try:
        from math_verify import verify
    except ImportError:
        raise ImportError(f"math answers are checked with math-verify: {MATH_EXTRA}") from None
    if " ".join(answer.split()) == " ".join(reference.split()):
        return True
    try:
        gold, target = _parse(reference), _parse(answer)
        return bool(gold and target and verify(gold, target, timeout_seconds=_timeout()))
    except Exception:
        return False
