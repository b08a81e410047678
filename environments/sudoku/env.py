"""``SudokuEnv``: fill a Sudoku grid that has exactly one solution.

An action is a placement ``"r c v"``: digit ``v`` in row ``r``, column ``c`` (1-based); one reply
may carry several, separated by ``||``. The rule for a wrong digit: since the solution is
unique, a placement is right exactly when it matches the solution. A right one fills the cell
(``+placement_reward``); a wrong one leaves the grid unchanged, costs ``mistake_penalty`` and
counts as a mistake, and the episode fails at ``max_mistakes`` mistakes (the cap is what makes
guessing every digit a losing strategy). Writing over a clue or a filled cell changes nothing
and costs nothing. Filling the last cell earns ``solved_reward``. ``action_is_effective`` is
whether a placement filled a cell.

Example:
    >>> env = SudokuEnv(size=4, blanks=6)
    >>> obs, info = env.reset(seed=0)
    >>> info["blanks"]
    6
    >>> obs, reward, terminated, truncated, info = env.step("<answer>9 9 9</answer>")
    >>> info["metrics"]["action_is_valid"], reward  # no row 9 in a 4x4 grid
    (False, -0.1)
"""

from __future__ import annotations

import random
import re
from typing import Any

from environments.sudoku.board import render_grid
from environments.sudoku.generator import SudokuPuzzle, generate_puzzle
from environments.sudoku.solver import Shape, count_solutions, solve
from rollenv.action_tools import ActionTool, templated_tool
from rollenv.actions import AnswerFormat
from rollenv.text_env import TextEnv

#: the box shape of each supported grid size
BOX_SHAPES = {4: Shape(2, 2), 6: Shape(2, 3), 9: Shape(3, 3)}
_DIGITS = re.compile(r"[0-9.]+")


class SudokuEnv(TextEnv):
    """Sudoku on a generated grid with a unique solution.

    Args:
        size: 4 (2x2 boxes), 6 (2x3 boxes) or 9 (3x3 boxes).
        blanks: empty cells to start with, the difficulty knob (the generator stops short of it
            only where no further clue can go without losing uniqueness).
        max_mistakes: wrong placements that end the episode as failed.
        max_actions_per_turn: placements one reply may carry; default: every cell of the grid.
        placement_reward: reward of each right placement.
        mistake_penalty: subtracted for each wrong placement.
        solved_reward: reward for filling the last cell.
        format_penalty: reward of a reply with no valid placement.
        answer_format: overrides how actions are read from a reply (an ``AnswerFormat`` or its
            keyword arguments as a dict).
        render_mode: ``"ansi"`` or ``None``.

    ``reset(options={"puzzle": "1.34...."})`` plays a given grid, written row by row with ``.`` or
    ``0`` for an empty cell; it must have exactly one solution.
    """

    oracle = "environments.sudoku.oracle:SudokuOracle"

    def __init__(
        self,
        size: int = 9,
        blanks: int = 35,
        *,
        max_mistakes: int = 3,
        max_actions_per_turn: int | None = None,
        placement_reward: float = 0.1,
        mistake_penalty: float = 0.1,
        solved_reward: float = 1.0,
        format_penalty: float = -0.1,
        answer_format: AnswerFormat | dict[str, Any] | None = None,
        render_mode: str | None = None,
    ) -> None:
        if size not in BOX_SHAPES:
            raise ValueError(f"size must be one of {sorted(BOX_SHAPES)}, got {size!r}")
        cells = size * size
        if not 1 <= blanks < cells:
            raise ValueError(f"blanks must be in 1..{cells - 1} for a {size}x{size} grid")
        if max_mistakes < 1:
            raise ValueError(f"max_mistakes must be >= 1, got {max_mistakes}")
        super().__init__(
            answer_format=answer_format or {"max_actions": max_actions_per_turn or cells},
            format_penalty=format_penalty,
            max_actions=None,
            render_mode=render_mode,
        )
        self.size = size
        self.shape = BOX_SHAPES[size]
        self.blanks = blanks
        self.max_mistakes = max_mistakes
        self.placement_reward = placement_reward
        self.mistake_penalty = mistake_penalty
        self.solved_reward = solved_reward
        self._words = tuple(
            f"{r} {c} {v}"
            for r in range(1, size + 1)
            for c in range(1, size + 1)
            for v in range(1, size + 1)
        )
        self._placement_by_word = {
            word: ((int(r) - 1) * size + int(c) - 1, int(v))
            for word in self._words
            for r, c, v in [word.split()]
        }
        self.puzzle: SudokuPuzzle | None = None
        self.grid: list[int] = []
        self.mistakes = 0

    # ------------------------------------------------------------------ TextEnv
    @property
    def instruction(self) -> str:
        height, width = self.shape.box_height, self.shape.box_width
        example = self.answer_format.wrap(["1 3 4", "2 1 7"] if self.size == 9 else ["1 3 4"])
        return (
            f"You are solving a {self.size}x{self.size} Sudoku. Fill every empty cell (.) with a "
            f"digit from 1 to {self.size} so that each row, each column and each {height}x"
            f"{width} box holds every digit once; the puzzle has exactly one solution. A "
            "placement is 'row column digit', rows and columns numbered from 1 (top left is "
            "1 1). A digit that is not the solution's is a mistake and is not written; after "
            f"{self.max_mistakes} mistakes you lose. {self.answer_format.describe()} Example "
            f"(digit 4 in row 1, column 3{', and 7 in row 2, column 1' if self.size == 9 else ''}"
            f"): {example}"
        )

    @property
    def action_words(self) -> tuple[str, ...]:
        return self._words

    def action_tools(self) -> tuple[ActionTool, ...]:
        size = {"type": "integer", "minimum": 1, "maximum": self.shape.side}
        return (
            templated_tool(
                "place",
                "Writes a digit into an empty cell (rows and columns count from 1).",
                "{row} {col} {digit}",
                {"row": size, "col": size, "digit": size},
            ),
        )

    def _new_episode(self, rng: random.Random, options: dict[str, Any] | None) -> None:
        if options and "puzzle" in options:
            self.puzzle = self._given_puzzle(options["puzzle"])
        else:
            self.puzzle = generate_puzzle(rng, self.shape, self.blanks)
        self.grid = list(self.puzzle.clues)
        self.mistakes = 0

    def _reset_info(self) -> dict[str, Any]:
        return {"blanks": len(self.puzzle.blanks)}

    def _observation(self) -> str:
        return (
            f"{render_grid(self.shape, self.grid)}\n"
            f"Mistakes: {self.mistakes} of {self.max_mistakes}"
        )

    def _parse_action(self, text: str) -> tuple[int, int] | None:
        return self._placement_by_word.get(text)

    def _apply(self, action: tuple[int, int]) -> tuple[float, bool]:
        cell, digit = action
        if self.grid[cell]:
            return 0.0, False
        if digit != self.puzzle.solution[cell]:
            self.mistakes += 1
            return -self.mistake_penalty, False
        self.grid[cell] = digit
        return self.placement_reward + (self.solved_reward if self._solved() else 0.0), True

    def _solved(self) -> bool:
        return 0 not in self.grid

    def _failed(self) -> bool:
        return self.mistakes >= self.max_mistakes

    def task_ignoring_replies(self) -> dict[str, str]:
        """One digit in every empty cell, and every digit tried in the first empty cell."""
        side = self.size
        empty = [cell for cell, digit in enumerate(self.grid) if not digit]
        if not empty:
            return {}
        count = self.answer_format.max_actions
        row, col = divmod(empty[0], side)
        return {
            "1 in every empty cell": self.answer_format.wrap(
                [f"{c // side + 1} {c % side + 1} 1" for c in empty[:count]]
            ),
            "every digit in one cell": self.answer_format.wrap(
                [f"{row + 1} {col + 1} {v}" for v in range(1, side + 1)][:count]
            ),
        }

    # ------------------------------------------------------------------ public state
    @property
    def solution(self) -> tuple[int, ...]:
        """The unique solution, row by row (what the oracle reads)."""
        if self.puzzle is None:
            raise RuntimeError("call reset() before reading the state")
        return self.puzzle.solution

    def _given_puzzle(self, text: Any) -> SudokuPuzzle:
        cells = self.size * self.size
        digits = "".join(_DIGITS.findall(str(text)))
        grid = [0 if ch in "0." else int(ch) for ch in digits]
        if len(grid) != cells or any(d > self.size for d in grid):
            raise ValueError(
                f"a {self.size}x{self.size} puzzle is {cells} cells, each a digit 1-{self.size} "
                f"or . or 0 for an empty one; got {len(grid)} cells"
            )
        if count_solutions(self.shape, grid, limit=2) != 1:
            raise ValueError("the given puzzle must have exactly one solution")
        return SudokuPuzzle(self.shape, tuple(grid), tuple(solve(self.shape, grid)))
