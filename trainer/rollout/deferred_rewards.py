"""``DeferredRewards``: the env manager's side of the reward workers.

An env made with ``defer_reward=True`` does not score its answer inside ``step``; its last step
returns the answer's inline reward (0, or a format penalty) and ``info["reward_request"]``, plain
data naming what scores it::

    {"kind": "rule", "rule": "module:function", "response": "...", "data": {...},
     "success_at": 1.0}
    {"kind": "sandbox", "rule": "module:function", "response": "<code>", "data": {...}}
    {"kind": "judge", "question": "...", "response": "...", "reference": "...",
     "success_at": 1.0}

The env manager records it on the trajectory and hands it here as soon as the episode ends;
:class:`~trainer.rewards.pool.RewardPool` scores it while the manager goes on generating. When
the number comes back it is added to the last turn's reward and the turn's ``success`` is
``score >= success_at``; a request that could not be scored leaves the trajectory
``unscored`` (with the reason) for the trainer to leave out and count, never a silent 0.
Nothing here reaches back into the env or the pool: requests go out, numbers come in.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from trainer.rollout.trajectory import Trajectory

if TYPE_CHECKING:
    from trainer.rewards.pool import RewardPool, ScoreResult

__all__ = ["DeferredRewards", "SlowScoring", "apply_score"]


def apply_score(trajectory: Trajectory, result: ScoreResult) -> None:
    """Writes a reward worker's answer into ``trajectory`` (its last turn, or ``unscored``)."""
    if result.score is None:
        trajectory.unscored = result.reason
        return
    request = trajectory.reward_request or {}
    last = trajectory.turns[-1]
    last.reward += result.score
    last.metrics["success"] = result.score >= float(request.get("success_at", 1.0))


class DeferredRewards:
    """Trajectories waiting for their rewards, keyed by whatever the caller tracks them by.

    Args:
        pool: the reward workers.

    Example:
        >>> import ray  # doctest: +SKIP
        >>> from trainer.rewards.pool import RewardPool  # doctest: +SKIP
        >>> deferred = DeferredRewards(RewardPool())  # doctest: +SKIP
        >>> deferred.submit([(key, trajectory)])  # doctest: +SKIP
        >>> deferred.finished(block=True)  # doctest: +SKIP
        [key]
    """

    def __init__(self, pool: RewardPool) -> None:
        self.pool = pool
        self._ids = itertools.count()
        self._waiting: dict[Future, list[tuple[Hashable, Trajectory]]] = {}

    def __len__(self) -> int:
        return sum(len(items) for items in self._waiting.values())

    def submit(self, items: list[tuple[Hashable, Trajectory]]) -> None:
        """Hands the trajectories' requests to the pool at once (those with none are ignored)."""
        from trainer.rewards.pool import ScoreRequest

        items = [(key, t) for key, t in items if t.reward_request is not None]
        if not items:
            return
        requests = [
            ScoreRequest.from_env(next(self._ids), t.reward_request)  # type: ignore[arg-type]
            for _, t in items
        ]
        self._waiting[self.pool.submit(requests)] = items

    def finished(self, block: bool = False) -> list[Hashable]:
        """The keys whose rewards are in (now written into their trajectories).

        Args:
            block: wait until at least one submission is in (if any waits).
        """
        if not self._waiting:
            return []
        done, _ = wait(
            list(self._waiting), timeout=None if block else 0, return_when=FIRST_COMPLETED
        )
        keys = []
        for future in done:
            items = self._waiting.pop(future)
            for (key, trajectory), result in zip(items, _results(future, len(items)), strict=True):
                apply_score(trajectory, result)
                keys.append(key)
        return keys

    def finish_all(self) -> list[Hashable]:
        """Waits for every submission; returns their keys."""
        keys = []
        while self._waiting:
            keys += self.finished(block=True)
        return keys


class SlowScoring(gym.Wrapper):
    """Makes scoring an answer take ``delay_s`` longer, wherever it is scored: a slow verifier
    (a sandbox, a judge on another device) for benchmarks and tests.

    Inline, the step that scores a valid answer and ends the episode sleeps ``delay_s``; with
    ``defer_reward=True``, the step's ``reward_request`` is sent through
    :func:`trainer.rewards.rule.slowed`, which sleeps in the reward worker and returns the real
    rule's score.
    """

    def __init__(self, env: gym.Env, delay_s: float) -> None:
        super().__init__(env)
        self.delay_s = delay_s

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        import time

        obs, reward, terminated, truncated, info = self.env.step(action)
        request = info.get("reward_request")
        if request is not None and request.get("kind") in ("rule", "sandbox"):
            data = {"rule": request["rule"], "delay_s": self.delay_s, **request["data"]}
            info["reward_request"] = {
                **request, "rule": "trainer.rewards.rule:slowed", "data": data,
            }  # fmt: skip
        elif terminated and info["metrics"]["action_is_valid"]:
            time.sleep(self.delay_s)
        return obs, reward, terminated, truncated, info


def _results(future: Future, count: int) -> list[Any]:
    """The future's results, or ``count`` unscored ones naming why the pool failed."""
    from trainer.rewards.pool import ScoreResult

    try:
        return future.result()
    except Exception as error:  # a closed pool: the episodes are unscored, not lost silently
        reason = f"the reward pool failed: {type(error).__name__}: {error}"
        return [ScoreResult(-1, None, reason)] * count
