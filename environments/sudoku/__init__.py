"""Sudoku: fill a generated grid with a unique solution, one or many placements per reply.

Ids:
    ``Sudoku4x4-v0``: 4x4 (2x2 boxes), 10 empty cells.
    ``Sudoku6x6-v0``: 6x6 (2x3 boxes), 18 empty cells.
    ``Sudoku-v0``: 9x9, 35 empty cells (easy).
    ``SudokuHard-v0``: 9x9, 50 empty cells.
"""

from __future__ import annotations

ENTRY_POINT = "environments.sudoku.env:SudokuEnv"

VARIANTS: dict[str, tuple[str, int, dict]] = {
    "Sudoku4x4-v0": ("4x4 grid, 10 empty cells", 10, {"size": 4, "blanks": 10}),
    "Sudoku6x6-v0": ("6x6 grid, 18 empty cells", 15, {"size": 6, "blanks": 18}),
    "Sudoku-v0": ("9x9 grid, 35 empty cells (easy)", 20, {"size": 9, "blanks": 35}),
    "SudokuHard-v0": ("9x9 grid, 50 empty cells", 25, {"size": 9, "blanks": 50}),
}


def register() -> None:
    """Registers every Sudoku id with rollenv (the ``rollenv.envs`` entry point)."""
    # imported here: the registry imports this module while rollenv itself is being imported
    import rollenv

    for env_id, (description, max_turns, kwargs) in VARIANTS.items():
        rollenv.register(
            env_id, ENTRY_POINT, max_episode_steps=max_turns, kwargs=kwargs, description=description
        )
