"""``RolloutScheduler``: groups of episodes over env manager actors, with ROLL's group semantics.

A group runs ``group_size + redundancy`` episodes from one seed, spread over the env manager
actors (the least busy first). Each episode is its own Ray task, so the scheduler sees every
episode the moment it ends. The group is complete when its first ``group_size`` episodes have
ended; the others (stragglers) are cancelled with ``ray.cancel``, which also cancels the
generation request they wait on. An episode cut by the actor's timeout counts as ended, with
``finish_reason="timeout"``, and is counted in :attr:`RolloutScheduler.metrics`.

Asynchronous training: every group is tagged with the weight version it started under.
:meth:`RolloutScheduler.collect` returns only groups at most ``max_staleness`` versions old
(ROLL's ``async_generation_ratio``); older ones, complete or not, are dropped and never trained
on. With ``max_staleness=0`` rollout and training alternate, as in a synchronous trainer.
:meth:`RolloutScheduler.training_step` holds the rule a training loop follows: drop the stale
groups, keep ``max_staleness + 1`` steps' worth of groups running, take the oldest complete.
With ``partial_rollouts`` no group is dropped: its episodes play on under each new version of
the weights, and the staleness bound applies to each token instead (the caller masks the
tokens sampled too long ago; each token's version is in ``Sample.weight_versions``). Dropping
throws away the groups that take longest, so it trains on fewer long episodes than were
played; partial rollouts keep the mix as played.

An episode whose actor raised is played again, on another actor when there is one, up to
``max_retries`` times; after that :meth:`collect` raises with the last error.

With a ``reward_pool``, an ended episode that carries a ``reward_request`` (its env deferred
the scoring) is handed to the reward workers at once, and its group is complete when its
``group_size`` episodes have ended *and* their scores are in
(:mod:`~trainer.rollout.deferred_rewards`); the actors play other episodes meanwhile.

Example:
    >>> scheduler = RolloutScheduler(actors, group_size=4, redundancy=2)  # doctest: +SKIP
    >>> scheduler.submit(seed=7, group_id=0, version=0)  # doctest: +SKIP
    >>> [group] = scheduler.collect(1, version=0)  # doctest: +SKIP
    >>> len(group.trajectories)  # doctest: +SKIP
    4
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trainer.generation.base import SamplingParams
from trainer.rollout.deferred_rewards import DeferredRewards
from trainer.rollout.trajectory import Trajectory

if TYPE_CHECKING:
    from trainer.rewards.pool import RewardPool

__all__ = ["EpisodeFailedError", "Group", "RolloutScheduler"]


class EpisodeFailedError(RuntimeError):
    """An episode failed on every try."""


@dataclass
class Group:
    """A group the scheduler runs; complete once ``group_size`` of its episodes have ended."""

    group_id: int
    seed: int
    version: int
    started_s: float
    sampling: SamplingParams | None = None
    trajectories: list[Trajectory] = field(default_factory=list)
    running: dict[Any, int] = field(default_factory=dict)  # episode ref -> tries so far
    scoring: int = 0  # ended episodes whose rewards are not in yet


class RolloutScheduler:
    """Runs groups of episodes on ``env_actors`` (handles of ``EnvManagerActor`` actors).

    Args:
        env_actors: the env manager actors; episodes go to the one with the fewest running.
        group_size: episodes a complete group hands back.
        redundancy: extra episodes started per group; the slowest are aborted.
        max_staleness: how many weight versions older than the current a group may have
            started under and still be trained on.
        max_retries: times an episode whose actor raised is played again.
        reward_pool: reward workers for the episodes whose envs defer their scoring.
        partial_rollouts: never drop a group for its age: its episodes go on under the new
            weights (see the module docstring).
    """

    def __init__(
        self,
        env_actors: Sequence[Any],
        *,
        group_size: int,
        redundancy: int = 0,
        max_staleness: int = 0,
        max_retries: int = 2,
        reward_pool: RewardPool | None = None,
        partial_rollouts: bool = False,
    ) -> None:
        if not env_actors:
            raise ValueError("RolloutScheduler needs at least one env manager actor")
        if group_size < 1 or redundancy < 0 or max_staleness < 0 or max_retries < 0:
            raise ValueError(
                "group_size must be >= 1 and redundancy, max_staleness, max_retries >= 0; got "
                f"{group_size}, {redundancy}, {max_staleness}, {max_retries}"
            )
        self.env_actors = list(env_actors)
        self.group_size, self.redundancy = group_size, redundancy
        self.max_staleness, self.max_retries = max_staleness, max_retries
        self.partial_rollouts = partial_rollouts
        self._groups: dict[int, Group] = {}
        #: Groups :meth:`training_step` has started (a resumed run sets it to go on from there).
        self.groups_started = 0
        self._owner: dict[Any, tuple[int, int]] = {}  # episode ref -> (group id, actor index)
        self._load = [0] * len(self.env_actors)
        self._deferred = DeferredRewards(reward_pool) if reward_pool is not None else None
        self.metrics = {
            "episodes_finished": 0,
            "episodes_aborted": 0,
            "episodes_timeout": 0,
            "episodes_retried": 0,
            "groups_dropped_stale": 0,
        }

    @property
    def pending_groups(self) -> int:
        """Groups submitted and not yet collected or dropped."""
        return len(self._groups)

    def submit(
        self, seed: int, group_id: int, version: int, sampling: SamplingParams | None = None
    ) -> None:
        """Starts ``group_size + redundancy`` episodes of a group reset with ``seed``
        (``sampling`` replaces the actors' sampling parameters for them)."""
        if group_id in self._groups:
            raise ValueError(f"group {group_id} is already running")
        group = Group(group_id, seed, version, time.monotonic(), sampling)
        self._groups[group_id] = group
        for _ in range(self.group_size + self.redundancy):
            self._start_episode(group, tries=0)

    def collect(self, num_groups: int, version: int, timeout_s: float | None = None) -> list[Group]:
        """Waits for ``num_groups`` complete groups fresh enough for ``version`` and returns
        them, oldest first; stale groups are dropped on the way.

        Raises:
            ValueError: fewer fresh groups are running than asked for.
            TimeoutError: ``timeout_s`` passed first (the groups keep running).
            EpisodeFailedError: an episode failed ``max_retries + 1`` times.
        """
        import ray

        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            self.drop_stale(version)
            self._scores_in(block=False)
            done = [
                g
                for g in self._groups.values()
                if len(g.trajectories) >= self.group_size and g.scoring == 0
            ]
            if len(done) >= num_groups:
                done = sorted(done, key=lambda g: (g.version, g.started_s))[:num_groups]
                for group in done:
                    del self._groups[group.group_id]
                return done
            if len(self._groups) < num_groups:
                raise ValueError(
                    f"asked for {num_groups} groups but only {len(self._groups)} are running"
                )
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if self._deferred is not None and len(self._deferred):
                if not self._owner:  # only scores are awaited
                    self._scores_in(block=True)
                    continue
                left = 0.2 if left is None else min(left, 0.2)  # look at the scores again soon
            ready, _ = ray.wait(list(self._owner), num_returns=1, timeout=left)
            if ready:
                self._episode_ended(ready[0])
            elif deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"no episode ended within {timeout_s} s")

    def training_step(
        self,
        version: int,
        per_step: int,
        seed_of: Callable[[int], int],
        total_groups: int | None = None,
    ) -> list[Group]:
        """One training step's groups, as an asynchronous run plays them.

        Drops the groups too stale for ``version`` (none with ``partial_rollouts``), starts
        groups until ``per_step * (max_staleness + 1)`` are running (the next ``max_staleness``
        steps play ahead while this one trains; with 0, only this step's), then waits for the
        oldest ``per_step`` complete ones. Groups are numbered from 0 in the order started
        (:attr:`groups_started`); group ``n`` is reset with ``seed_of(n)``.

        Args:
            version: the weights' version now (new groups are tagged with it).
            per_step: groups a step trains on.
            seed_of: the reset seed of the ``n``-th group started.
            total_groups: start no more than this many groups in all (``None``: no end); the
                last steps then return what is left, fewer than ``per_step``.

        Returns:
            The complete groups, oldest first (empty once ``total_groups`` are all taken).
        """
        self.drop_stale(version)
        wanted = per_step * (self.max_staleness + 1)
        while self.pending_groups < wanted and (
            total_groups is None or self.groups_started < total_groups
        ):
            number = self.groups_started
            self.submit(seed_of(number), group_id=number, version=version)
            self.groups_started += 1
        take = min(per_step, self.pending_groups)
        return self.collect(take, version) if take else []

    def rollout(self, seeds: Sequence[int], version: int = 0) -> list[Trajectory]:
        """Synchronous use: one group per seed (ids ``0..``), all trajectories in seed order."""
        for group_id, seed in enumerate(seeds):
            self.submit(seed, group_id, version)
        groups = sorted(self.collect(len(seeds), version), key=lambda g: g.group_id)
        return [t for g in groups for t in g.trajectories]

    def cancel_all(self) -> None:
        """Aborts every running episode and forgets every group."""
        for group in list(self._groups.values()):
            self._abort(group)
        self._groups.clear()

    def _start_episode(self, group: Group, tries: int, avoid: int | None = None) -> None:
        everyone = range(len(self.env_actors))
        candidates = [i for i in everyone if i != avoid] or list(everyone)
        actor = min(candidates, key=lambda i: self._load[i])
        ref = self.env_actors[actor].run_episode.remote(group.seed, group.group_id, group.sampling)
        group.running[ref] = tries
        self._owner[ref] = (group.group_id, actor)
        self._load[actor] += 1

    def _episode_ended(self, ref: Any) -> None:
        import ray

        group_id, actor = self._owner.pop(ref)
        self._load[actor] -= 1
        group = self._groups[group_id]
        tries = group.running.pop(ref)
        try:
            trajectory = ray.get(ref)
        except ray.exceptions.TaskCancelledError:
            return
        except Exception as error:
            if tries >= self.max_retries:
                self._abort(group)
                del self._groups[group_id]
                cause = getattr(error, "cause", None) or error  # a RayTaskError wraps it
                raise EpisodeFailedError(
                    f"an episode of group {group_id} (seed {group.seed}) failed "
                    f"{tries + 1} times; last error: {type(cause).__name__}: {cause}"
                ) from error
            self.metrics["episodes_retried"] += 1
            self._start_episode(group, tries + 1, avoid=actor)
            return
        group.trajectories.append(trajectory)
        if self._deferred is not None and trajectory.reward_request is not None:
            group.scoring += 1
            self._deferred.submit([(group_id, trajectory)])
        self.metrics["episodes_finished"] += 1
        if trajectory.finish_reason == "timeout":
            self.metrics["episodes_timeout"] += 1
        if len(group.trajectories) >= self.group_size:
            self._abort(group)

    def _scores_in(self, block: bool) -> None:
        """Counts the scores that came back against their groups (a group dropped meanwhile
        is gone: its scores are ignored)."""
        if self._deferred is None:
            return
        for group_id in self._deferred.finished(block=block):
            group = self._groups.get(group_id)  # type: ignore[call-overload]
            if group is not None:
                group.scoring -= 1

    def _abort(self, group: Group) -> None:
        import ray

        for ref in list(group.running):
            ray.cancel(ref)
            _, actor = self._owner.pop(ref)
            self._load[actor] -= 1
            self.metrics["episodes_aborted"] += 1
        group.running.clear()

    def drop_stale(self, version: int) -> None:
        """Drops (and aborts) every group started more than ``max_staleness`` versions before
        ``version`` (none with ``partial_rollouts``)."""
        if self.partial_rollouts:
            return
        for group in list(self._groups.values()):
            if version - group.version > self.max_staleness:
                self._abort(group)
                del self._groups[group.group_id]
                self.metrics["groups_dropped_stale"] += 1
