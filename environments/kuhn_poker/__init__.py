"""Kuhn poker: one hand between two seats, for self-play and as a measure against its known
equilibrium (``environments.kuhn_poker.solver``).

Ids (``rollenv.make_multi``):
    ``KuhnPoker-v0``: one hand, both seats open, rewards in chips.
"""

from __future__ import annotations

MULTI_AGENT_ENTRY_POINT = "environments.kuhn_poker.env:KuhnPokerEnv"


def register() -> None:
    """Registers ``KuhnPoker-v0`` for ``rollenv.make_multi`` (the ``rollenv.envs`` entry point)."""
    import rollenv

    rollenv.register_multi(
        "KuhnPoker-v0",
        MULTI_AGENT_ENTRY_POINT,
        players=2,
        description="Kuhn poker, one hand with the real stakes (2 players)",
    )
