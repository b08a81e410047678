"""``RolloutScheduler`` over real Ray actors: group completion, stragglers, timeouts, staleness
and retries. Episodes run on ``EnvManagerActor`` actors against a ``GeneratorActor`` serving the
tiny random model, on a local Ray cluster started for this module."""

from __future__ import annotations

import time

import gymnasium as gym
import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("torch")

from rollenv.wrappers import Latency  # noqa: E402
from trainer.generation.actor import GeneratorActor  # noqa: E402
from trainer.generation.base import SamplingParams  # noqa: E402
from trainer.rollout.env_actor import launch_env_managers  # noqa: E402
from trainer.rollout.scheduler import EpisodeFailedError, RolloutScheduler  # noqa: E402

SAMPLING = SamplingParams(max_new_tokens=6, temperature=1.0)


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    generator = ray.remote(num_cpus=0)(GeneratorActor).remote("tiny-random")
    yield generator
    ray.shutdown()


class SlowEveryOther:
    """Wraps the envs an actor makes: the 2nd, 4th, ... sleep ``delay_s`` in every step."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s, self.made = delay_s, 0

    def __call__(self, env: gym.Env) -> gym.Env:
        self.made += 1
        return Latency(env, delay_s=self.delay_s) if self.made % 2 == 0 else env


class ResetFails(gym.Wrapper):
    def reset(self, **kwargs):
        raise RuntimeError("reset failed on purpose")


class FirstEnvFails:
    """The first env an actor makes fails on reset; the rest work."""

    def __init__(self) -> None:
        self.made = 0

    def __call__(self, env: gym.Env) -> gym.Env:
        self.made += 1
        return ResetFails(env) if self.made == 1 else env


def _actors(generator, count=1, **kwargs):
    options = {"max_envs": 4, "max_turns": 3, "sampling": SAMPLING, **kwargs}
    return launch_env_managers(count, "Sokoban-v0", "tiny-random", generator, **options)


def _wait_for(predicate, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_groups_come_back_complete_from_one_seed(cluster):
    scheduler = RolloutScheduler(_actors(cluster, count=2), group_size=3)
    trajectories = scheduler.rollout([5, 6])
    assert [t.group_id for t in trajectories] == [0, 0, 0, 1, 1, 1]
    assert [t.seed for t in trajectories] == [5, 5, 5, 6, 6, 6]
    assert all(len(t.turns) == 3 and t.finish_reason == "max_turns" for t in trajectories)
    assert all(t.samples and any(t.samples[0].loss_mask) for t in trajectories)
    assert scheduler.metrics["episodes_finished"] == 6
    assert scheduler.pending_groups == 0


def test_redundant_stragglers_are_aborted_and_their_requests_cancelled(cluster):
    # 4 episodes of one group on one actor: envs 1 and 3 are fast, envs 2 and 4 take 1 s a step
    [actor] = _actors(cluster, wrap=SlowEveryOther(delay_s=1.0))
    scheduler = RolloutScheduler([actor], group_size=2, redundancy=2)
    scheduler.submit(seed=3, group_id=0, version=0)
    [group] = scheduler.collect(1, version=0)
    assert len(group.trajectories) == 2
    assert all(t.finish_reason == "max_turns" for t in group.trajectories)
    assert scheduler.metrics["episodes_aborted"] == 2
    # the actor cut both slow episodes (after their step in flight landed) rather than
    # playing their remaining turns
    assert _wait_for(lambda: ray.get(actor.get_stats.remote())["aborted"] == 2, timeout_s=10)
    stats = ray.get(actor.get_stats.remote())
    assert stats["episodes"] == 2 and stats["running"] == 0


def test_an_episode_past_the_timeout_is_truncated_and_counted(cluster):
    [actor] = _actors(cluster, wrap=lambda env: Latency(env, delay_s=0.6), episode_timeout_s=1.0)
    scheduler = RolloutScheduler([actor], group_size=2)
    [first, second] = scheduler.rollout([9])
    assert first.finish_reason == second.finish_reason == "timeout"
    assert 1 <= len(first.turns) < 3  # what was played before the cut is kept
    assert first.samples and len(first.samples[0].token_ids) > 0
    assert scheduler.metrics["episodes_timeout"] == 2


def test_groups_older_than_the_staleness_bound_are_dropped(cluster):
    scheduler = RolloutScheduler(_actors(cluster), group_size=2, max_staleness=1)
    scheduler.submit(seed=1, group_id=10, version=0)
    scheduler.submit(seed=2, group_id=11, version=1)
    scheduler.submit(seed=3, group_id=12, version=2)
    groups = scheduler.collect(2, version=2)  # version 0 is 2 steps old: never trained on
    assert sorted(g.group_id for g in groups) == [11, 12]
    assert scheduler.metrics["groups_dropped_stale"] == 1
    assert scheduler.pending_groups == 0
    with pytest.raises(ValueError, match="only 0 are running"):
        scheduler.collect(1, version=2)


def test_a_training_step_keeps_the_next_steps_playing_and_drops_what_grew_too_stale(cluster):
    scheduler = RolloutScheduler(_actors(cluster), group_size=2, max_staleness=1)
    seeds = []

    def seed_of(number):
        seeds.append(number)
        return 100 + number

    first = scheduler.training_step(version=0, per_step=2, seed_of=seed_of)
    # this step's 2 groups and the next step's 2 started, under version 0
    assert seeds == [0, 1, 2, 3] and scheduler.groups_started == 4
    assert len(first) == 2 and all(g.version == 0 for g in first)
    assert all(g.seed == 100 + g.group_id for g in first)
    assert scheduler.pending_groups == 2
    # two versions on, the groups left from version 0 are too stale: dropped and replaced
    second = scheduler.training_step(version=2, per_step=2, seed_of=seed_of)
    assert scheduler.metrics["groups_dropped_stale"] == 2
    assert seeds == [0, 1, 2, 3, 4, 5, 6, 7]
    assert {g.group_id for g in second} <= {4, 5, 6, 7} and all(g.version == 2 for g in second)
    scheduler.cancel_all()


def test_training_steps_end_with_what_is_left_of_a_fixed_number_of_groups(cluster):
    scheduler = RolloutScheduler(_actors(cluster), group_size=2, max_staleness=1)
    taken = []
    while groups := scheduler.training_step(0, per_step=2, seed_of=lambda n: n, total_groups=5):
        taken.append(sorted(g.group_id for g in groups))
    assert [len(step) for step in taken] == [2, 2, 1]
    assert sorted(i for step in taken for i in step) == [0, 1, 2, 3, 4]


def test_a_failed_episode_is_played_again(cluster):
    scheduler = RolloutScheduler(_actors(cluster, wrap=FirstEnvFails()), group_size=2)
    trajectories = scheduler.rollout([4])
    assert len(trajectories) == 2 and all(t.seed == 4 for t in trajectories)
    assert scheduler.metrics["episodes_retried"] == 1


def test_an_episode_failing_every_try_is_reported(cluster):
    actors = _actors(cluster, wrap=ResetFails)
    scheduler = RolloutScheduler(actors, group_size=1, max_retries=2)
    message = "failed 3 times; last error: RuntimeError: reset failed on purpose$"
    with pytest.raises(EpisodeFailedError, match=message):
        scheduler.rollout([4])
    assert scheduler.metrics["episodes_retried"] == 2
    assert scheduler.pending_groups == 0


def test_a_killed_env_actor_is_restarted_and_its_episodes_played_again(cluster):
    [actor] = _actors(cluster, wrap=lambda env: Latency(env, delay_s=0.5))
    scheduler = RolloutScheduler([actor], group_size=3, max_retries=0)
    scheduler.submit(seed=2, group_id=0, version=0)
    assert _wait_for(lambda: ray.get(actor.get_stats.remote())["running"] == 3)
    ray.kill(actor, no_restart=False)
    [group] = scheduler.collect(1, version=0)
    assert len(group.trajectories) == 3
    assert all(t.seed == 2 and t.finish_reason == "max_turns" for t in group.trajectories)
    assert scheduler.metrics["episodes_finished"] == 3
    # Ray sent the three calls again to the restarted actor, which played them from the start
    assert ray.get(actor.get_stats.remote())["episodes"] == 3
    assert scheduler.pending_groups == 0


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="at least one env manager actor"):
        RolloutScheduler([], group_size=2)
    with pytest.raises(ValueError, match="redundancy, max_staleness, max_retries >= 0"):
        RolloutScheduler([object()], group_size=2, redundancy=-1)


def test_an_env_actor_restarts_long_after_it_started(cluster):
    import gc

    [actor] = _actors(cluster)
    scheduler = RolloutScheduler([actor], group_size=2)
    assert len(scheduler.rollout([6])) == 2  # the actor is up: Ray may free its arguments now
    gc.collect()
    ray.kill(actor, no_restart=False)
    # the restarted actor is built from the same (2 MB) tokenizer argument again
    trajectories = scheduler.rollout([7])
    assert [t.seed for t in trajectories] == [7, 7]
