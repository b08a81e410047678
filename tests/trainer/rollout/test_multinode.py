"""Two Ray nodes on this machine (``ray.cluster_utils.Cluster``): env manager actors placed on
the second node play groups for a generator on the head node."""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("torch")

from ray.cluster_utils import Cluster  # noqa: E402

from trainer.generation.actor import GeneratorActor  # noqa: E402
from trainer.generation.base import SamplingParams  # noqa: E402
from trainer.rollout.env_actor import launch_env_managers  # noqa: E402
from trainer.rollout.scheduler import RolloutScheduler  # noqa: E402


@pytest.fixture
def two_nodes():
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    second = cluster.add_node(num_cpus=1, resources={"env_node": 1})
    ray.init(address=cluster.address, log_to_driver=False)
    yield second
    ray.shutdown()
    cluster.shutdown()


def test_env_actors_on_the_second_node_play_for_the_head_nodes_generator(two_nodes):
    head = ray.get_runtime_context().get_node_id()
    generator = ray.remote(num_cpus=0)(GeneratorActor).remote("tiny-random")
    actors = launch_env_managers(
        2,
        "Sokoban-v0",
        "tiny-random",
        generator,
        actor_options={"resources": {"env_node": 0.5}},
        max_turns=2,
        sampling=SamplingParams(max_new_tokens=4),
    )
    trajectories = RolloutScheduler(actors, group_size=2).rollout([3, 4])
    assert [t.seed for t in trajectories] == [3, 3, 4, 4]
    assert all(len(t.turns) == 2 for t in trajectories)
    nodes = {ray.get(a.get_stats.remote())["node_id"] for a in actors}
    assert nodes == {two_nodes.node_id}
    assert two_nodes.node_id != head
