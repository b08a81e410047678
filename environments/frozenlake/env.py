"""``FrozenLakeEnv``: walk from the start to the goal across a frozen lake without falling in.

Maps come from Gymnasium's ``generate_random_map`` (every map has a safe path) and moves from
Gymnasium's own FrozenLake transition model, so slippery dynamics are exactly Gymnasium's: the
intended move with probability ``success_rate`` (1/3), each perpendicular move otherwise.
The reward is 1 on reaching the goal, 0 otherwise; a reply with no valid action costs the
format penalty.

Example:
    >>> env = FrozenLakeEnv(size=4)
    >>> obs, info = env.reset(seed=0)
    >>> print(obs)
    P___
    ____
    ____
    __OG
"""

from __future__ import annotations

import random
from typing import Any

from gymnasium.envs.toy_text.frozen_lake import FrozenLakeEnv as GymnasiumFrozenLake
from gymnasium.envs.toy_text.frozen_lake import generate_random_map

from rollenv.actions import AnswerFormat
from rollenv.text_env import TextEnv

#: in Gymnasium's action order: 0 Left, 1 Down, 2 Right, 3 Up
ACTION_NAMES = ("Left", "Down", "Right", "Up")
#: symbols in the order player, frozen, hole, goal, player in hole, player on goal
DEFAULT_SYMBOLS = "P_OGX√"
SYMBOL_MEANINGS = ("player", "frozen ice", "hole", "goal", "player in a hole", "player on the goal")
_ACTION_BY_NAME = {name.lower(): index for index, name in enumerate(ACTION_NAMES)}


class FrozenLakeEnv(TextEnv):
    """FrozenLake on a random map.

    Args:
        size: the map is ``size x size``.
        desc: a fixed map for every episode, in Gymnasium's letters (S start, F frozen, H hole,
            G goal); ``None`` draws a new random map each reset.
        frozen_probability: chance a cell is frozen ice rather than a hole (Gymnasium's ``p``).
        is_slippery: whether moves slip (Gymnasium's dynamics).
        success_rate: with slippery ice, the chance the intended move happens.
        max_actions: moves per episode before it is truncated.
        max_actions_per_turn: moves one reply may carry, separated by ``||``.
        symbols: six characters for player, frozen, hole, goal, player in hole, player on goal.
        format_penalty: reward of a reply with no valid action.
        answer_format: overrides how actions are read from a reply (an ``AnswerFormat`` or its
            keyword arguments as a dict).
        render_mode: ``"ansi"`` or ``None``.

    ``reset(options={"desc": ["SFFF", "FHFH", "FFFH", "HFFG"]})`` plays a given map, written in
    Gymnasium's letters (S start, F frozen, H hole, G goal).
    """

    oracle = "environments.frozenlake.oracle:FrozenLakeOracle"
    tool_name = "move"
    tool_argument = "direction"
    tool_description = "Moves one cell on the frozen lake."

    def __init__(
        self,
        size: int = 4,
        frozen_probability: float = 0.8,
        *,
        desc: list[str] | tuple[str, ...] | None = None,
        is_slippery: bool = False,
        success_rate: float = 1.0 / 3.0,
        max_actions: int = 10,
        max_actions_per_turn: int = 1,
        symbols: str = DEFAULT_SYMBOLS,
        format_penalty: float = -0.1,
        answer_format: AnswerFormat | dict[str, Any] | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            answer_format=answer_format or {"max_actions": max_actions_per_turn},
            format_penalty=format_penalty,
            max_actions=max_actions,
            render_mode=render_mode,
        )
        if size < 2:
            raise ValueError(f"size must be >= 2, got {size}")
        if not 0.0 < frozen_probability <= 1.0:
            raise ValueError(f"frozen_probability must be in (0, 1], got {frozen_probability}")
        if not 0.0 <= success_rate <= 1.0:
            raise ValueError(f"success_rate must be in [0, 1], got {success_rate}")
        if len(symbols) != 6 or len(set(symbols)) != 6:
            raise ValueError(
                f"symbols must be 6 distinct characters "
                f"({', '.join(SYMBOL_MEANINGS)}), got {symbols!r}"
            )
        self.size = size
        self.frozen_probability = frozen_probability
        self.is_slippery = is_slippery
        self.deterministic = not is_slippery
        self.success_rate = success_rate
        self.symbols = symbols
        self.fixed_desc = None if desc is None else _checked_desc(desc)
        self.desc: tuple[str, ...] = ()
        self._lake: GymnasiumFrozenLake | None = None
        self._instruction = self._write_instruction()

    # ------------------------------------------------------------------ TextEnv
    @property
    def instruction(self) -> str:
        slip = (
            " The ice is slippery: you may slide sideways instead of where you meant to go."
            if self.is_slippery
            else ""
        )
        return self._instruction + slip

    def _write_instruction(self) -> str:
        legend = ", ".join(f"{s} {m}" for s, m in zip(self.symbols, SYMBOL_MEANINGS, strict=True))
        return (
            "You are playing FrozenLake. Walk from your position to the goal without stepping "
            f"into a hole. Symbols: {legend}. Actions: Left, Down, Right, Up. "
            f"{self.answer_format.describe()} Example: {self.answer_format.wrap('Right')}"
        )

    @property
    def action_words(self) -> tuple[str, ...]:
        return ACTION_NAMES

    def _new_episode(self, rng: random.Random, options: dict[str, Any] | None) -> None:
        if options and "desc" in options:
            self.desc = _checked_desc(options["desc"])
        elif self.fixed_desc is not None:
            self.desc = self.fixed_desc
        else:
            self.desc = tuple(
                generate_random_map(self.size, self.frozen_probability, seed=rng.getrandbits(32))
            )
        self._lake = GymnasiumFrozenLake(
            desc=list(self.desc), is_slippery=self.is_slippery, success_rate=self.success_rate
        )
        self._lake.reset(seed=rng.getrandbits(32))
        self._side = len(self.desc)
        player, frozen, hole, goal = self.symbols[:4]
        cell_symbol = {"S": frozen, "F": frozen, "H": hole, "G": goal}
        self._base = [[cell_symbol[c] for c in row] for row in self.desc]

    def _observation(self) -> str:
        row, col = divmod(self.position, self._side)
        cell = self.desc[row][col]
        here = (
            self.symbols[4] if cell == "H" else self.symbols[5] if cell == "G" else self.symbols[0]
        )
        rows = ["".join(r) for r in self._base]
        line = self._base[row]
        rows[row] = "".join(line[:col]) + here + "".join(line[col + 1 :])
        return "\n".join(rows)

    def _parse_action(self, text: str) -> int | None:
        return _ACTION_BY_NAME.get(text.lower())

    def _apply(self, action: int) -> tuple[float, bool]:
        before = self.position
        _, reward, _, _, _ = self._lake.step(action)
        return float(reward), self.position != before

    def _solved(self) -> bool:
        return self._cell() == "G"

    def _failed(self) -> bool:
        return self._cell() == "H"

    # ------------------------------------------------------------------ public state
    @property
    def position(self) -> int:
        """The player's cell, ``row * side + col`` on the current map."""
        if self._lake is None:
            raise RuntimeError("call reset() before reading the state")
        return int(self._lake.s)

    @property
    def transitions(self) -> dict[int, dict[int, list[tuple[float, int, float, bool]]]]:
        """Gymnasium's model of the current map: ``[state][action] -> [(p, next, r, done)]``."""
        if self._lake is None:
            raise RuntimeError("call reset() before reading the state")
        return self._lake.P

    def _cell(self) -> str:
        row, col = divmod(self.position, self._side)
        return self.desc[row][col]


def _checked_desc(desc: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    rows = tuple(desc)
    if not rows or any(len(row) != len(rows) for row in rows):
        raise ValueError("a FrozenLake map must be square, one string per row")
    text = "".join(rows)
    if set(text) - set("SFHG") or text.count("S") != 1 or "G" not in text:
        raise ValueError("a FrozenLake map uses S F H G, with exactly one S and at least one G")
    return rows
