"""Checking a final answer: it must be a result, and equal the reference (HF's ``math-verify``).

math-verify evaluates what it parses, so on its own it counts ``14 + 37 * -17 / 1 + 46`` (the
question's expression copied back) or ``\\frac{12}{16}`` (the fraction the task asked to
simplify) as equal to the result. ``is_correct`` first asks that the answer be a *result in the
task's answer form*, and only then leaves equivalence to math-verify (``0.5`` = ``\\frac{1}{2}``):

* where the reference is a number, the answer must be a number too: an integer or decimal
  literal (thousands commas, a sign, a currency sign, ``%`` or a unit word allowed around it), or
  a fraction of two integers in lowest terms (``3/4``, ``\\frac{3}{4}``); never an expression;
* a fraction, an expression, a tuple or a word may not be a piece of the question copied back,
  unless the reference itself is one (``Calculate 3 / 4.`` is not answered by ``3/4``);
* an answer over ``MAX_ANSWER_CHARS`` characters is no final answer.
"""

from __future__ import annotations

import logging
import math
import re
import threading

from environments.math.data import MATH_EXTRA, last_boxed
from rollenv.actions import tag_contents

MAX_ANSWER_CHARS = 1000

_INTEGER = r"\d{1,3}(?:,\d{3})+|\d+"
_NUMBER = re.compile(rf"[-+\u2212]?(?:(?:{_INTEGER})(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?")
_FRACTION = re.compile(
    r"(?P<sign>[-+\u2212]?)\s*(?:\\[dt]?frac\{\s*(?P<top>[-+]?\d+)\s*\}\{\s*(?P<bottom>\d+)\s*\}"
    r"|(?P<num>[-+]?\d+)\s*/\s*(?P<den>\d+))"
)
# what may stand around a result: $...$, \(...\), \boxed{}, "x =", a currency sign, %, units
_WRAPPERS = [
    re.compile(r"^\$+(.*?)\$+$", re.DOTALL),
    re.compile(r"^\\\((.*)\\\)$", re.DOTALL),
    re.compile(r"^\\boxed\{(.*)\}$", re.DOTALL),
    re.compile(r"^[A-Za-z]\w*\s*=\s*(.*)$", re.DOTALL),
    re.compile(r"^(?:\\\$|\$|\u00a3|\u20ac|\\pounds|\\euro)\s*(.*)$", re.DOTALL),
    # a unit is a word of two letters or more, or one set apart: "5cm", "5 m", never "2x"
    re.compile(
        r"^(.*?)(?:\s*\\?%|\s*\\text\{\s*[A-Za-z ]*\}|\s*\\(?:mbox|mathrm)\{[A-Za-z ]*\}"
        r"|\s*[A-Za-z]{2,}[A-Za-z .]*|\s+[A-Za-z][A-Za-z .]*)$",
        re.DOTALL,
    ),
]


def extract_answer(reply: str) -> str | None:
    """The final answer of a reply: the last ``<answer>`` tag, else the last ``\\boxed{}``.

    Example:
        >>> extract_answer("so it is \\\\boxed{\\\\frac{1}{2}}")
        '\\\\frac{1}{2}'
    """
    if not isinstance(reply, str):
        return None
    tags = tag_contents(reply, "answer")
    answer = tags[-1] if tags else last_boxed(reply)
    if answer is not None:
        inner = last_boxed(answer)
        answer = (inner if inner is not None else answer).strip()
    return answer or None


def _core(text: str) -> str:
    """The answer without what may stand around a result (``$``, ``\\boxed``, units...)."""
    core = text.strip().replace("\\,", "").replace("\\!", "").replace("{,}", ",")
    changed = True
    while changed:
        changed = False
        for wrapper in _WRAPPERS:
            match = wrapper.match(core)
            if match and match.group(1).strip() and match.group(1).strip() != core:
                core, changed = match.group(1).strip(), True
    return core


def _is_number(text: str) -> bool:
    return _NUMBER.fullmatch(text) is not None


def _is_numeric(text: str) -> bool:
    """A number or a fraction of two integers: the references whose answers must be results."""
    return _is_number(text) or _FRACTION.fullmatch(text) is not None


def _is_reduced_fraction(text: str) -> bool:
    match = _FRACTION.fullmatch(text)
    if match is None:
        return False
    top = int(match.group("top") or match.group("num"))
    bottom = int(match.group("bottom") or match.group("den"))
    return bottom > 1 and math.gcd(top, bottom) == 1


def _squeezed(text: str) -> str:
    return re.sub(r"[\s$]", "", text).lower()


def is_result(answer: str, reference: str, question: str = "") -> bool:
    """Whether ``answer`` is a result in the task's answer form (not yet whether it is right).

    Args:
        answer: the reply's final answer.
        reference: the reference answer, whose form the answer must have.
        question: the question, which an answer may not copy back.

    Example:
        >>> is_result("0.5", "\\\\frac{1}{2}"), is_result("-\\\\frac{3}{4}", "-0.75")
        (True, True)
        >>> is_result("14 + 37 * -17", "-569"), is_result("12/16", "3/4")
        (False, False)
    """
    if not answer.strip() or len(answer) > MAX_ANSWER_CHARS:
        return False
    core, reference_core, question = _core(answer), _core(reference), _squeezed(question)
    copied = _squeezed(core) in question and _squeezed(reference_core) not in question
    if _is_numeric(reference_core):
        # "Calculate 3 / 4." is not answered by "3/4"; a single number is a result anyway
        return _is_number(core) or (_is_reduced_fraction(core) and not copied)
    return not copied


def is_correct(answer: str, reference: str, question: str = "") -> bool:
    """Whether ``answer`` is a result (``is_result``) equal to ``reference`` (``is_equivalent``).

    Example:
        >>> is_correct("\\\\frac{1}{2}", "0.5")  # doctest: +SKIP
        True
        >>> is_correct("Calculate 1 + 2.", "3", "Calculate 1 + 2.")
        False
    """
    if not is_result(answer, reference, question):
        return False
    if is_equivalent(answer, reference):
        return True
    # a currency sign or unit word around a number can keep math-verify from parsing it: compare
    # the bare numbers, where there was anything to strip
    core, reference_core = _core(answer), _core(reference)
    stripped = (core, reference_core) != (answer.strip(), reference.strip())
    return stripped and _is_numeric(reference_core) and is_equivalent(core, reference_core)


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


def warm_up() -> None:
    """Imports math-verify and sympy and runs one comparison, so that the first real answer is
    not charged for them (a reward worker calls this before its deadline starts counting)."""
    is_equivalent("0.5", "\\frac{1}{2}")


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
