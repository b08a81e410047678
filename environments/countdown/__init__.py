"""Countdown: combine the given numbers with + - * / to reach a target (TinyZero, RAGEN).

Ids:
    ``Countdown-v0``: 3 or 4 numbers in 1..99, a target in 1..100, one attempt.
    ``CountdownHard-v0``: 5 or 6 numbers in 1..100, a target in 1..1000, one attempt.
    ``CountdownRetry-v0``: as ``Countdown-v0`` with 3 attempts, each wrong one explained.
"""

from __future__ import annotations

ENTRY_POINT = "environments.countdown.env:CountdownEnv"

VARIANTS: dict[str, tuple[str, int, dict]] = {
    "Countdown-v0": (
        "3-4 numbers, target up to 100, one attempt",
        3,
        {"num_numbers": (3, 4), "max_number": 99, "max_target": 100},
    ),
    "CountdownHard-v0": (
        "5-6 numbers, target up to 1000, one attempt",
        3,
        {"num_numbers": (5, 6), "max_number": 100, "max_target": 1000},
    ),
    "CountdownRetry-v0": (
        "3-4 numbers, target up to 100, 3 attempts with feedback",
        6,
        {"num_numbers": (3, 4), "max_number": 99, "max_target": 100, "max_attempts": 3},
    ),
}


def register() -> None:
    """Registers every Countdown id with rollenv (the ``rollenv.envs`` entry point)."""
    # imported here: the registry imports this module while rollenv itself is being imported
    import rollenv

    for env_id, (description, max_turns, kwargs) in VARIANTS.items():
        rollenv.register(
            env_id, ENTRY_POINT, max_episode_steps=max_turns, kwargs=kwargs, description=description
        )
