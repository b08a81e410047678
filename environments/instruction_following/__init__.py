"""Instruction following: write about a topic under verifiable constraints (IFEval-style).

Ids:
    ``InstructionFollowing-v0``: 1-3 constraints of 23 kinds; the fraction kept is the reward.
    ``InstructionFollowingStrict-v0``: the same prompts; 1 only when every constraint is kept.
"""

from __future__ import annotations

ENTRY_POINT = "environments.instruction_following.env:InstructionFollowingEnv"

VARIANTS: dict[str, tuple[str, dict]] = {
    "InstructionFollowing-v0": (
        "write about a topic under 1-3 constraints, the fraction kept as reward",
        {"constraints": (1, 3)},
    ),
    "InstructionFollowingStrict-v0": (
        "as InstructionFollowing-v0, reward 1 only when every constraint is kept",
        {"constraints": (1, 3), "all_or_nothing": True},
    ),
}


def register() -> None:
    """Registers every instruction-following id with rollenv (the ``rollenv.envs`` entry
    point)."""
    import rollenv

    for env_id, (description, kwargs) in VARIANTS.items():
        rollenv.register(
            env_id, ENTRY_POINT, max_episode_steps=1, kwargs=kwargs, description=description
        )
