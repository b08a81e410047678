"""Minesweeper: reveal every safe cell of a generated field, from a safe opening.

Ids:
    ``Minesweeper-v0``: 5x5, 3 mines.
    ``Minesweeper8x8-v0``: 8x8, 10 mines.
    ``MinesweeperHard-v0``: 10x10, 20 mines.
"""

from __future__ import annotations

ENTRY_POINT = "environments.minesweeper.env:MinesweeperEnv"

# each id allows more turns than its field has safe cells: one reveal a turn always finishes
VARIANTS: dict[str, tuple[str, int, dict]] = {
    "Minesweeper-v0": ("5x5 field, 3 mines", 25, {"rows": 5, "cols": 5, "mines": 3}),
    "Minesweeper8x8-v0": ("8x8 field, 10 mines", 60, {"rows": 8, "cols": 8, "mines": 10}),
    "MinesweeperHard-v0": ("10x10 field, 20 mines", 90, {"rows": 10, "cols": 10, "mines": 20}),
}


def register() -> None:
    """Registers every Minesweeper id with rollenv (the ``rollenv.envs`` entry point)."""
    # imported here: the registry imports this module while rollenv itself is being imported
    import rollenv

    for env_id, (description, max_turns, kwargs) in VARIANTS.items():
        rollenv.register(
            env_id, ENTRY_POINT, max_episode_steps=max_turns, kwargs=kwargs, description=description
        )
