"""TextArena's games as rollenv envs: ``textarena/<Game>-v0``, the agent against pinned opponents.

Every base game of TextArena 0.7.4 is listed in ``environments.textarena.games``: those that run
offline are registered, the others are registered unavailable with the reason (an LLM judge, NLTK
data, a newer Python, a bug in that TextArena release), so ``roll-agent envs --unavailable``
shows them. Registering imports neither TextArena nor the env: without TextArena installed every
game is unavailable with the command that installs it.

Two- and multi-player games take ``agent_seat`` (default 0) and ``opponent`` (``"random"`` or
``"openai:<base_url>:<model>"``), and are registered for ``rollenv.make_multi`` too: every seat
open, under PettingZoo's AEC API (``environments.textarena.turn_based``). There is no oracle: a
game against an opponent has no sure win, and the random policy's success is measured instead;
Tic-tac-toe and Nim have solvers (``environments.textarena.solvers``) that play a seat of a
``make_multi`` game.

Example:
    >>> import rollenv
    >>> rollenv.spec("textarena/TicTacToe-v0").kwargs
    {'game': 'TicTacToe-v0'}
"""

from __future__ import annotations

import importlib.util

ENTRY_POINT = "environments.textarena.env:TextArenaEnv"
MULTI_AGENT_ENTRY_POINT = "environments.textarena.turn_based:TextArenaTurnBased"


def register() -> None:
    """Registers every TextArena base game, runnable or unavailable (the ``rollenv.envs`` hook)."""
    import rollenv
    from environments.textarena.games import GAMES, INSTALL_HINT, unmet_requirement

    installed = importlib.util.find_spec("textarena") is not None
    for game in GAMES:
        description = f"{game.description} ({game.players} player{'s' * (game.players > 1)})"
        reason = unmet_requirement(game) if installed else INSTALL_HINT
        if reason is not None:
            rollenv.register_unavailable(game.rollenv_id, reason, description=description)
            continue
        rollenv.register(
            game.rollenv_id,
            ENTRY_POINT,
            max_episode_steps=game.max_turns,
            kwargs={"game": game.textarena_id},
            description=description,
        )
        if game.players > 1:  # every seat open: rollenv.make_multi
            rollenv.register_multi(
                game.rollenv_id,
                MULTI_AGENT_ENTRY_POINT,
                players=game.players,
                kwargs={"game": game.textarena_id},
                description=description,
            )
