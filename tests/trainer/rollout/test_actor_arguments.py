"""The restartable actors of a Ray rollout (generator replicas, env managers) get plain data as
constructor arguments: Ray's core worker then logs no error line when they start, and a
restarted env manager still finds its tokenizer and generators."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("ray")

# a fresh interpreter: Ray's core worker logs the line only for the first such actor a
# process starts, so a process that had started one before would hide it
SCRIPT = textwrap.dedent(
    """
    import ray
    from trainer.generation.base import SamplingParams
    from trainer.generation.fleet import GeneratorFleet
    from trainer.rollout.env_actor import launch_env_managers
    from trainer.rollout.scheduler import RolloutScheduler

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    fleet = GeneratorFleet("tiny-random", replicas=1, num_cpus=0)
    sampling = SamplingParams(max_new_tokens=4, temperature=1.0)
    options = {"max_envs": 2, "max_turns": 2, "sampling": sampling}
    [actor] = launch_env_managers(1, "Sokoban-v0", "tiny-random", fleet.replicas, **options)
    scheduler = RolloutScheduler([actor], group_size=2)
    print("BEFORE", len(scheduler.rollout([3])), flush=True)
    ray.kill(actor, no_restart=False)
    print("AFTER", [t.seed for t in scheduler.rollout([4])], flush=True)
    ray.shutdown()
    """
)


def test_restartable_actors_start_without_rays_error_line_and_restart_whole():
    ran = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert ran.returncode == 0, ran.stderr
    assert "BEFORE 2" in ran.stdout
    assert "AFTER [4, 4]" in ran.stdout  # the restarted actor read its directory again
    assert "constructor arguments in the object store" not in ran.stderr
