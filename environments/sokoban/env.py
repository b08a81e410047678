"""``SokobanEnv``: push every box onto a target, in text.

Rewards (as RAGEN and ROLL): ``-0.1`` per move, ``+1`` for pushing a box onto a target, ``-1``
for pushing one off, ``+10`` when the last box lands; a reply with no valid action costs the
format penalty (``-0.1``) and changes nothing. ``progress_reward`` (off by default) adds
potential-based shaping for RL without demonstrations: each move earns that much per push the
box no longer needs and per step the player came closer to it (``progress.py``).

Example:
    >>> env = SokobanEnv()
    >>> obs, info = env.reset(seed=7)
    >>> print(obs)  # doctest: +SKIP
    ######
    #_O__#
    ...
    >>> info["optimal_plan_length"] >= 1
    True
"""

from __future__ import annotations

import random
from typing import Any

from environments.sokoban.description import describe
from environments.sokoban.generator import generate_puzzle
from environments.sokoban.progress import potential, push_distances
from environments.sokoban.puzzle import (
    ACTION_NAMES,
    DEFAULT_SYMBOLS,
    SYMBOL_MEANINGS,
    Puzzle,
    move,
    offsets,
)
from environments.sokoban.solver import solve
from rollenv.actions import AnswerFormat
from rollenv.text_env import TextEnv

#: what ``SokobanEnv(observation=...)`` may show: the board drawn, or told in words
OBSERVATIONS = ("grid", "relative")
_ACTION_BY_NAME = {name.lower(): index for index, name in enumerate(ACTION_NAMES)}


class SokobanEnv(TextEnv):
    """Sokoban on a generated board.

    Args:
        dim_room: ``(height, width)`` of the board, outer walls included.
        num_boxes: boxes and targets.
        min_solution_length: the difficulty knob: fewest moves the optimal plan may need.
        max_solution_length: most moves it may need; defaults to ``max_actions`` so every
            puzzle is solvable within the episode's budget.
        max_actions: moves per episode before it is truncated.
        max_actions_per_turn: moves one reply may carry, separated by ``||``.
        symbols: seven characters for wall, floor, target, box on target, box, player, player on
            target (``"#_O√XPS"``).
        cell_separator: text put between the cells of a row (``" "`` makes every cell its own
            token for most tokenizers, so a column is a fixed number of tokens apart).
        format_penalty: reward of a reply with no valid action.
        step_reward, box_on_reward, box_off_reward, solved_reward: the reward scheme.
        blocked_move_reward: added to a move that changes nothing (into a wall, or a box that
            cannot move); with shaping on, standing still earns 0 while exploring risks pushing
            the box into a dead cell, so a small cost here keeps the policy moving.
        progress_reward: weight of the shaping term ``Phi(s') - Phi(s)``, where ``-Phi`` counts
            the pushes the boxes still need plus the player's walk to a box (0: off).
        observation: ``"grid"`` draws the board; ``"relative"`` tells it in words from the
            player's point of view (``description.py``): the four neighbouring cells, each box's
            offset from the player and its nearest free target's offset from the box.
        answer_format: overrides how actions are read from a reply (an ``AnswerFormat`` or its
            keyword arguments as a dict).
        render_mode: ``"ansi"`` or ``None``.

    ``reset(options={"board": text})`` plays a given board (drawn with ``symbols``) instead of a
    generated one; ``info["optimal_plan_length"]`` is then ``None`` if it has no solution.
    """

    oracle = "environments.sokoban.oracle:SokobanOracle"
    tool_name = "move"
    tool_argument = "direction"
    tool_description = "Moves the player one cell, pushing a box in the way."

    def __init__(
        self,
        dim_room: tuple[int, int] = (6, 6),
        num_boxes: int = 1,
        *,
        min_solution_length: int = 2,
        max_solution_length: int | None = None,
        max_actions: int = 10,
        max_actions_per_turn: int = 1,
        symbols: str = DEFAULT_SYMBOLS,
        cell_separator: str = "",
        format_penalty: float = -0.1,
        step_reward: float = -0.1,
        box_on_reward: float = 1.0,
        box_off_reward: float = -1.0,
        solved_reward: float = 10.0,
        blocked_move_reward: float = 0.0,
        progress_reward: float = 0.0,
        observation: str = "grid",
        answer_format: AnswerFormat | dict[str, Any] | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            answer_format=answer_format or {"max_actions": max_actions_per_turn},
            format_penalty=format_penalty,
            max_actions=max_actions,
            render_mode=render_mode,
        )
        if len(symbols) != 7 or len(set(symbols)) != 7:
            raise ValueError(
                f"symbols must be 7 distinct characters "
                f"({', '.join(SYMBOL_MEANINGS)}), got {symbols!r}"
            )
        if observation not in OBSERVATIONS:
            raise ValueError(
                f"observation must be one of {', '.join(map(repr, OBSERVATIONS))}, "
                f"got {observation!r}"
            )
        self.observation = observation
        if "\n" in cell_separator or set(cell_separator) & set(symbols):
            raise ValueError(
                f"cell_separator {cell_separator!r} may not contain a newline or a board symbol"
            )
        self.cell_separator = cell_separator
        self.dim_room = tuple(dim_room)
        self.num_boxes = num_boxes
        self.min_solution_length = min_solution_length
        self.max_solution_length = (
            max_solution_length if max_solution_length is not None else max_actions
        )
        self.symbols = symbols
        self.step_reward = step_reward
        self.box_on_reward = box_on_reward
        self.box_off_reward = box_off_reward
        self.solved_reward = solved_reward
        self.blocked_move_reward = blocked_move_reward
        self.progress_reward = progress_reward
        # fail on impossible settings now, not at the first reset
        generate_puzzle(
            random.Random(0),
            self.dim_room,
            num_boxes,
            min_solution_length=min_solution_length,
            max_solution_length=self.max_solution_length,
        )
        self.puzzle: Puzzle | None = None
        self.optimal_plan_length: int | None = 0
        self._instruction = self._write_instruction()

    # ------------------------------------------------------------------ TextEnv
    @property
    def instruction(self) -> str:
        return self._instruction

    @property
    def action_words(self) -> tuple[str, ...]:
        return ACTION_NAMES

    def _write_instruction(self) -> str:
        if self.observation == "relative":
            view = (
                "Each turn you are told what is one step Up, Down, Left and Right of you, where "
                "the box is from you, and where its target is from the box."
            )
        else:
            legend = ", ".join(
                f"{s} {m}" for s, m in zip(self.symbols, SYMBOL_MEANINGS, strict=True)
            )
            view = f"Symbols: {legend}."
        return (
            "You are solving Sokoban. Push every box onto a target. You push a box by walking "
            f"into it; you cannot pull. {view} Actions: Up, Down, Left, Right. "
            f"{self.answer_format.describe()} Example: {self.answer_format.wrap('Left')}"
        )

    def _new_episode(self, rng: random.Random, options: dict[str, Any] | None) -> None:
        if options and "board" in options:
            board = str(options["board"])
            if self.cell_separator:
                board = board.replace(self.cell_separator, "")
            self.puzzle = Puzzle.from_text(board, self.symbols)
            plan = solve(self.puzzle)
            self.optimal_plan_length = None if plan is None else len(plan)
        else:
            generated = generate_puzzle(
                rng,
                self.dim_room,
                self.num_boxes,
                min_solution_length=self.min_solution_length,
                max_solution_length=self.max_solution_length,
            )
            self.puzzle = generated.puzzle
            self.optimal_plan_length = generated.optimal_plan_length
        self._walls = self.puzzle.walls
        self._targets = frozenset(self.puzzle.targets)
        self._deltas = offsets(self.puzzle.width)
        self._boxes = list(self.puzzle.boxes)
        self._player = self.puzzle.player
        self._push_distance = None
        if self.progress_reward:
            puzzle = self.puzzle
            self._push_distance = push_distances(self._walls, puzzle.targets, puzzle.width)
            self._last_potential = self._potential()

    def _reset_info(self) -> dict[str, Any]:
        return {"optimal_plan_length": self.optimal_plan_length}

    def _observation(self) -> str:
        if self.observation == "relative":
            return describe(self.state)
        board = self.state.render(self.symbols)
        if not self.cell_separator:
            return board
        return "\n".join(self.cell_separator.join(row) for row in board.split("\n"))

    def _parse_action(self, text: str) -> int | None:
        return _ACTION_BY_NAME.get(text.lower())

    def _apply(self, action: int) -> tuple[float, bool]:
        reward, effective = self._move(action)
        if self._push_distance is None or not effective:  # a blocked move leaves Phi as it was
            return reward, effective
        before, self._last_potential = self._last_potential, self._potential()
        return reward + self.progress_reward * (self._last_potential - before), effective

    def _potential(self) -> int:
        return potential(
            self._walls,
            self._push_distance,
            self._targets,
            self._boxes,
            self._player,
            self.puzzle.width,
        )

    def _move(self, action: int) -> tuple[float, bool]:
        reward = self.step_reward
        moved = move(self._walls, self._boxes, self._player, self._deltas[action])
        if moved is None:
            return reward + self.blocked_move_reward, False
        to, box_to = moved
        if box_to >= 0:
            boxes = self._boxes
            boxes[boxes.index(to)] = box_to
            targets = self._targets
            if box_to in targets and to not in targets:
                reward += self.box_on_reward
            elif to in targets and box_to not in targets:
                reward += self.box_off_reward
            if self._solved():
                reward += self.solved_reward
        self._player = to
        return reward, True

    def _solved(self) -> bool:
        return all(b in self._targets for b in self._boxes)

    # ------------------------------------------------------------------ public state
    @property
    def state(self) -> Puzzle:
        """The current position as a ``Puzzle`` (what the oracle plans on)."""
        if self.puzzle is None:
            raise RuntimeError("call reset() before reading the state")
        return Puzzle(
            self.puzzle.height,
            self.puzzle.width,
            self._walls,
            self.puzzle.targets,
            tuple(sorted(self._boxes)),
            self._player,
        )
