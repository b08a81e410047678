"""``MinesweeperEnv``: reveal every cell that holds no mine, without setting one off.

Actions are ``"reveal r c"`` and ``"flag r c"`` (rows and columns numbered from 1). The first
move is never a mine: each episode starts with a safe cell already revealed, and neither it nor
its neighbours hold a mine, so the opening shows a region of numbers. ``flag`` marks a hidden
cell, or takes its flag away; a flagged cell cannot be revealed until unflagged. Revealing a
mine loses; revealing the last safe cell wins (reward ``win_reward``, 1). Every other move earns
nothing; a move on a revealed cell changes nothing (valid, not effective).

Example:
    >>> env = MinesweeperEnv(rows=5, cols=5, mines=3)
    >>> obs, info = env.reset(seed=0)
    >>> obs.splitlines()[0]
    'Mines: 3, flags: 0'
    >>> obs, reward, terminated, truncated, info = env.step("<answer>reveal 9 9</answer>")
    >>> info["metrics"]["action_is_valid"]  # no row 9 on a 5x5 field
    False
"""

from __future__ import annotations

import random
from typing import Any

from environments.minesweeper.board import FLAG, HIDDEN, MINE, Minefield
from environments.minesweeper.generator import Layout, check_settings, generate_layout
from rollenv.action_tools import ActionTool, templated_tool
from rollenv.actions import AnswerFormat
from rollenv.text_env import TextEnv

REVEAL, FLAG_ACTION = "reveal", "flag"


class MinesweeperEnv(TextEnv):
    """Minesweeper on a generated field.

    Args:
        rows: rows of the field.
        cols: columns of the field.
        mines: mines on it. Size and mines are the difficulty knobs.
        max_actions_per_turn: moves one reply may carry, separated by ``||``.
        win_reward: reward for revealing the last safe cell.
        format_penalty: reward of a reply with no valid move.
        answer_format: overrides how actions are read from a reply (an ``AnswerFormat`` or its
            keyword arguments as a dict).
        render_mode: ``"ansi"`` or ``None``.

    ``reset(options={"mines": [(row, col), ...], "start": (row, col)})`` plays a given layout
    (1-based cells; the start must hold no mine).
    """

    oracle = "environments.minesweeper.oracle:MinesweeperOracle"

    def __init__(
        self,
        rows: int = 5,
        cols: int = 5,
        mines: int = 3,
        *,
        max_actions_per_turn: int = 1,
        win_reward: float = 1.0,
        format_penalty: float = -0.1,
        answer_format: AnswerFormat | dict[str, Any] | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            answer_format=answer_format or {"max_actions": max_actions_per_turn},
            format_penalty=format_penalty,
            max_actions=None,
            render_mode=render_mode,
        )
        check_settings(rows, cols, mines)
        self.rows, self.cols, self.mine_count = rows, cols, mines
        self.win_reward = win_reward
        self._words = tuple(
            f"{verb} {r} {c}"
            for verb in (REVEAL, FLAG_ACTION)
            for r in range(1, rows + 1)
            for c in range(1, cols + 1)
        )
        self._move_by_word = {
            word: (verb, (int(r) - 1) * cols + int(c) - 1)
            for word in self._words
            for verb, r, c in [word.split()]
        }
        self.layout: Layout | None = None
        self._field: Minefield | None = None

    # ------------------------------------------------------------------ TextEnv
    @property
    def instruction(self) -> str:
        return (
            f"You are playing Minesweeper on a {self.rows}x{self.cols} field with "
            f"{self.mine_count} mines. Reveal every cell without a mine; revealing a mine loses. "
            f"Symbols: {HIDDEN} hidden, {FLAG} flagged, a digit: a revealed cell and how many of "
            f"its 8 neighbours hold a mine, {MINE} a mine (shown when you hit one). Rows and "
            "columns are numbered from 1, row first. Actions: 'reveal ROW COL' opens a cell (a 0 "
            "opens its neighbours too); 'flag ROW COL' marks a cell you think is a mine, or "
            "removes the mark (a flagged cell cannot be revealed). "
            f"{self.answer_format.describe()} Example: {self.answer_format.wrap('reveal 2 3')}"
        )

    @property
    def action_words(self) -> tuple[str, ...]:
        return self._words

    def action_tools(self) -> tuple[ActionTool, ...]:
        cell = {
            "row": {"type": "integer", "minimum": 1, "maximum": self.rows},
            "col": {"type": "integer", "minimum": 1, "maximum": self.cols},
        }
        return (
            templated_tool(REVEAL, "Reveals a cell (rows and columns count from 1).",
                           f"{REVEAL} {{row}} {{col}}", cell),
            templated_tool(FLAG_ACTION, "Flags a cell as a mine, or unflags it.",
                           f"{FLAG_ACTION} {{row}} {{col}}", cell),
        )  # fmt: skip

    def _new_episode(self, rng: random.Random, options: dict[str, Any] | None) -> None:
        if options and "mines" in options:
            self.layout = self._given_layout(options)
        else:
            self.layout = generate_layout(rng, self.rows, self.cols, self.mine_count)
        self._field = self.layout.field()

    def _observation(self) -> str:
        return f"Mines: {self.mine_count}, flags: {len(self.field.flagged)}\n{self.field.render()}"

    def _parse_action(self, text: str) -> tuple[str, int] | None:
        return self._move_by_word.get(text.lower())

    def _apply(self, action: tuple[str, int]) -> tuple[float, bool]:
        verb, cell = action
        field = self.field
        if verb == FLAG_ACTION:
            return 0.0, field.toggle_flag(cell)
        changed = field.reveal(cell) > 0
        return (self.win_reward if field.cleared() else 0.0), changed

    def _solved(self) -> bool:
        return self.field.cleared()

    def _failed(self) -> bool:
        return self.field.exploded

    def task_ignoring_replies(self) -> dict[str, str]:
        """Flagging every hidden cell, and revealing a cell that is already open."""
        field = self.field
        hidden = [c for c in range(self.rows * self.cols) if not field.revealed[c]]
        opened = next(c for c in range(self.rows * self.cols) if field.revealed[c])
        count = self.answer_format.max_actions

        def word(verb: str, cell: int) -> str:
            return f"{verb} {cell // self.cols + 1} {cell % self.cols + 1}"

        return {
            "flag every hidden cell": self.answer_format.wrap(
                [word(FLAG_ACTION, c) for c in hidden[:count]] or [word(FLAG_ACTION, opened)]
            ),
            "reveal an open cell": self.answer_format.wrap(word(REVEAL, opened)),
        }

    # ------------------------------------------------------------------ public state
    @property
    def field(self) -> Minefield:
        """The field being played (the oracle reads its mines)."""
        if self._field is None:
            raise RuntimeError("call reset() before reading the state")
        return self._field

    def _given_layout(self, options: dict[str, Any]) -> Layout:
        def cell(pair: Any) -> int:
            row, col = pair
            if not (1 <= row <= self.rows and 1 <= col <= self.cols):
                raise ValueError(f"cell {pair!r} is outside the {self.rows}x{self.cols} field")
            return (row - 1) * self.cols + col - 1

        mines = frozenset(cell(pair) for pair in options["mines"])
        start = cell(options.get("start", (1, 1)))
        if start in mines or len(mines) != self.mine_count:
            raise ValueError(
                f"a given layout needs {self.mine_count} distinct mines and a start without one"
            )
        return Layout(self.rows, self.cols, mines, start)
