"""Self-play training: one step on both seats, the matches against fixed players, the solver's
warm start, the command line, and the settings self-play refuses."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("pettingzoo")
pytest.importorskip("textarena")

from trainer.cli.main import main  # noqa: E402
from trainer.config import ConfigError, load_config  # noqa: E402
from trainer.training.pipeline import Pipeline  # noqa: E402
from trainer.training.sft import OracleSFT  # noqa: E402

SELF_PLAY = [
    "model.name=tiny-random",
    "model.lora=null",
    "env.id=textarena/TicTacToe-v0",
    "env.self_play=true",
    "env.group_size=2",
    "env.groups_per_step=2",
    "env.max_turns=2",
    "sampling.max_new_tokens=6",
    "train.eval_groups=2",
    "train.loggers=[jsonl]",
    "algorithm.skip_zero_advantage=false",
]


def test_a_self_play_step_trains_on_both_seats_and_evaluates_against_fixed_players(tmp_path):
    config = load_config(None, [*SELF_PLAY, f"train.output_dir={tmp_path}"])
    pipeline = Pipeline(config, log=None)
    try:
        played = []
        rollout = pipeline.rollouts.rollout

        def recording(step, version):
            trajectories = rollout(step, version=version)
            played.extend(trajectories)
            return trajectories

        pipeline.rollouts.rollout = recording
        metrics = pipeline.train_step()
        assert all(math.isfinite(v) for v in metrics.values())
        assert "policy/loss" in metrics
        # 2 seeds x 2 games x 2 seats, one group per seed and seat
        assert len(played) == 8
        assert sorted({t.group_id for t in played}) == [0, 1, 2, 3]
        evaluation = pipeline.evaluate()
    finally:
        pipeline.close()
    for opponent in ("random", "solver"):
        for seat in ("player_0", "player_1"):
            shares = [evaluation[f"eval/{opponent}/{seat}/{o}"] for o in ("win", "draw", "loss")]
            assert sum(shares) == pytest.approx(1.0)
    # random replies of a tiny random model never win against the solver
    assert evaluation["eval/solver/player_0/win"] == evaluation["eval/solver/player_1/win"] == 0
    assert 0.0 <= evaluation["eval/success"] <= 1.0


def test_the_warm_start_of_self_play_learns_the_solvers_moves_in_both_seats(tmp_path):
    config = load_config(
        None,
        [
            *SELF_PLAY,
            f"train.output_dir={tmp_path}",
            "env.max_turns=5",  # a whole game of perfect play: 5 moves and 4
            "sft.episodes=2",
            "sft.batch_sequences=2",
        ],
    )
    sft = OracleSFT(config, log=lambda line: None)
    try:
        _, samples = next(sft._batches)
        tokenizer = sft.tokenizer
        for sample in samples:
            trained = [t for t, m in zip(sample.token_ids, sample.loss_mask, strict=True) if m]
            text = tokenizer.decode(trained, skip_special_tokens=True)
            assert text.startswith("<answer>[") and text.count("<answer>") >= 4
    finally:
        sft.close()
    assert len(samples) == 4  # two games (a seed each), both seats


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ("rollout.mode=ray", "rollout.mode=local"),
        ("env.context=window", "env.context=window"),
        ("env.constrain_to_actions=true", "env.constrain_to_actions"),
    ],
)
def test_self_play_refuses_the_settings_it_cannot_play_and_names_them(setting, named):
    with pytest.raises(ConfigError, match=named):
        load_config(None, [*SELF_PLAY, setting])


def test_roll_agent_train_self_play_runs_a_step_of_a_game_of_our_own(tmp_path):
    args = ["train", "--env", "KuhnPoker-v0", "--self-play", "--model", "tiny-random"]
    args += ["--steps", "1", "--output", str(tmp_path / "run")]
    for setting in SELF_PLAY[1:]:
        if not setting.startswith("env.id="):
            args += ["--set", setting]
    assert main(args) == 0
    assert (tmp_path / "run" / "checkpoints").is_dir()


def test_roll_agent_eval_of_a_self_play_preset_prints_each_seats_results(tmp_path, capsys):
    args = ["eval", "--env", "tictactoe-self-play", "--model", "tiny-random", "--episodes", "2"]
    args += ["--output", str(tmp_path), "--set", "sampling.max_new_tokens=4"]
    assert main(args) == 0
    out = capsys.readouterr().out
    # cells, whether printed as a rich table (a terminal) or as plain aligned text (a pipe)
    rows = [line.replace("│", " ").split() for line in out.splitlines() if "player_" in line]
    # two seats against each of the random player and the solver
    assert sorted((row[0], row[1]) for row in rows) == [
        ("random", "player_0"),
        ("random", "player_1"),
        ("solver", "player_0"),
        ("solver", "player_1"),
    ]
    # a tiny random model's replies never beat the solver
    assert all(row[2] == "0.0%" for row in rows if row[0] == "solver")


def test_a_share_of_the_warm_starts_games_seats_random_players_around_the_solver(tmp_path):
    config = load_config(
        None,
        [
            *SELF_PLAY,
            f"train.output_dir={tmp_path}",
            "env.max_turns=5",
            "sft.episodes=4",
            "sft.batch_sequences=4",
            "sft.random_opponent_share=0.5",
        ],
    )
    sft = OracleSFT(config, log=lambda line: None)
    try:
        _, samples = next(sft._batches)
    finally:
        sft.close()
    # of 4 games, 2 solver against solver (both seats kept) and 2 against a random player (one
    # seat kept, each seat once): 6 samples
    assert len(samples) == 6
    with pytest.raises(ConfigError, match="sft.random_opponent_share"):
        load_config(None, ["sft.random_opponent_share=0.5"])
