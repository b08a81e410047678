"""Math problems: procedural ones from ``reasoning-gym``, or GSM8K/MATH-style JSONL files."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MATH_EXTRA = 'pip install "rollenv[math]"'
DEFAULT_TASKS = ("basic_arithmetic", "gsm_symbolic", "chain_sum", "fraction_simplification", "gcd")


@dataclass(frozen=True)
class MathProblem:
    """One problem: its text, its reference answer and where it came from."""

    question: str
    answer: str
    source: str


def generate(task: str, seed: int, config: Mapping[str, Any] | None = None) -> MathProblem:
    """One problem of reasoning-gym's generator ``task``, fully determined by ``seed``.

    ``config`` sets fields of the task's reasoning-gym configuration (its difficulty: for
    ``chain_sum``, ``max_terms`` and ``max_digits``).

    Raises:
        ImportError: reasoning-gym is missing (the message names the extra to install).
        ValueError: reasoning-gym has no task of that name, or its configuration no such field
            (the message lists the fields it has).

    Example:
        >>> generate("basic_arithmetic", seed=1).question  # doctest: +SKIP
        'Calculate 5 - 3 - 6.'
    """
    try:
        import reasoning_gym
    except ImportError:
        raise ImportError(f"generated math problems need reasoning-gym: {MATH_EXTRA}") from None
    check_task_config(task, config or {})
    try:
        item = reasoning_gym.create_dataset(task, seed=seed, size=1, **(config or {}))[0]
    except (KeyError, ValueError) as error:
        raise ValueError(f"reasoning-gym has no task {task!r} ({error})") from None
    return MathProblem(str(item["question"]), str(item["answer"]), task)


def check_task_config(task: str, config: Mapping[str, Any]) -> None:
    """Raises ``ValueError`` naming the settings of reasoning-gym's ``task`` if ``config`` sets
    one it does not have (or ``ImportError`` naming the extra, without reasoning-gym)."""
    if not config:
        return
    try:
        from reasoning_gym.factory import DATASETS
    except ImportError:
        raise ImportError(f"generated math problems need reasoning-gym: {MATH_EXTRA}") from None
    if task not in DATASETS:
        raise ValueError(f"reasoning-gym has no task {task!r}")
    fields = {field.name for field in dataclasses.fields(DATASETS[task][1])} - {"seed", "size"}
    unknown = sorted(set(config) - fields)
    if unknown:
        raise ValueError(
            f"reasoning-gym's {task!r} has no setting {', '.join(unknown)}; its settings: "
            f"{', '.join(sorted(fields))}"
        )


def final_answer_of_solution(solution: str) -> str:
    """The reference answer of a GSM8K solution (after ``####``) or a MATH one (last boxed)."""
    if "####" in solution:
        return solution.rsplit("####", 1)[1].strip().replace(",", "")
    boxed = last_boxed(solution)
    return boxed if boxed is not None else solution.strip()


def last_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (braces balanced), or ``None``."""
    start = text.rfind("\\boxed")
    if start < 0:
        return None
    brace = text.find("{", start)
    if brace < 0:
        return None
    depth = 0
    for position in range(brace, len(text)):
        depth += {"{": 1, "}": -1}.get(text[position], 0)
        if depth == 0:
            return text[brace + 1 : position]
    return None


def load_jsonl(path: str | os.PathLike) -> tuple[MathProblem, ...]:
    """Reads ``question``/``problem`` with ``answer``/``solution`` records (GSM8K, MATH)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    problems = []
    with opener(path, "rt", encoding="utf-8") as handle:
        for index, line in enumerate(handle):
            if not line.strip():
                continue
            record = json.loads(line)
            question = record.get("question") or record.get("problem")
            answer = record.get("answer") or record.get("solution")
            if not question or answer is None:
                raise ValueError(f"record {index} of {path} lacks a question or an answer")
            answer = str(answer)
            if "####" in answer or "\\boxed" in answer:
                answer = final_answer_of_solution(answer)
            problems.append(MathProblem(str(question), re.sub(r"\s+", " ", answer), str(path)))
    return tuple(problems)
