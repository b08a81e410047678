"""``GeneratorFleet`` on a real local Ray cluster: bucketed weight pushes, sticky routing of an
episode's turns to one replica, and a killed replica restarted with the newest weights."""

from __future__ import annotations

import os
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ray = pytest.importorskip("ray")
torch = pytest.importorskip("torch")

from trainer.generation import make_generator  # noqa: E402
from trainer.generation.base import SamplingParams  # noqa: E402
from trainer.generation.fleet import GeneratorFleet, weight_buckets  # noqa: E402
from trainer.models import load_model  # noqa: E402
from trainer.rollout.env_actor import launch_env_managers  # noqa: E402
from trainer.rollout.scheduler import RolloutScheduler  # noqa: E402

GREEDY = SamplingParams(max_new_tokens=8, temperature=0.0)
PROMPTS = [[1, 2, 3, 4], [40, 41, 42]]


@settings(max_examples=50, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 600), min_size=1, max_size=12),
    bucket_floats=st.integers(1, 1000),
)
def test_buckets_hold_every_weight_once_in_order_and_within_the_size(sizes, bucket_floats):
    state = {f"w{i}": torch.zeros(n) for i, n in enumerate(sizes)}
    buckets = weight_buckets(state, bucket_mb=bucket_floats * 4 / 2**20)
    assert [name for bucket in buckets for name in bucket] == list(state)
    for bucket in buckets:
        total = sum(t.numel() for t in bucket.values())
        assert len(bucket) == 1 or total <= bucket_floats  # only a lone big tensor may overflow


@pytest.fixture(scope="module")
def ray_cluster():
    # one GPU declared even where there is none: Ray places by the resource it is told of
    ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _local_greedy(seed: int) -> list[list[int]]:
    model, tokenizer = load_model("tiny-random", seed=seed)
    generator = make_generator("continuous", model, tokenizer)
    return [out.token_ids for out in generator.generate(PROMPTS, GREEDY)]


def _fleet_greedy(replica) -> list[list[int]]:
    return [out.token_ids for out in ray.get([replica.generate.remote(p, GREEDY) for p in PROMPTS])]


def _pid(replica) -> int:
    return ray.get(replica.__ray_call__.remote(lambda _self: os.getpid()))


def _kill_and_wait_for_restart(replica, timeout_s: float = 120.0) -> None:
    # ray.kill only asks: calls made right after it may still reach the old process
    old_pid = _pid(replica)
    ray.kill(replica, no_restart=False)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if _pid(replica) != old_pid:
                return
        except ray.exceptions.RayActorError:
            pass  # between the old process and the new one
        time.sleep(0.2)
    raise AssertionError(f"the replica was not restarted within {timeout_s:.0f} s")


def test_pushed_buckets_replace_the_weights_and_survive_a_replica_restart(ray_cluster):
    fleet = GeneratorFleet("tiny-random", replicas=2, bucket_mb=0.5, num_cpus=0, seed=0)
    try:
        before, after = _local_greedy(seed=0), _local_greedy(seed=1)
        assert before != after  # the two weight sets must be told apart by their replies
        assert [_fleet_greedy(r) for r in fleet.replicas] == [before, before]

        new_weights = load_model("tiny-random", seed=1)[0].state_dict()
        buckets = fleet.push_weights(new_weights, version=1)
        assert buckets > 1  # 6.8M parameters in 0.5 MB buckets
        assert [_fleet_greedy(r) for r in fleet.replicas] == [after, after]

        _kill_and_wait_for_restart(fleet.replicas[0])  # Ray restarts it: built from seed 0 ...
        assert _fleet_greedy(fleet.replicas[0]) == after  # ... yet it serves the pushed weights
        stats = ray.get(fleet.replicas[0].get_stats.remote())
        assert stats["version"] == 1
        assert stats["requests"] == len(PROMPTS)  # a new process: only the requests since
    finally:
        fleet.shutdown()


def test_all_turns_of_an_episode_go_to_one_replica(ray_cluster):
    fleet = GeneratorFleet("tiny-random", replicas=2, num_cpus=0)
    actors = launch_env_managers(
        2,
        "Sokoban-v0",
        "tiny-random",
        fleet.replicas,
        num_cpus=0,
        max_envs=4,
        max_turns=3,
        sampling=SamplingParams(max_new_tokens=6, temperature=1.0),
    )
    try:
        scheduler = RolloutScheduler(actors, group_size=4)
        trajectories = scheduler.rollout(seeds=[3, 4, 5])
        used = [t.generator_replica for t in trajectories]
        assert set(used) == {0, 1}  # each actor spreads its episodes over both replicas
        requests = [s["requests"] for s in fleet.stats()]
        turns_on = [
            sum(len(t.turns) for t in trajectories if t.generator_replica == r) for r in (0, 1)
        ]
        assert requests == turns_on  # every request of an episode went to its own replica
    finally:
        for actor in actors:
            ray.kill(actor, no_restart=True)
        fleet.shutdown()


def test_a_replica_given_a_gpu_generates_on_it_or_says_why_it_cannot(ray_cluster):
    fleet = GeneratorFleet("tiny-random", replicas=1, num_cpus=0, num_gpus=1)
    try:
        if torch.cuda.is_available():
            outputs = ray.get(
                [fleet.replicas[0].generate.remote(p, GREEDY) for p in PROMPTS], timeout=300
            )
            assert [len(out.token_ids) for out in outputs] == [8, 8]
        else:  # placed on the declared GPU, where torch (a CPU build) sees none
            with pytest.raises(ray.exceptions.RayActorError) as error:
                ray.get(fleet.replicas[0].get_stats.remote(), timeout=300)
            assert (
                "rollout.generator_gpus > 0, but torch in this generator actor sees no CUDA GPU"
                in str(error.value)
            )
    finally:
        fleet.shutdown()
