"""A random tiny model learns an env of the hub with RL, with two algorithms.

The task: FrozenLake on a fixed 3x3 lake with a hole in the middle, six moves. A random policy
reaches the goal in about 3% of episodes. Replies are constrained to the four action words (one
token each), so the signal is the task itself, not the answer format. Each algorithm must take
the greedy policy's success from near zero to at least 0.6; time is printed, not asserted.
"""

from __future__ import annotations

import time

import pytest

from trainer.config import load_config
from trainer.training.pipeline import Pipeline

LAKE = "[SFF, FHF, FFG]"
MAX_STEPS = 40
TARGET = 0.6


def _pipeline(algorithm: str, context: str, output) -> Pipeline:
    config = load_config(
        None,
        [
            "model.name=tiny-random",
            "model.lora=null",
            "env.id=FrozenLake-v0",
            f"env.kwargs={{desc: {LAKE}, answer_format: {{tag: null}}}}",
            "env.constrain_to_actions=true",
            f"env.context={context}",
            "env.window=0",
            "env.group_size=16",
            "env.groups_per_step=2",
            "env.max_turns=6",
            "sampling.max_new_tokens=1",
            f"algorithm.name={algorithm}",
            "optim.lr=3e-3",
            f"train.steps={MAX_STEPS}",
            "train.eval_groups=4",
            "train.loggers=[jsonl]",
            f"train.output_dir={output}",
        ],
    )
    return Pipeline(config, log=None)


@pytest.mark.slow
@pytest.mark.parametrize(("algorithm", "context"), [("grpo", "full"), ("gigpo", "window")])
def test_tiny_random_model_learns_frozenlake(algorithm, context, tmp_path):
    pipeline = _pipeline(algorithm, context, tmp_path)
    started = time.perf_counter()
    before = pipeline.evaluate()["eval/success"]
    # the sampled policy before training, on 128 episodes (one step's 32 vary too much: 1/32
    # and 5/32 have both been drawn)
    untrained = pipeline.rollouts.manager.rollout(list(range(10_000, 10_008)))
    sampled_before = sum(t.success for t in untrained) / len(untrained)
    history = []
    while pipeline.step < MAX_STEPS:
        pipeline.train_step()
        if pipeline.step % 3 == 0:
            history.append((pipeline.step, pipeline.evaluate()["eval/success"]))
            if history[-1][1] >= TARGET:
                break
    seconds = time.perf_counter() - started
    print(
        f"{algorithm}: greedy success {before:.2f} -> {history[-1][1]:.2f} "
        f"in {pipeline.step} steps, {seconds:.0f} s; evaluations {history}"
    )
    assert before == 0.0 and sampled_before < 0.1, "the task must start near zero"
    assert history[-1][1] >= TARGET
