"""``benchmarks/learning_sokoban.py --arms "RL only"`` builds only the RL-only preset, so an
override that the main preset (here ``sokoban-sft-raft``, unconstrained replies) refuses but
the RL-only preset takes is accepted."""

from __future__ import annotations

import pytest

from trainer.config import ConfigError, load_config

ONLY_FOR_CONSTRAINED = "algorithm.score_actions_only=true"


@pytest.fixture
def script(load_script):
    return load_script("learning_sokoban")


def test_the_main_preset_refuses_the_override_the_rl_only_preset_takes():
    with pytest.raises(ConfigError, match="constrain_to_actions"):
        load_config("sokoban-sft-raft", [ONLY_FOR_CONSTRAINED])
    assert load_config("sokoban-rl-only", [ONLY_FOR_CONSTRAINED]).algorithm.score_actions_only


def test_rl_only_alone_skips_the_main_preset(script, tmp_path):
    args = script.parse_args(
        ["--arms", "RL only", "--set", ONLY_FOR_CONSTRAINED, "--runs-dir", str(tmp_path)]
    )
    assert script.main_config(args) is None
    arm = script.parse_args(
        ["--run-arm", "RL only", "--set", ONLY_FOR_CONSTRAINED, "--runs-dir", str(tmp_path)]
    )
    assert script.main_config(arm) is None


def test_any_other_arm_still_checks_the_overrides_against_the_main_preset(script, tmp_path):
    both = ["--arms", "RL only", "SFT only", "--preset", "sokoban-sft-raft"]
    both += ["--set", ONLY_FOR_CONSTRAINED]
    args = script.parse_args([*both, "--runs-dir", str(tmp_path)])
    with pytest.raises(ConfigError, match="constrain_to_actions"):
        script.main_config(args)
    plain = script.parse_args(["--runs-dir", str(tmp_path)])
    assert script.main_config(plain).env.id == "SimpleSokoban-v0"


def test_the_evaluator_plays_the_presets_eval_kwargs(script):
    from types import SimpleNamespace

    config = load_config(
        "sokoban-rl-only",
        ["env.kwargs.max_solution_length=4", "env.eval_kwargs={max_solution_length: 10}"],
    )
    evaluator = SimpleNamespace(config=config)  # env_kwargs reads only the config
    own = script.Evaluator.env_kwargs(evaluator, "SimpleSokoban-v0")
    assert own["max_solution_length"] == 10
    assert own["cell_separator"] == config.env.kwargs["cell_separator"]
    # another family gets the answer format only, as before
    assert script.Evaluator.env_kwargs(evaluator, "FrozenLake-v0") == {
        "answer_format": config.env.kwargs["answer_format"]
    }


def test_evaluation_success_is_split_by_the_boards_shortest_solution(script):
    import rollenv
    from rollenv.policies import oracle_for
    from trainer.models import load_tokenizer
    from trainer.rollout.env_manager import EnvManager

    manager = EnvManager(
        "SimpleSokoban-v0", load_tokenizer("tiny-random"), None, group_size=1, max_turns=10
    )
    seeds = list(range(12))
    solved = manager.rollout(seeds, policy=oracle_for)
    lengths = [
        rollenv.make("SimpleSokoban-v0").reset(seed=s)[1]["optimal_plan_length"] for s in seeds
    ]
    by_length = script.success_by_optimal_length(manager, solved)
    assert list(by_length) == [str(n) for n in sorted(set(lengths))]
    assert {n: row["episodes"] for n, row in by_length.items()} == {
        str(n): lengths.count(n) for n in set(lengths)
    }
    assert all(row["success"] == 1.0 for row in by_length.values())
    # an env whose reset does not report the length gets no split
    lake = EnvManager("FrozenLake-v0", load_tokenizer("tiny-random"), None, group_size=1)
    assert script.success_by_optimal_length(lake, lake.rollout([0], policy=oracle_for)) == {}
