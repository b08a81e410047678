"""The evaluation of a self-play run: the policy, greedy, in each seat against fixed players.

Every seat of the game is played ``games`` times (seeds ``0 .. games - 1``) by the policy with
the other seats played by a random player (``RandomSeatPolicy``) and, where the game has one,
by its solver (``SolverPolicy``). Metrics, for each opponent ``<o>`` and seat ``<s>``:
``eval/<o>/<s>/win``, ``/draw`` and ``/loss`` (shares of the games), and ``eval/success``, the
win rate against the random player over every seat (what a run's progress line shows).

Example:
    >>> matches = SeatMatches(config, tokenizer, generator)  # doctest: +SKIP
    >>> matches()["eval/random/player_0/win"]  # doctest: +SKIP
    0.75
"""

from __future__ import annotations

import copy
import time
from dataclasses import replace
from typing import Any

import rollenv
from rollenv.seat_policies import RandomSeatPolicy, SeatPolicy, SolverPolicy
from trainer.config import Config
from trainer.generation.from_config import generator_for, sampling_params
from trainer.rollout.metrics import rollout_metrics
from trainer.rollout.self_play import SelfPlayManager
from trainer.rollout.trajectory import Trajectory
from trainer.strategies.from_config import resolve_device

__all__ = ["SeatMatches", "outcome_shares"]


def outcome_shares(results: list[float | None]) -> dict[str, float]:
    """The shares of wins, draws and losses among games' results (a game cut short, result
    ``None``, counts as a loss).

    Example:
        >>> outcome_shares([1.0, 0.0, -1.0, None])
        {'win': 0.25, 'draw': 0.25, 'loss': 0.5}
    """
    n = max(len(results), 1)
    wins = sum(r is not None and r > 0 for r in results)
    draws = sum(r is not None and r == 0 for r in results)
    return {"win": wins / n, "draw": draws / n, "loss": (len(results) - wins - draws) / n}


class SeatMatches:
    """Greedy games of the policy in each seat against a random player and the solver.

    Args:
        config: the run's configuration (``env.self_play``).
        tokenizer: the policy's tokenizer.
        generator: what samples the policy's replies.
        games: games per seat and opponent (default ``train.eval_groups``).
    """

    def __init__(self, config: Config, tokenizer: Any, generator: Any, games: int | None = None):
        greedy = replace(sampling_params(config, tokenizer), temperature=0.0)
        self.games = config.train.eval_groups if games is None else games
        game = rollenv.make_multi(config.env.id, **config.env.kwargs).unwrapped
        fixed: dict[str, type] = {"random": RandomSeatPolicy}
        if game.solver() is not None:
            fixed["solver"] = SolverPolicy
        self.managers: dict[tuple[str, str], SelfPlayManager] = {}
        for name, player in fixed.items():
            for agent in game.possible_agents:
                opponents: dict[str, SeatPolicy] = {
                    other: player(seed=index)
                    for index, other in enumerate(game.possible_agents)
                    if other != agent
                }
                self.managers[(name, agent)] = SelfPlayManager.from_config(
                    config, tokenizer, generator, 1, greedy, opponents=opponents
                )
        game.close()
        self.generator = generator
        self.seconds = 0.0

    @classmethod
    def with_copy_of(cls, config: Config, model: Any, tokenizer: Any) -> SeatMatches:
        """Matches played with a copy of ``model`` (keep it current with
        ``generator.update_weights``), for the warm start, which has no generator."""
        device = resolve_device(config.train.device)
        return cls(
            config, tokenizer, generator_for(config, copy.deepcopy(model), tokenizer, device)
        )

    def __call__(self) -> dict[str, float]:
        """The ``eval/`` metrics of one round of matches."""
        started = time.perf_counter()
        metrics: dict[str, float] = {}
        against_random: list[Trajectory] = []
        seeds = list(range(self.games))
        for (name, agent), manager in self.managers.items():
            trajectories = manager.rollout(seeds, group_ids=seeds)
            for key, share in outcome_shares(manager.last_results).items():
                metrics[f"eval/{name}/{agent}/{key}"] = share
            if name == "random":
                against_random += trajectories
        metrics.update(rollout_metrics(against_random, "eval"))
        self.seconds = time.perf_counter() - started
        return metrics

    def close(self) -> None:
        for manager in self.managers.values():
            manager.close()
