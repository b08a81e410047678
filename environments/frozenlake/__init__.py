"""FrozenLake: cross a lake of ice and holes to the goal, on random maps.

Ids:
    ``FrozenLake-v0``: 4x4, not slippery.
    ``FrozenLakeSlippery-v0``: 4x4, slippery (Gymnasium's dynamics), 20 moves.
    ``FrozenLake8x8-v0``: 8x8, not slippery.
"""

from __future__ import annotations

ENTRY_POINT = "environments.frozenlake.env:FrozenLakeEnv"

VARIANTS: dict[str, tuple[str, int, dict]] = {
    "FrozenLake-v0": ("4x4 lake, not slippery", 10, {"size": 4}),
    # slipping makes 10 moves too few: the best policy reaches the goal 11% of the time, 42% in 20
    "FrozenLakeSlippery-v0": (
        "4x4 lake, slippery, 20 moves",
        20,
        {"size": 4, "is_slippery": True, "max_actions": 20},
    ),
    "FrozenLake8x8-v0": ("8x8 lake, not slippery", 30, {"size": 8, "max_actions": 30}),
}


def register() -> None:
    """Registers every FrozenLake id with rollenv (the ``rollenv.envs`` entry point)."""
    # imported here: a submodule imported before rollenv (environments.code.data) imports
    # rollenv, which calls this while the package is still being imported
    import rollenv

    for env_id, (description, max_turns, kwargs) in VARIANTS.items():
        rollenv.register(
            env_id, ENTRY_POINT, max_episode_steps=max_turns, kwargs=kwargs, description=description
        )
