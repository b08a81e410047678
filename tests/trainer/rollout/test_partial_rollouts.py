"""Partial rollouts keep the long episodes: on a mixture of short and long episodes, the share
of long ones among the trained groups equals their share among those played, where dropping
the groups older than the staleness bound trains on fewer of them. Real Ray actors: env
managers playing Sokoban-v0 against a ``GeneratorActor`` (tiny random model) that is sent a
new weight version after every simulated update, as ``RayRollouts`` drives them."""

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
from trainer.rollout.ray_rollouts import mask_stale_tokens  # noqa: E402
from trainer.rollout.scheduler import RolloutScheduler  # noqa: E402

SHORT_TURNS, LONG_TURNS = 2, 10
GROUPS, PER_STEP, BOUND = 16, 2, 1  # groups played, groups an update, async_generation_ratio
UPDATE_S = 0.3  # the simulated update, between collecting a step's groups and the new weights


def _is_long(seed: int) -> bool:
    return seed % 4 == 3  # one group in four


class EndsBySeed(gym.Wrapper):
    """An episode ends after ``LONG_TURNS`` steps if its seed is a long one, else after
    ``SHORT_TURNS`` (the rewards and observations stay Sokoban's)."""

    def reset(self, *, seed=None, options=None):
        self.limit = LONG_TURNS if _is_long(seed) else SHORT_TURNS
        self.steps = 0
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        return obs, reward, terminated, truncated or self.steps >= self.limit, info


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _train(partial: bool) -> tuple[list, int]:
    """Plays ``GROUPS`` groups (seeds 0, 1, 2, ...: a quarter of them long) as an asynchronous run
    does: groups of the next ``BOUND`` steps start ahead, each step collects ``PER_STEP``
    complete groups, then a new weight version goes to the generator. Returns the collected
    (trained) groups and the version at the end."""
    generator = ray.remote(num_cpus=0)(GeneratorActor).remote("tiny-random")
    [actor] = launch_env_managers(
        1,
        "Sokoban-v0",
        "tiny-random",
        generator,
        max_envs=16,
        max_turns=LONG_TURNS,
        sampling=SamplingParams(max_new_tokens=4, temperature=1.0),
        wrap=lambda env: EndsBySeed(Latency(env, delay_s=0.15)),
    )
    scheduler = RolloutScheduler(
        [actor], group_size=2, max_staleness=BOUND, partial_rollouts=partial
    )
    trained, version = [], 0
    while groups := scheduler.training_step(version, PER_STEP, lambda n: n, GROUPS):
        trained += groups
        time.sleep(UPDATE_S)
        version += 1
        ray.get(generator.update_weights.remote([ray.put({})], version))
    ray.kill(actor)
    ray.kill(generator)
    return trained, version


def _long_share(groups: list) -> float:
    return sum(_is_long(g.seed) for g in groups) / len(groups)


def test_partial_rollouts_train_on_the_long_episodes_as_played_where_dropping_loses_them(cluster):
    played_share = 0.25  # seeds 0 .. GROUPS - 1: one in four is long
    dropped, _ = _train(partial=False)
    kept, last_version = _train(partial=True)

    assert sorted(g.group_id for g in kept) == list(range(GROUPS))  # every group trained
    assert _long_share(kept) == played_share
    assert len(dropped) < GROUPS and _long_share(dropped) < played_share
    print(
        f"long share: played {played_share}, partial {_long_share(kept)}, "
        f"dropped {_long_share(dropped)} ({len(dropped)} of {GROUPS} groups trained)"
    )

    # a long episode played on across the weight updates: its tokens carry several versions,
    # each its turn's
    long_episodes = [t for g in kept if _is_long(g.seed) for t in g.trajectories]
    spans = []
    for episode in long_episodes:
        sample = episode.samples[0]
        of_token = list(zip(sample.weight_versions, sample.turn_of_token, strict=True))
        for turn in range(len(episode.turns)):
            assert len({v for v, t in of_token if t == turn}) == 1
        spans.append(len({v for v, t in of_token if t >= 0}))
    assert max(spans) >= 2

    # the bound applies to each token: those sampled more than BOUND versions ago are masked
    stats = mask_stale_tokens(long_episodes, last_version, BOUND)
    assert stats["rollout/token_staleness_max"] > BOUND
    assert 0 < stats["rollout/stale_tokens_masked"] < 1
    for episode in long_episodes:
        sample = episode.samples[0]
        rows = zip(sample.weight_versions, sample.loss_mask, sample.turn_of_token, strict=True)
        for v, m, turn in rows:
            if turn >= 0:
                assert m == (last_version - v <= BOUND)
