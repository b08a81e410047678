"""BabyAI: MiniGrid's BabyAI missions played in text (the ``minigrid`` package, no display).

Ids (the difficulty grows with the mission and the room):
    ``BabyAI-GoToObj-v0``: go to the only object of an 8x8 room.
    ``BabyAI-GoToLocal-v0``: go to an object among 8 distractors in an 8x8 room.
    ``BabyAI-PickupLoc-v0``: pick up an object described by colour, type or location.
    ``BabyAI-OpenDoor-v0``: open a door of the room, named by colour or location, in a 3x3 maze.
    ``BabyAI-UnlockLocal-v0``: fetch the key and unlock the room's locked door.
"""

from __future__ import annotations

ENTRY_POINT = "environments.babyai.env:BabyAIEnv"

VARIANTS: dict[str, tuple[str, int, dict]] = {
    "BabyAI-GoToObj-v0": ("go to the one object of an 8x8 room", 40, {"level": "GoToObj"}),
    "BabyAI-GoToLocal-v0": (
        "go to an object among 8 distractors, 8x8 room",
        40,
        {"level": "GoToLocal"},
    ),
    "BabyAI-PickupLoc-v0": (
        "pick up an object named by colour, type or location, 8x8 room",
        40,
        {"level": "PickupLoc"},
    ),
    "BabyAI-OpenDoor-v0": (
        "open the room's door named by colour or location, 3x3 rooms",
        40,
        {"level": "OpenDoor"},
    ),
    "BabyAI-UnlockLocal-v0": (
        "fetch the key and unlock the room's door, 3x3 rooms",
        64,
        {"level": "UnlockLocal", "max_actions": 64},
    ),
}


def register() -> None:
    """Registers every BabyAI id with rollenv (the ``rollenv.envs`` entry point)."""
    # imported here: a submodule imported before rollenv (environments.code.data) imports
    # rollenv, which calls this while the package is still being imported
    import importlib.util

    import rollenv

    missing = importlib.util.find_spec("minigrid") is None
    for env_id, (description, max_turns, kwargs) in VARIANTS.items():
        if missing:
            reason = "needs MiniGrid: pip install 'rollenv[babyai]'"
            rollenv.register_unavailable(env_id, reason, description=description)
            continue
        rollenv.register(
            env_id, ENTRY_POINT, max_episode_steps=max_turns, kwargs=kwargs, description=description
        )
