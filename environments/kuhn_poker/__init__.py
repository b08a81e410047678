"""Kuhn poker: one hand between two seats, for self-play and as a measure against its known
equilibrium (``environments.kuhn_poker.solver``).

Ids:
    ``KuhnPoker-v0``: one hand with the real stakes, rewards in chips. ``rollenv.make_multi``
    opens both seats; ``rollenv.make`` seats the agent (``agent_seat``, 0 by default) against
    the equilibrium player (``opponent="solver"``, or ``"random"``), through
    ``rollenv.seat_view.SeatView``.
"""

from __future__ import annotations

import importlib.util

MULTI_AGENT_ENTRY_POINT = "environments.kuhn_poker.env:KuhnPokerEnv"
SINGLE_AGENT_ENTRY_POINT = "rollenv.seat_view:SeatView"
DESCRIPTION = "Kuhn poker, one hand with the real stakes (2 players)"


def register() -> None:
    """Registers ``KuhnPoker-v0`` in both forms (the ``rollenv.envs`` entry point)."""
    import rollenv

    rollenv.register_multi(
        "KuhnPoker-v0", MULTI_AGENT_ENTRY_POINT, players=2, description=DESCRIPTION
    )
    if importlib.util.find_spec("pettingzoo") is None:
        rollenv.register_unavailable(
            "KuhnPoker-v0", "pip install 'rollenv[multiagent]'", description=DESCRIPTION
        )
        return
    rollenv.register(
        "KuhnPoker-v0",
        SINGLE_AGENT_ENTRY_POINT,
        max_episode_steps=4,
        kwargs={"game": "KuhnPoker-v0", "opponent": "solver"},
        description=DESCRIPTION,
    )
