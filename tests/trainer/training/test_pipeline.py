"""One pipeline step of every algorithm and option, with the real (tiny, random) model."""

from __future__ import annotations

import math
import signal
import subprocess
import sys
import time

import pytest
import torch

from tests.trainer.two_by_two_lake import TWO_BY_TWO_LAKE
from trainer.config import load_config
from trainer.training.checkpoint import checkpoint_step, latest_checkpoint
from trainer.training.pipeline import Pipeline
from trainer.training.sft import OracleSFT, supervised_warm_start

BASE = [*TWO_BY_TWO_LAKE, "model.lora=null"]


def _pipeline(tmp_path, *overrides: str) -> Pipeline:
    config = load_config(None, [*BASE, f"train.output_dir={tmp_path}", *overrides])
    return Pipeline(config, log=None)


def _trainable(pipeline: Pipeline) -> dict[str, torch.Tensor]:
    model = pipeline.strategy.model
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


@pytest.mark.parametrize(
    "overrides",
    [
        ["algorithm.name=starpo", "algorithm.starpo_s_keep=0.5"],
        ["algorithm.name=grpo", "algorithm.aggregation=seq-mean-token-mean"],
        ["algorithm.name=gigpo", "env.context=window", "env.window=1"],
        ["algorithm.name=ppo", "algorithm.ppo_epochs=2", "algorithm.minibatches=2"],
        ["algorithm.name=rloo"],
        ["algorithm.name=raft"],
        ["algorithm.name=reinforce++", "algorithm.aggregation=seq-mean-token-sum"],
    ],
    ids=["starpo-s", "grpo", "gigpo", "ppo", "rloo", "raft", "reinforce++"],
)
def test_one_step_of_each_algorithm_updates_the_policy(tmp_path, overrides):
    pipeline = _pipeline(tmp_path, "algorithm.entropy_coef=0.01", *overrides)
    before = _trainable(pipeline)
    metrics = pipeline.train_step()
    assert all(math.isfinite(v) for v in metrics.values())
    for key in (
        "rollout/success",
        "policy/clip_fraction",
        "policy/entropy",
        "grad_norm",
        "time/rollout",
        "time/update",
        "time/weight_sync",
    ):
        assert key in metrics
    after = _trainable(pipeline)
    assert any(not torch.equal(before[n], after[n]) for n in before)
    if "algorithm.name=ppo" in overrides:
        assert "critic/loss" in metrics
    if "algorithm.starpo_s_keep=0.5" in overrides:
        assert metrics["train/kept_episodes"] == pytest.approx(0.5)
    # the generator samples from the updated weights
    generator_weights = pipeline.rollouts.generator.model.state_dict()
    policy_weights = pipeline.strategy.inference_state_dict()
    assert all(torch.equal(generator_weights[k], policy_weights[k]) for k in policy_weights)


@pytest.mark.parametrize("skip", [True, False])
def test_a_step_of_equal_returns_trains_on_nothing_when_zero_advantages_are_skipped(tmp_path, skip):
    # one turn on the 2x2 lake never reaches the goal two moves away: every return is 0
    pipeline = _pipeline(
        tmp_path,
        "env.max_turns=1",
        f"algorithm.skip_zero_advantage={str(skip).lower()}",
        "train.steps=1",
    )
    lines: list[str] = []
    pipeline.view._write = lines.append  # the step's line, as a log file gets it
    before = _trainable(pipeline)
    metrics = pipeline.run()
    assert metrics["rollout/return"] == 0.0
    assert metrics["train/kept_episodes"] == (0.0 if skip else 1.0)
    assert ("policy/loss" in metrics) is not skip  # the update ran only without skipping
    after = _trainable(pipeline)
    assert all(torch.equal(before[n], after[n]) for n in before)
    line = next(line for line in lines if line.startswith("step 1/1"))
    assert "nan" not in line
    episodes = pipeline.config.env.groups_per_step * pipeline.config.env.group_size
    skipped = f"skipped: all {episodes} episodes had zero advantage"
    assert (skipped in line) is skip and ("loss " in line) is not skip


def test_skipping_zero_advantages_still_trains_on_the_groups_that_differ(tmp_path):
    pipeline = _pipeline(tmp_path, "algorithm.skip_zero_advantage=true")
    before = _trainable(pipeline)
    metrics = pipeline.train_step()
    assert metrics["train/kept_episodes"] > 0.0
    assert "policy/loss" in metrics
    after = _trainable(pipeline)
    assert any(not torch.equal(before[n], after[n]) for n in before)


def test_with_zero_advantages_skipped_the_entropy_term_moves_only_the_kept_episodes(tmp_path):
    # all returns equal (one turn never reaches the goal): every episode is dropped, and the
    # entropy term does not bring them back into an update
    uniform = _pipeline(
        tmp_path / "uniform",
        "env.max_turns=1",
        "algorithm.skip_zero_advantage=true",
        "algorithm.entropy_coef=1.0",
    )
    before = _trainable(uniform)
    assert uniform.train_step()["train/kept_episodes"] == 0.0
    assert all(torch.equal(before[n], p) for n, p in _trainable(uniform).items())
    # returns that differ: the kept episodes' update carries the entropy term
    skip = ["algorithm.skip_zero_advantage=true"]
    plain = _pipeline(tmp_path / "plain", *skip)
    with_entropy = _pipeline(tmp_path / "entropy", *skip, "algorithm.entropy_coef=1.0")
    plain_metrics, entropy_metrics = plain.train_step(), with_entropy.train_step()
    assert 0.0 < entropy_metrics["train/kept_episodes"] < 1.0
    assert entropy_metrics["train/kept_episodes"] == plain_metrics["train/kept_episodes"]
    # the same episodes (same seed), a different loss: policy loss minus the entropy
    assert entropy_metrics["policy/loss"] == pytest.approx(plain_metrics["policy/loss"])
    assert entropy_metrics["loss"] == pytest.approx(
        plain_metrics["loss"] - entropy_metrics["policy/entropy"], rel=1e-5
    )
    moved = _trainable(with_entropy)
    assert any(not torch.equal(moved[n], p) for n, p in _trainable(plain).items())


def _record_reads(pipeline: Pipeline) -> list[tuple[int, ...]]:
    """The sequences each later call of ``strategy.sequence_logprobs`` reads."""
    read: list[tuple[int, ...]] = []
    score = pipeline.strategy.sequence_logprobs

    def recording(sequences, masks, **kwargs):
        read.extend(tuple(s) for s in sequences)
        return score(sequences, masks, **kwargs)

    pipeline.strategy.sequence_logprobs = recording
    return read


def test_only_the_rows_the_update_keeps_are_read_for_their_old_logprobs(tmp_path):
    pipeline = _pipeline(
        tmp_path, "algorithm.skip_zero_advantage=true", "algorithm.old_logprobs=recompute"
    )
    read = _record_reads(pipeline)
    trained: list[tuple[int, ...]] = []
    update = pipeline.strategy.train_step

    def recording_update(batch):
        trained.extend(tuple(s) for s in batch.token_ids)
        return update(batch)

    pipeline.strategy.train_step = recording_update
    metrics = pipeline.train_step()
    assert 0.0 < metrics["train/kept_episodes"] < 1.0  # some groups were left out
    assert trained and sorted(read) == sorted(trained)
    assert metrics["train/rows_recomputed"] == len(read)


def test_under_a_correction_only_rows_with_a_token_of_older_weights_are_read_again(tmp_path):
    pipeline = _pipeline(
        tmp_path,
        "algorithm.off_policy_correction=decoupled",
        "algorithm.old_logprobs=recompute",
        "algorithm.skip_zero_advantage=false",
    )
    pipeline.train_step()  # to version 1, so that version 0 is older weights
    play = pipeline.rollouts.rollout
    older: list[tuple[int, ...]] = []

    def played_across_two_versions(step, version):
        trajectories = play(step, version=version)
        for i, trajectory in enumerate(trajectories):
            for sample in trajectory.samples:
                # odd episodes took their last sampled token from the older weights
                sampled = [j for j, m in enumerate(sample.loss_mask) if m]
                sample.weight_versions = [version if m else -1 for m in sample.loss_mask]
                if i % 2:
                    sample.weight_versions[sampled[-1]] = version - 1
                    older.append(tuple(sample.token_ids))
        return trajectories

    pipeline.rollouts.rollout = played_across_two_versions
    read = _record_reads(pipeline)
    metrics = pipeline.train_step()
    assert older and sorted(read) == sorted(older)
    assert metrics["train/rows_recomputed"] == len(older)
    # a row the current weights drew has its behaviour log-probs as the proximal ones
    assert "policy/importance_weight_mean" in metrics


def test_dynamic_sampling_replaces_uniform_groups_with_new_prompts(tmp_path):
    pipeline = _pipeline(
        tmp_path,
        "algorithm.dynamic_sampling=true",
        "algorithm.dynamic_sampling_max_rounds=3",
        "algorithm.skip_zero_advantage=true",
    )
    wanted = pipeline.config.env.groups_per_step
    calls: list[list[int]] = []
    rollout = pipeline.rollouts.manager.rollout

    def recorded(seeds, group_ids):
        calls.append(list(seeds))
        return rollout(seeds, group_ids=group_ids)

    pipeline.rollouts.manager.rollout = recorded
    metrics = pipeline.train_step()
    rounds = int(metrics["train/dynamic_sampling_rounds"])
    assert rounds >= 1 and len(calls) == 1 + rounds  # this seed's first round has a uniform group
    generated = [s for seeds in calls for s in seeds]
    assert len(set(generated)) == len(generated)  # each round brings new prompts
    assert all(len(seeds) <= wanted for seeds in calls[1:])  # only the missing groups
    informative = metrics["train/informative_groups"]
    assert informative >= 1
    if informative < wanted:  # every round was used, and every group counted once
        assert rounds == 3
        assert metrics["train/uniform_groups_dropped"] + informative == len(generated)
    # the update trains only on groups that differ: no episode with zero advantage is left
    assert metrics["train/kept_episodes"] == 1.0
    assert metrics["train/zero_advantage_episodes"] == 0.0


def test_dynamic_sampling_gives_up_after_its_rounds_when_every_group_is_uniform(tmp_path):
    # one turn on the 2x2 lake never reaches the goal two moves away: every return is 0
    pipeline = _pipeline(
        tmp_path,
        "env.max_turns=1",
        "algorithm.dynamic_sampling=true",
        "algorithm.dynamic_sampling_max_rounds=2",
    )
    wanted = pipeline.config.env.groups_per_step
    metrics = pipeline.train_step()
    assert metrics["train/dynamic_sampling_rounds"] == 2
    assert metrics["train/informative_groups"] == 0
    assert metrics["train/uniform_groups_dropped"] == 3 * wanted
    assert metrics["train/kept_episodes"] == 1.0  # the first round's, as without resampling


def test_dynamic_sampling_is_refused_where_it_does_not_run():
    with pytest.raises(ValueError, match="algorithm.dynamic_sampling needs rollout.mode=local"):
        load_config(None, [*BASE, "algorithm.dynamic_sampling=true", "rollout.mode=ray"])


@pytest.mark.parametrize("mode", ["loss", "reward"])
def test_kl_to_the_reference_starts_at_zero_and_grows(tmp_path, mode):
    pipeline = _pipeline(
        tmp_path, "algorithm.kl_coef=0.1", f"algorithm.kl_mode={mode}", "optim.lr=5e-3"
    )
    first = pipeline.train_step()
    # the first update starts from the reference itself
    assert first["policy/kl_to_reference"] == pytest.approx(0.0, abs=1e-6)
    for _ in range(3):
        later = pipeline.train_step()
    assert later["policy/kl_to_reference"] > 1e-6


def test_lora_trains_only_adapters_and_syncs_merged_weights(tmp_path):
    pipeline = _pipeline(tmp_path, "model.lora={r: 4, alpha: 8}", "algorithm.entropy_coef=0.01")
    trainable = _trainable(pipeline)
    assert trainable and all("lora_" in name for name in trainable)
    base_before = pipeline.rollouts.generator.model.state_dict()
    base_before = {k: v.clone() for k, v in base_before.items()}
    pipeline.train_step()
    merged = pipeline.strategy.inference_state_dict()
    assert merged.keys() == base_before.keys()
    changed = [k for k in merged if not torch.equal(merged[k], base_before[k])]
    assert changed and all(("q_proj" in k or "v_proj" in k) for k in changed)
    folder = pipeline.save()
    from transformers import AutoModelForCausalLM

    reloaded = AutoModelForCausalLM.from_pretrained(folder / "model").state_dict()
    assert all(torch.equal(reloaded[k], merged[k]) for k in merged if k in reloaded)


def test_a_run_can_start_from_another_runs_optimizer_moments_at_its_own_lr(tmp_path):
    first = _pipeline(tmp_path / "first", "optim.lr=1e-3")
    first.train_step()
    folder = first.save()
    saved = [s["exp_avg_sq"].clone() for s in first.strategy.optimizer.state.values()]

    second = _pipeline(tmp_path / "second", "optim.lr=3e-5", f"optim.moments_from={folder}")
    state = second.strategy.optimizer.state
    assert len(state) == len(saved)
    assert all(torch.equal(s["exp_avg_sq"], v) for s, v in zip(state.values(), saved, strict=True))
    assert all(group["lr"] == 3e-5 for group in second.strategy.optimizer.param_groups)
    # the weights are the model's, not the checkpoint's: only the moments came over
    fresh = _pipeline(tmp_path / "fresh")
    assert all(
        torch.equal(a, b)
        for a, b in zip(_trainable(second).values(), _trainable(fresh).values(), strict=True)
    )


def test_moments_of_other_parameters_are_refused_by_name(tmp_path):
    lora = _pipeline(tmp_path / "lora", "model.lora={r: 4, alpha: 8}")
    folder = lora.save()
    with pytest.raises(ValueError, match="optim.moments_from: .* other parameters"):
        _pipeline(tmp_path / "full", f"optim.moments_from={folder}")
    with pytest.raises(FileNotFoundError, match="optim.moments_from"):
        _pipeline(tmp_path / "none", f"optim.moments_from={tmp_path / 'missing'}")


def test_replies_can_be_scored_among_the_action_words_they_were_drawn_from(tmp_path):
    words = ["env.constrain_to_actions=true", "sampling.max_new_tokens=1"]
    pipeline = _pipeline(tmp_path, *words, "algorithm.score_actions_only=true")
    allowed = pipeline.sampling.allowed_token_ids
    assert allowed is not None and pipeline.strategy.loss.vocabulary == tuple(allowed)
    metrics = pipeline.train_step()
    # the entropy of a distribution over the action words' tokens, not the whole vocabulary
    assert 0.0 < metrics["policy/entropy"] <= math.log(len(allowed)) + 1e-6
    whole = _pipeline(tmp_path / "whole", *words).train_step()
    assert whole["policy/entropy"] > math.log(len(allowed))


def test_logprobs_among_the_action_words_can_come_from_the_generator(tmp_path):
    # the generator reports each word's log-prob among the words, as the trainer scores it:
    # the first update is on-policy (ratio 1); whole-vocabulary log-probs would put every
    # ratio far from 1 (each word's share among the words is far above its share of all)
    pipeline = _pipeline(
        tmp_path,
        "env.constrain_to_actions=true",
        "sampling.max_new_tokens=1",
        "algorithm.score_actions_only=true",
        "algorithm.old_logprobs=generator",
        "env.group_size=8",
    )
    assert pipeline.sampling.logprobs_among_allowed
    metrics = pipeline.train_step()
    assert metrics["policy/approx_kl"] == pytest.approx(0.0, abs=1e-6)
    assert metrics["policy/clip_fraction"] == 0.0


def test_the_generators_logprobs_can_stand_in_for_the_recomputed_ones(tmp_path):
    # the first (only) update is on-policy: the ratio to the generator's log-probs is 1
    pipeline = _pipeline(tmp_path, "algorithm.old_logprobs=generator", "env.group_size=8")
    metrics = pipeline.train_step()
    assert metrics["policy/approx_kl"] == pytest.approx(0.0, abs=1e-6)
    assert metrics["policy/clip_fraction"] == 0.0
    before = _trainable(pipeline)
    pipeline.train_step()
    after = _trainable(pipeline)
    assert any(not torch.equal(before[n], after[n]) for n in before)


def test_sft_resumes_from_its_checkpoint_with_new_episodes(tmp_path):
    config = load_config(
        None, [*BASE, "sft.batch_sequences=2", "sft.lr=1e-3", f"train.output_dir={tmp_path}"]
    )
    first = OracleSFT(config, log=lambda message: None)
    first.train(max_steps=2)
    folder = first.save(tmp_path / "sft")
    resumed = OracleSFT(config, log=lambda message: None, resume_from=folder)
    assert (resumed.step, resumed.episodes_seen) == (2, 4)
    weights = resumed.strategy.inference_state_dict()
    assert all(torch.equal(v, first.strategy.inference_state_dict()[k]) for k, v in weights.items())
    assert resumed.strategy.optimizer.state_dict()["state"]  # Adam moments came back too
    resumed.train(max_steps=1)
    assert (resumed.step, resumed.episodes_seen) == (3, 6)
    assert first.train(max_seconds=0) == {}  # a spent time budget trains nothing


@pytest.mark.parametrize(
    ("phase_limit_s", "call_limit_s", "shown"),
    [
        # a benchmark ends the warm start by its clock, with a huge episode count: the bar must
        # not read "step 3/250000 eta 200h"
        (None, 3600, " of 1h00m"),
        # a run's warm start trains up to each evaluation in turn: the bar keeps the phase's own
        (600.0, 30, " of 10m00s"),
    ],
)
def test_the_warm_start_bar_shows_the_time_that_ends_it_not_a_step_count(
    tmp_path, phase_limit_s, call_limit_s, shown
):
    config = load_config(
        None,
        # episodes enough that no machine's pace ends them within the hour: at 100,000 (50,000
        # steps) a fast CPU's pace can, and the bar then rightly shows the step count
        [*BASE, "sft.batch_sequences=2", "sft.episodes=1000000", f"train.output_dir={tmp_path}"],
    )
    lines: list[str] = []
    sft = OracleSFT(config, log=lines.append)
    sft.view.phase("warm start").time_limit_s = phase_limit_s
    sft.train(max_steps=2, max_seconds=call_limit_s)
    steps = [line for line in lines if line.startswith("warm start step")]
    assert steps and all("/" not in line.split()[3] for line in steps)
    assert all(shown in line for line in steps)


def test_sft_learns_the_oracle_replies(tmp_path):
    config = load_config(
        None,
        [
            *BASE,
            "env.kwargs={desc: [SFF, FHF, FFG], answer_format: {tag: null}}",
            "env.max_turns=6",
            "sft.episodes=8",
            "sft.epochs=40",
            "sft.batch_sequences=8",
            "sft.lr=3e-3",
            f"train.output_dir={tmp_path}",
        ],
    )
    folder = supervised_warm_start(config, log=lambda message: None).checkpoint
    assert folder.parent == tmp_path / "sft" / "checkpoints", "apart from RL checkpoints"
    losses = [
        float(line.split('"sft/loss": ')[1].split(",")[0])
        for line in (tmp_path / "sft" / "metrics.jsonl").read_text().splitlines()
    ]
    assert losses[-1] < 0.1 * losses[0]
    # the warm-started model walks the oracle's path greedily
    rl = load_config(
        None,
        [
            *BASE,
            "env.kwargs={desc: [SFF, FHF, FFG], answer_format: {tag: null}}",
            "env.max_turns=6",
            f"model.name={folder / 'model'}",
            f"train.output_dir={tmp_path / 'rl'}",
        ],
    )
    assert Pipeline(rl, log=None).evaluate()["eval/success"] == 1.0


def test_ctrl_c_saves_a_checkpoint_and_resume_continues(tmp_path):
    command = [
        sys.executable,
        "-m",
        "trainer.cli",
        "train",
        "--env",
        "FrozenLake-v0",
        "--steps",
        "1000",
        "--output",
        str(tmp_path),
    ]
    for override in BASE:
        command += ["--set", override]
    command += ["--set", "train.checkpoint_every=0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    deadline = time.monotonic() + 300
    for line in process.stdout:
        lines.append(line)
        if line.startswith("step 2/"):
            process.send_signal(signal.SIGINT)
            break
        assert time.monotonic() < deadline, "".join(lines)
    output, _ = process.communicate(timeout=300)
    lines.append(output)
    assert process.returncode == 0, "".join(lines)
    text = "".join(lines)
    assert "Stopped at step" in text and "continue with --resume" in text
    saved = latest_checkpoint(tmp_path)
    assert saved is not None and int(saved.name.removeprefix("step-")) >= 2
    assert not [p for p in (tmp_path / "checkpoints").iterdir() if p.name.startswith(".")]
    # --resume continues from the saved step to one more
    stopped_at = int(saved.name.removeprefix("step-"))
    command[command.index("1000")] = str(stopped_at + 1)
    resumed = subprocess.run(command + ["--resume"], capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"at step {stopped_at}." in resumed.stdout
    assert f"step {stopped_at + 1}/{stopped_at + 1}" in resumed.stdout
    assert latest_checkpoint(tmp_path).name == f"step-{stopped_at + 1}"


def test_warm_start_runs_once_and_rl_starts_from_it(tmp_path):
    overrides = [
        "sft.before_rl=true",
        "sft.episodes=4",
        "sft.epochs=30",
        "sft.lr=3e-3",
        "env.kwargs={desc: [SFF, FHF, FFG], answer_format: {tag: null}}",
        "env.max_turns=6",
    ]
    pipeline = _pipeline(tmp_path, *overrides)
    sft_checkpoint = latest_checkpoint(tmp_path / "sft")
    assert sft_checkpoint is not None
    # RL starts from the warm-started model, which already walks the oracle's path
    assert pipeline.evaluate()["eval/success"] == 1.0
    # a second pipeline on the same run finds the warm start instead of redoing it
    again = _pipeline(tmp_path, *overrides)
    assert latest_checkpoint(tmp_path / "sft") == sft_checkpoint
    assert again.evaluate()["eval/success"] == 1.0


def test_reward_workers_score_the_step_and_unscored_episodes_are_left_out(tmp_path):
    ray = pytest.importorskip("ray")
    pipeline = _pipeline(
        tmp_path,
        "env.id=InstructionFollowing-v0",
        "env.kwargs={answer_format: {tag: null, separator: null}}",
        "env.constrain_to_actions=false",
        "env.max_turns=1",
        "sampling.max_new_tokens=8",
        "rewards.pool=true",
        "rewards.min_workers=1",
        "rewards.max_workers=1",
    )
    try:
        assert pipeline.rollouts.manager.env_kwargs["defer_reward"] is True
        rollout = pipeline.rollouts.manager.rollout

        def one_left_unscored(seeds, group_ids):
            trajectories = rollout(seeds, group_ids=group_ids)
            assert all(t.reward_request is not None and t.unscored is None for t in trajectories)
            trajectories[0].unscored = "the judge timed out"
            return trajectories

        pipeline.rollouts.manager.rollout = one_left_unscored
        trained_rows = []
        train_step = pipeline.strategy.train_step
        pipeline.strategy.train_step = lambda batch: (
            trained_rows.append(len(batch)) or train_step(batch)
        )
        metrics = pipeline.train_step()
        assert metrics["train/unscored_episodes"] == 1.0
        assert metrics["rollout/unscored"] == pytest.approx(1 / 8)
        assert sum(trained_rows) == 7  # one sample an episode, the unscored one left out
    finally:
        pipeline.close()
        ray.shutdown()


def test_reward_workers_refuse_an_env_that_scores_inside_step(tmp_path):
    with pytest.raises(ValueError, match="FrozenLake-v0 scores its rewards inside step"):
        _pipeline(tmp_path, "rewards.pool=true")


def test_eval_before_and_max_minutes_evaluate_the_start_and_the_end(tmp_path):
    import json

    pipeline = _pipeline(
        tmp_path,
        "train.steps=50",
        "train.eval_every=10",
        "train.eval_groups=2",
        "train.eval_before=true",
        "train.max_minutes=0.0001",  # out of time after the first step
        "train.checkpoint_every=0",
    )
    pipeline.run()
    assert pipeline.step == 1
    assert [step for step, _ in pipeline.evaluations] == [0, 1]
    assert checkpoint_step(latest_checkpoint(tmp_path)) == 1
    logged = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in logged if "eval/success" in r] == [0, 1]


def test_a_judge_that_hangs_leaves_episodes_unscored_and_training_goes_on(tmp_path, hanging_server):
    ray = pytest.importorskip("ray")
    pytest.importorskip("reasoning_gym")
    pipeline = _pipeline(
        tmp_path,
        "env.id=JudgedAnswer-v0",
        "env.kwargs={answer_format: {tag: null, separator: null}}",
        "env.constrain_to_actions=false",
        "env.max_turns=1",
        "sampling.max_new_tokens=4",
        "rewards.pool=true",
        "rewards.worker_cpus=0.25",
        f"rewards.judge=openai:{hanging_server}#judge",
        "rewards.judge_worker_cpus=0.25",
        "rewards.judge_timeout_s=1",
    )
    try:
        played = []
        manager = pipeline.rollouts.manager
        rollout = manager.rollout
        manager.rollout = lambda *a, **k: played.extend(rollout(*a, **k)) or played
        metrics = pipeline.train_step()  # the random model's replies: the rule takes none
        # each cut at the judge's 1 s timeout (the server holds a call 30 s)
        judged = [t for t in played if t.reward_request is not None]
        assert judged and all("did not answer within 1 s" in t.unscored for t in judged)
        assert metrics["train/unscored_episodes"] == len(judged)
        assert pipeline.step == 1  # the step is counted and the run goes on
    finally:
        pipeline.close()
        ray.shutdown()


def test_evaluation_plays_the_envs_of_eval_kwargs(tmp_path):
    # a lake whose start is walled in by holes: no evaluation episode can succeed
    walled_in = "env.eval_kwargs={desc: [SH, HG]}"
    pipeline = _pipeline(tmp_path, walled_in, "train.eval_groups=4")
    rollouts = pipeline.rollouts
    training, evaluation = rollouts.manager.make_env(), rollouts.evaluation.manager.make_env()
    trained_board, _ = training.reset(seed=0)
    evaluated_board, info = evaluation.reset(seed=0)
    assert evaluated_board != trained_board
    # the answer format of env.kwargs still holds in evaluation
    assert "<answer>" not in info["instruction"]
    assert pipeline.evaluate()["eval/success"] == 0.0


class _RecordedRollouts:
    """The :class:`Rollouts` interface and nothing else, around the pipeline's own rollouts:
    a pipeline that reached past it (to an env manager, a generator) would fail here."""

    def __init__(self, inner):
        self._inner, self.calls = inner, []

    def _call(self, name, *args, **kwargs):
        self.calls.append(name)
        return getattr(self._inner, name)(*args, **kwargs)

    def rollout(self, step, version):
        return self._call("rollout", step, version)

    def metrics(self):
        return self._call("metrics")

    def evaluate(self, version):
        return self._call("evaluate", version)

    def push_weights(self, state_dict, version):
        return self._call("push_weights", state_dict, version)

    def state_dict(self):
        return self._call("state_dict")

    def load_state_dict(self, state):
        return self._call("load_state_dict", state)

    def shutdown(self):
        return self._call("shutdown")


def test_closing_a_local_run_closes_the_envs_it_opened(tmp_path):
    pipeline = _pipeline(tmp_path)
    pipeline.train_step()
    pipeline.evaluate()
    rollouts = pipeline.rollouts
    opened = [*rollouts.manager._envs, *rollouts.evaluation.manager._envs]
    closed = []
    for env in opened:
        env.close = lambda env=env: closed.append(env)
    pipeline.close()
    assert len(opened) >= 2 and closed == opened


def test_the_pipeline_drives_its_episodes_through_the_rollouts_interface(tmp_path):
    from trainer.rollout.rollouts import Rollouts
    from trainer.training.local_rollouts import LocalRollouts

    pipeline = _pipeline(tmp_path, "train.checkpoint_every=1", "train.eval_groups=2")
    assert isinstance(pipeline.rollouts, LocalRollouts)
    assert isinstance(pipeline.rollouts, Rollouts)
    recorded = pipeline.rollouts = _RecordedRollouts(pipeline.rollouts)
    metrics = pipeline.train_step()
    assert recorded.calls == ["rollout", "push_weights", "metrics"]
    assert metrics["rollout/turns"] >= 1 and "loss" in metrics
    assert 0.0 <= pipeline.evaluate()["eval/success"] <= 1.0
    pipeline.save()
    pipeline.close()
    assert recorded.calls[3:] == ["evaluate", "state_dict", "shutdown"]

    resumed = Pipeline(pipeline.config, resume=True, log=None)
    assert resumed.step == 1
    resumed.close()
