"""``OpponentPool``: past versions of the policy, kept as opponents for self-play.

Self-play against only the current policy can cycle: the policy learns to beat its latest self
and forgets how to beat an earlier one. A pool of past versions keeps them in play
(``env.opponent_pool``): every ``every`` steps the policy's weights join the pool, which keeps
the newest ``size``; each step one version is drawn, its weights are loaded into a generator of
its own, and it plays the other seats of some of the step's games
(``SelfPlayManager.rollout(past=...)``).

Drawing is uniform, or prioritised by the policy's results against each version: in proportion
to ``(1 - p) ** 2``, where ``p`` is the policy's points share against that version (a win 1, a
draw 1/2; with one win and one loss added beforehand, so a new version starts at 1/2). The
versions the policy beats least come most often, as in AlphaStar's prioritised fictitious
self-play.

Example:
    >>> from trainer.config import OpponentPoolConfig
    >>> pool = OpponentPool(OpponentPoolConfig(every=2, size=2, choice="prioritised"), None)
    >>> for version in range(1, 7):
    ...     pool.add(version, {"w": torch.tensor([float(version)])})
    >>> [past.version for past in pool.versions]  # every 2nd version, the newest 2
    [4, 6]
    >>> pool.record(pool.versions[0], [1.0, 1.0, 1.0, 0.0])  # version 4: beaten 3.5 of 4
    >>> [round(p, 4) for p in pool.priorities()]  # (1 - 4.5/6) ** 2 and (1 - 1/2) ** 2
    [0.0625, 0.25]
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from trainer.config import OpponentPoolConfig

__all__ = ["OpponentPool", "PastVersion", "points"]


def points(result: float | None) -> float:
    """The policy's points for one game's result: a win 1, a loss 0, a draw (or a game cut
    short, ``None``) 1/2."""
    if result is None or result == 0:
        return 0.5
    return 1.0 if result > 0 else 0.0


@dataclass
class PastVersion:
    """One past version of the policy in the pool.

    Attributes:
        version: the weight version (the step after which it was taken).
        weights: a copy of its weights.
        points: the policy's points against it so far (a win 1, a draw 1/2).
        games: the games the policy played against it.
    """

    version: int
    weights: dict[str, torch.Tensor]
    points: float = 0.0
    games: int = 0

    @property
    def points_share(self) -> float:
        """The policy's points share against it, with one win and one loss added."""
        return (self.points + 1.0) / (self.games + 2.0)


class OpponentPool:
    """Past versions of the policy, drawn as opponents (see the module docstring).

    Args:
        config: ``env.opponent_pool``.
        generator: where the drawn version's weights are loaded for it to play (a generator
            of its own, not the policy's).
        seed: seeds the draws (with the step, so a draw does not depend on earlier ones).
    """

    def __init__(self, config: OpponentPoolConfig, generator: Any, seed: int = 0) -> None:
        self.config = config
        self.generator = generator
        self.seed = seed
        self.versions: list[PastVersion] = []
        self._loaded: int | None = None

    def add(self, version: int, weights: Mapping[str, torch.Tensor]) -> None:
        """Keeps a copy of ``weights`` when ``version`` is a multiple of ``every``; the oldest
        version leaves beyond ``size``."""
        if version <= 0 or version % self.config.every:
            return
        copied: dict[int, torch.Tensor] = {}  # tied weights stay one tensor
        kept = {k: copied.setdefault(id(v), v.detach().clone()) for k, v in weights.items()}
        self.versions.append(PastVersion(version, kept))
        del self.versions[: -self.config.size]

    def priorities(self) -> list[float]:
        """Each version's weight in the draw, in the order of :attr:`versions`."""
        if self.config.choice == "uniform":
            return [1.0] * len(self.versions)
        return [(1.0 - past.points_share) ** 2 for past in self.versions]

    def draw(self, step: int) -> PastVersion | None:
        """The version that plays step ``step``'s pool games (``None`` while the pool is
        empty), its weights loaded into :attr:`generator`."""
        if not self.versions:
            return None
        rng = random.Random(f"opponent_pool-{self.seed}-{step}")
        weights = self.priorities()
        if sum(weights) <= 0:  # the policy beat every version every time: draw uniformly
            weights = [1.0] * len(self.versions)
        past = rng.choices(self.versions, weights=weights)[0]
        if self._loaded != past.version:
            self.generator.update_weights(past.weights)
            self._loaded = past.version
        return past

    def record(self, past: PastVersion, results: Sequence[float | None]) -> None:
        """Adds the policy's results against ``past`` (a game cut short, ``None``, counts as
        a draw)."""
        past.games += len(results)
        past.points += sum(map(points, results))

    def groups(self, groups_per_step: int) -> int:
        """How many of a step's groups play against the drawn version."""
        if not self.versions:
            return 0
        return max(1, round(self.config.share * groups_per_step))
