"""Training on a mix of envs (``env.mix``): config, per-env metrics, one real pipeline step."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest

from rollenv.mixture import MixtureEnv
from trainer.config import ConfigError, load_config
from trainer.rollout.metrics import rollout_metrics
from trainer.rollout.seeds import step_seeds
from trainer.rollout.trajectory import Trajectory, Turn
from trainer.training.pipeline import Pipeline

# two cheap envs with the same action words, replies constrained to them (as test_pipeline's BASE)
MIX = {
    "FrozenLake-v0": {
        "ratio": 0.5,
        "kwargs": {"desc": ["SF", "FG"], "answer_format": {"tag": None}},
    },
    "SimpleSokoban-v0": {"ratio": 0.5, "kwargs": {"answer_format": {"tag": None}}},
}
GROUP_SIZE, GROUPS = 2, 4
BASE = [
    "model.name=tiny-random",
    "model.lora=null",
    f"env.mix={json.dumps(MIX)}",
    "env.constrain_to_actions=true",
    f"env.group_size={GROUP_SIZE}",
    f"env.groups_per_step={GROUPS}",
    "env.max_turns=2",
    "sampling.max_new_tokens=1",
    "train.loggers=[jsonl]",
    "train.eval_groups=8",
]


def _members(seeds: list[int]) -> Counter[str]:
    chooser = MixtureEnv(MIX)
    return Counter(chooser.member_for_seed(seed) for seed in seeds)


def test_env_mix_trains_on_mixture_v0_with_the_members_kwargs():
    env = load_config(None, BASE).env
    assert env.id == "Mixture-v0"
    assert env.make_kwargs == {"mix": MIX}
    # a dumped config (checkpoint's config.json) loads back to the same env
    again = load_config(None, [f"env.mix={json.dumps(MIX)}", "env.id=Mixture-v0"]).env
    assert again.make_kwargs == env.make_kwargs


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["env.id=FrozenLake-v0"], "env.mix trains on Mixture-v0 and ignores env.id"),
        (["env.kwargs={max_actions: 3}"], "with env.mix give a member's kwargs"),
        (["env.mix={}"], "env.mix: must map env ids to ratios"),
        (["env.mix={FrozenLake-v0: 0}"], "env.mix: 'FrozenLake-v0' must be a ratio > 0"),
    ],
)
def test_a_bad_mix_config_names_the_field(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, [f"env.mix={json.dumps(MIX)}", *overrides])


def _trajectory(env_id: str, reward: float, success: bool) -> Trajectory:
    trajectory = Trajectory(env_id, seed=0, group_id=0, finish_reason="terminated")
    metrics = {"success": success, "action_is_valid": True, "action_is_effective": True}
    trajectory.turns.append(Turn("Up", reward, "", metrics, 10, 1))
    return trajectory


def test_rollout_metrics_split_by_env_only_for_a_mix():
    single = rollout_metrics([_trajectory("FrozenLake-v0", 1.0, True)] * 2, "rollout")
    assert not any(key.count("/") > 1 for key in single)
    mixed = [
        _trajectory("FrozenLake-v0", 1.0, True),
        _trajectory("FrozenLake-v0", 0.0, False),
        _trajectory("SimpleSokoban-v0", -0.5, False),
    ]
    metrics = rollout_metrics(mixed, "rollout")
    assert metrics["rollout/FrozenLake-v0/episodes"] == 2
    assert metrics["rollout/FrozenLake-v0/success"] == 0.5
    assert metrics["rollout/FrozenLake-v0/return"] == 0.5
    assert metrics["rollout/SimpleSokoban-v0/episodes"] == 1
    assert metrics["rollout/SimpleSokoban-v0/return"] == -0.5


def test_one_pipeline_step_on_a_mix_reports_each_env(tmp_path):
    # a run seed whose first step's groups land in both envs, found from the mixture's own rule
    seed = next(s for s in range(100) if len(_members(step_seeds(s, 1, GROUPS))) == 2)
    expected = _members(step_seeds(seed, 1, GROUPS))
    config = load_config(None, [*BASE, f"train.seed={seed}", f"train.output_dir={tmp_path}"])
    pipeline = Pipeline(config, log=None)
    metrics = pipeline.train_step()
    assert all(math.isfinite(v) for v in metrics.values())
    episodes = {env_id: metrics[f"rollout/{env_id}/episodes"] for env_id in MIX}
    assert episodes == {env_id: GROUP_SIZE * expected[env_id] for env_id in MIX}
    assert sum(episodes.values()) == GROUP_SIZE * GROUPS
    # the per-env returns and successes average back to the step's
    for name in ("return", "success"):
        weighted = sum(metrics[f"rollout/{e}/{name}"] * n for e, n in episodes.items())
        assert weighted / (GROUP_SIZE * GROUPS) == pytest.approx(metrics[f"rollout/{name}"])

    evaluation = pipeline.evaluate()
    eval_members = _members(list(range(8)))  # greedy, one episode per held-out seed
    assert len(eval_members) == 2
    for env_id, groups in eval_members.items():
        assert evaluation[f"eval/{env_id}/episodes"] == groups


def test_rollout_metrics_leave_unscored_episodes_out_of_success_and_return():
    unscored = _trajectory("FrozenLake-v0", 0.0, False)
    unscored.unscored = "the judge timed out"
    mixed = [
        _trajectory("FrozenLake-v0", 1.0, True),
        unscored,
        _trajectory("SimpleSokoban-v0", -0.5, False),
        _trajectory("SimpleSokoban-v0", 0.5, False),
    ]
    metrics = rollout_metrics(mixed, "rollout")
    assert metrics["rollout/unscored"] == 0.25
    assert metrics["rollout/success"] == pytest.approx(1 / 3)
    assert metrics["rollout/FrozenLake-v0/success"] == 1.0  # the scored one only
    assert metrics["rollout/FrozenLake-v0/episodes"] == 2
    assert metrics["rollout/SimpleSokoban-v0/return"] == 0.0
