"""``CountdownEnv``: reach the target by combining the given numbers with + - * /.

The rules are TinyZero's and RAGEN's: the answer is one arithmetic expression that uses every
given number **exactly once**, with ``+ - * /`` and parentheses; it is read with ``ast`` (never
``eval``) and computed exactly, so fractions along the way are fine. An answer that is not such an
expression (words, ``**``, a unary minus, no answer tag) is not an action: it changes nothing and
costs the format penalty. A well-formed expression is an attempt: it earns 1 if it uses exactly
the given numbers and equals the target, 0 otherwise. The episode ends with the first correct
attempt or after ``max_attempts`` wrong ones (1 by default: a single turn); with more, the
observation tells what was wrong with the last attempt.

Example:
    >>> env = CountdownEnv()
    >>> obs, info = env.reset(options={"numbers": [3, 5, 7], "target": 22})
    >>> print(obs)
    Numbers: 3 5 7
    Target: 22
    >>> obs, reward, terminated, truncated, info = env.step("<answer>3 * 5 + 7</answer>")
    >>> reward, terminated, info["metrics"]["success"]
    (1.0, True, True)
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any, ClassVar

from environments.countdown.expression import Expression, format_value, parse_expression
from environments.countdown.generator import generate_puzzle
from rollenv.actions import AnswerFormat
from rollenv.text_env import TextEnv

SAMPLE_REPLIES = ("1 + 2", "(3 * 4) - 5", "10 / 2 + 7")


class CountdownEnv(TextEnv):
    """Countdown on generated puzzles, each with at least one solution.

    Args:
        num_numbers: how many numbers a puzzle has: a count, or ``(fewest, most)`` drawn
            uniformly per episode. The main difficulty knob.
        max_number: numbers are drawn from ``1..max_number``.
        max_target: targets lie in ``1..max_target``.
        max_attempts: wrong expressions allowed before the episode fails.
        format_penalty: reward of a reply that holds no expression.
        answer_format: overrides how the answer is read from a reply (an ``AnswerFormat`` or its
            keyword arguments as a dict).
        render_mode: ``"ansi"`` or ``None``.

    ``reset(options={"numbers": [...], "target": n})`` plays a given puzzle (it may have no
    solution).
    """

    oracle = "environments.countdown.oracle:CountdownOracle"
    #: any well-formed expression is an action; ``action_words`` are sample replies
    free_form: ClassVar[bool] = True
    tool_name = "answer"
    tool_argument = "expression"
    tool_description = "Answers with an arithmetic expression that uses the given numbers."

    def __init__(
        self,
        num_numbers: int | tuple[int, int] = (3, 4),
        max_number: int = 99,
        max_target: int = 100,
        *,
        max_attempts: int = 1,
        format_penalty: float = -0.1,
        answer_format: AnswerFormat | dict[str, Any] | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            answer_format=answer_format or AnswerFormat(separator=None),
            format_penalty=format_penalty,
            max_actions=max_attempts,
            render_mode=render_mode,
        )
        low, high = (num_numbers, num_numbers) if isinstance(num_numbers, int) else num_numbers
        if not 2 <= low <= high <= 8:
            raise ValueError(
                f"num_numbers must be a count or a (fewest, most) pair within 2..8, "
                f"got {num_numbers!r}"
            )
        if max_number < 1 or max_target < 1:
            raise ValueError(
                f"max_number and max_target must be >= 1, got {max_number} and {max_target}"
            )
        self.count_range = (low, high)
        self.max_number = max_number
        self.max_target = max_target
        self.max_attempts = max_attempts
        self.numbers: tuple[int, ...] = ()
        self.target = 0
        self.solution: str | None = None
        self.last_feedback = ""
        self.solved = False

    # ------------------------------------------------------------------ TextEnv
    @property
    def instruction(self) -> str:
        attempts = (
            "You have one attempt."
            if self.max_attempts == 1
            else f"You have {self.max_attempts} attempts; after a wrong one you are told why."
        )
        return (
            "You are playing Countdown. Write an arithmetic expression that equals the target, "
            "using every given number exactly once and no other number. Allowed: + - * / and "
            "parentheses; division is exact (fractions along the way are fine). "
            f"{attempts} Reply with the expression inside <answer></answer>, optionally after "
            "brief reasoning inside <think></think>. Example: for numbers 3 5 7 and target 22, "
            f"{self.answer_format.wrap('3 * 5 + 7')}"
        )

    @property
    def action_words(self) -> tuple[str, ...]:
        return SAMPLE_REPLIES

    def _new_episode(self, rng: random.Random, options: dict[str, Any] | None) -> None:
        if options and "numbers" in options:
            self.numbers, self.target = _given_puzzle(options)
            self.solution = None
        else:
            puzzle = generate_puzzle(
                rng, rng.randint(*self.count_range), self.max_number, self.max_target
            )
            self.numbers, self.target, self.solution = (
                puzzle.numbers,
                puzzle.target,
                puzzle.solution,
            )
        self.last_feedback = ""
        self.solved = False

    def _observation(self) -> str:
        text = f"Numbers: {' '.join(map(str, self.numbers))}\nTarget: {self.target}"
        if self.last_feedback:
            left = self.max_attempts - self.actions_taken
            text += f"\n{self.last_feedback} Attempts left: {left}."
        return text

    def _parse_action(self, text: str) -> Expression | None:
        return parse_expression(text)

    def _apply(self, action: Expression) -> tuple[float, bool]:
        problem = self.mistake(action)
        self.solved = problem is None
        self.last_feedback = "" if self.solved else f"Wrong: {problem}."
        return (1.0 if self.solved else 0.0), True

    def _solved(self) -> bool:
        return self.solved

    def _failed(self) -> bool:
        return not self.solved and self.actions_taken >= self.max_attempts

    def _reset_info(self) -> dict[str, Any]:
        return {"numbers": list(self.numbers), "target": self.target}

    def task_ignoring_replies(self) -> dict[str, str]:
        """The target restated, and the numbers summed, multiplied or listed."""
        wrap = self.answer_format.wrap
        return {
            "target restated": wrap(str(self.target)),
            "numbers summed": wrap(" + ".join(map(str, self.numbers))),
            "numbers multiplied": wrap(" * ".join(map(str, self.numbers))),
            "numbers listed": wrap(", ".join(map(str, self.numbers))),
            "target as an equation": wrap(f"{self.target} = {self.target}"),
        }

    # ------------------------------------------------------------------ the rules
    def mistake(self, expression: Expression) -> str | None:
        """What is wrong with an attempt, in words, or ``None`` if it solves the puzzle.

        Example:
            >>> env = CountdownEnv()
            >>> _ = env.reset(options={"numbers": [3, 5, 7], "target": 22})
            >>> env.mistake(parse_expression("3 * 7 + 1"))
            'it uses 1 beyond the given numbers; it leaves out 5'
        """
        used, given = Counter(expression.numbers), Counter(self.numbers)
        problems = []
        extra = used - given
        if extra:
            listed = ", ".join(map(str, sorted(extra.elements())))
            problems.append(f"it uses {listed} beyond the given numbers")
        missing = given - used
        if missing:
            problems.append(f"it leaves out {', '.join(map(str, sorted(missing.elements())))}")
        if problems:
            return "; ".join(problems)
        if expression.value != self.target:
            return f"it equals {format_value(expression.value)}, not {self.target}"
        return None


def _given_puzzle(options: dict[str, Any]) -> tuple[tuple[int, ...], int]:
    numbers, target = options.get("numbers"), options.get("target")
    if (
        not isinstance(numbers, list | tuple)
        or not numbers
        or not all(type(n) is int and n >= 0 for n in numbers)
        or type(target) is not int
    ):
        raise ValueError(
            "reset options need 'numbers' (a list of non-negative ints) and 'target' (an int), "
            f"got numbers={numbers!r}, target={target!r}"
        )
    return tuple(numbers), target


__all__ = ["SAMPLE_REPLIES", "CountdownEnv"]
