"""Sokoban: push boxes onto targets on generated boards (the ROLL paper's main agentic task).

Ids:
    ``Sokoban-v0`` / ``SimpleSokoban-v0``: 6x6, 1 box.
    ``Sokoban8x8-v0``: 8x8, 2 boxes.
    ``LargerSokoban-v0``: 10x10, 2 boxes.
    ``SokobanDifferentGridVocab-v0``: 6x6, 1 box, drawn with ``W . G C B A @``.
"""

from __future__ import annotations

ENTRY_POINT = "environments.sokoban.env:SokobanEnv"
MAX_TURNS = 10

VARIANTS: dict[str, tuple[str, dict]] = {
    "Sokoban-v0": ("6x6 room, 1 box", {"dim_room": (6, 6), "num_boxes": 1}),
    "SimpleSokoban-v0": (
        "6x6 room, 1 box (same as Sokoban-v0)",
        {"dim_room": (6, 6), "num_boxes": 1},
    ),
    "Sokoban8x8-v0": ("8x8 room, 2 boxes", {"dim_room": (8, 8), "num_boxes": 2}),
    "LargerSokoban-v0": ("10x10 room, 2 boxes", {"dim_room": (10, 10), "num_boxes": 2}),
    "SokobanDifferentGridVocab-v0": (
        "6x6 room, 1 box, symbols W . G C B A @",
        {"dim_room": (6, 6), "num_boxes": 1, "symbols": "W.GCBA@"},
    ),
}


def register() -> None:
    """Registers every Sokoban id with rollenv (the ``rollenv.envs`` entry point)."""
    # imported here: a submodule imported before rollenv (environments.code.data) imports
    # rollenv, which calls this while the package is still being imported
    import rollenv

    for env_id, (description, kwargs) in VARIANTS.items():
        rollenv.register(
            env_id,
            ENTRY_POINT,
            max_episode_steps=MAX_TURNS,
            kwargs=kwargs,
            description=description,
        )
