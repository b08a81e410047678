"""``roll-agent train`` for real: two steps, a checkpoint transformers loads, an exact resume."""

from __future__ import annotations

import importlib.util
import json
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

# a fixed 2x2 lake and replies constrained to the action words, so returns differ within a
# group; an entropy bonus makes every update non-zero, so identical weights after a resume
# cannot come from updates that did nothing
SMALL = [
    "--model",
    "tiny-random",
    "--set",
    "env.kwargs={desc: [SF, FG], answer_format: {tag: null}}",
    "--set",
    "algorithm.entropy_coef=0.01",
    "--set",
    "env.constrain_to_actions=true",
    "--set",
    "model.lora=null",
    "--set",
    "env.group_size=2",
    "--set",
    "env.groups_per_step=2",
    "--set",
    "env.max_turns=4",
    "--set",
    "sampling.max_new_tokens=1",
    "--set",
    "train.checkpoint_every=1",
    "--set",
    "train.loggers=[jsonl]",
    "--set",
    "optim.lr=1e-3",
]


def _run_train(arguments: list[str]) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "trainer.cli", "train", *arguments]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


def _train(output: Path, steps: int, *extra: str) -> subprocess.CompletedProcess:
    arguments = ["--env", "FrozenLake-v0", "--steps", str(steps), "--output", str(output)]
    result = _run_train([*arguments, *SMALL, *extra])
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def _weights(run: Path, step: int) -> dict[str, torch.Tensor]:
    return load_file(run / "checkpoints" / f"step-{step}" / "model" / "model.safetensors")


def test_two_steps_checkpoint_then_exact_resume(tmp_path):
    interrupted, straight = tmp_path / "interrupted", tmp_path / "straight"
    _train(interrupted, 2)
    checkpoint = interrupted / "checkpoints" / "step-2"
    assert (checkpoint / "COMPLETE").is_file()

    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(checkpoint / "model")
    tokenizer = AutoTokenizer.from_pretrained(checkpoint / "model")
    ids = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], return_tensors="pt")
    assert (
        model(ids if isinstance(ids, torch.Tensor) else ids["input_ids"]).logits.shape[-1] == 49152
    )

    resumed = _train(interrupted, 3, "--resume")
    assert "Resumed from" in resumed.stdout and "at step 2" in resumed.stdout
    assert "step 3/3" in resumed.stdout and "step 1/3" not in resumed.stdout
    _train(straight, 3)

    # a run stopped after step 2 and resumed ends exactly where an uninterrupted run ends
    after_resume, uninterrupted = _weights(interrupted, 3), _weights(straight, 3)
    assert after_resume.keys() == uninterrupted.keys()
    assert all(torch.equal(after_resume[k], uninterrupted[k]) for k in uninterrupted)
    assert not all(torch.equal(_weights(straight, 1)[k], uninterrupted[k]) for k in uninterrupted)
    optimizer_a = torch.load(interrupted / "checkpoints/step-3/strategy.pt", weights_only=False)
    optimizer_b = torch.load(straight / "checkpoints/step-3/strategy.pt", weights_only=False)
    state_a, state_b = optimizer_a["optimizer_by_name"], optimizer_b["optimizer_by_name"]
    assert state_a.keys() == state_b.keys()
    for key in state_b:
        assert torch.equal(state_a[key]["exp_avg"], state_b[key]["exp_avg"])
        assert float(state_a[key]["step"]) == float(state_b[key]["step"]) == 3.0

    # the metrics of the resumed run continue the interrupted one, one line per step
    steps = [json.loads(line)["step"] for line in (interrupted / "metrics.jsonl").open()]
    assert steps == [1, 2, 3]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--env", "sokoban", "--set", "env.context=sideways"],
            "env.context: Input should be 'full' or 'window' (got 'sideways')",
        ),
        (["--env", "sokobn"], "Did you mean"),
        (["--env", "sokoban", "--model", "smolm"], "unknown model 'smolm'; presets: smollm2-135m"),
        (
            ["--env", "FrozenLake-v0", "--model", "tiny-random", "--set", "train.loggers=[wandb]"],
            "pip install wandb",
        ),
    ],
    ids=["bad-value", "unknown-env", "unknown-model", "missing-tracker"],
)
def test_a_mistake_is_one_clear_line(tmp_path, arguments, message):
    if "train.loggers=[wandb]" in arguments and importlib.util.find_spec("wandb") is not None:
        pytest.skip("wandb is installed here, so its missing-package message cannot show")
    result = _run_train([*arguments, "--output", str(tmp_path)])
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


# a warm start of 12 steps (24 oracle episodes of the 2x2 lake, 2 a step), then RL
WARM_START = [
    "--set",
    "sft.before_rl=true",
    "--set",
    "sft.episodes=24",
    "--set",
    "sft.batch_sequences=2",
    "--set",
    "sft.lr=1e-3",
    "--set",
    "train.eval_every=1",
    "--set",
    "train.eval_groups=2",
]


def test_the_output_shows_progress_without_library_bars_or_nan_and_ends_with_the_summary(
    tmp_path,
):
    result = _train(tmp_path, 2, *WARM_START)
    output = result.stdout + result.stderr
    assert "it/s]" not in output and "%|" not in output  # no tqdm bar of any library
    assert "nan" not in output.lower().replace("nano", "")
    # library warnings go to the run's log file: Python's ("UserWarning: ...") and those of
    # loggers with a terminal handler of their own (DeepSpeed's "[WARNING] ...", at its import by
    # the first checkpoint's save_pretrained)
    assert "warning" not in output.lower()
    lines = result.stdout.strip().splitlines()
    assert any(line.startswith("warm start step 1/12") and "eta" in line for line in lines)
    assert any(line.startswith("step 1/2") and "eta" in line for line in lines)
    # the summary closes the output: evaluations, checkpoint, and commands that run as printed
    summary = lines[lines.index("Done: step 2") :]
    model = tmp_path / "checkpoints" / "step-2" / "model"
    assert summary[1].startswith("  best evaluation: success ")
    assert summary[2].startswith("  final evaluation: success ") and "at step 2" in summary[2]
    assert summary[3] == f"  learning curve: {tmp_path / 'learning_curve.png'}"
    assert summary[4] == f"  checkpoint: {tmp_path / 'checkpoints' / 'step-2'}"
    commands = dict(line.strip().split(": ", 1) for line in summary[5:])
    assert commands["serve"] == f"roll-agent serve --model {model}"
    assert commands["episodes"].startswith(f"roll-agent eval --suite smoke --model {model} && ")
    assert commands["train on"].endswith("--steps 4 --resume")
    evaluate = shlex.split(commands["evaluate"])
    assert evaluate[:2] == ["roll-agent", "eval"]
    ran = subprocess.run(
        [sys.executable, "-m", "trainer.cli", *evaluate[1:], "--episodes", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "success:" in ran.stdout


def _interrupt_in_warm_start(output: Path, steps: int) -> str:
    """Runs train, sends SIGINT once the warm start's third step is done; returns the output."""
    arguments = ["--env", "FrozenLake-v0", "--steps", str(steps), "--output", str(output)]
    command = [sys.executable, "-m", "trainer.cli", "train", *arguments, *SMALL, *WARM_START]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line)
        if line.startswith("warm start step 3/"):
            process.send_signal(signal.SIGINT)
            break
    rest, _ = process.communicate(timeout=300)
    text = "".join(lines) + rest
    assert process.returncode == 0, text
    return text


def test_ctrl_c_in_the_warm_start_saves_it_and_resume_ends_with_the_same_weights(tmp_path):
    interrupted, straight = tmp_path / "interrupted", tmp_path / "straight"
    stopped = _interrupt_in_warm_start(interrupted, 2)
    assert "Stopped in the warm start at step" in stopped
    assert "step 1/2" not in stopped  # RL never started
    saved = list((interrupted / "sft" / "checkpoints").glob("step-*"))
    assert len(saved) == 1 and (saved[0] / "COMPLETE").is_file()
    state = json.loads((saved[0] / "sft_state.json").read_text())
    assert not state["finished"] and 3 <= state["step"] < 12
    assert not (interrupted / "checkpoints").exists()  # no RL checkpoint to trust

    resumed = _train(interrupted, 2, *WARM_START, "--resume")
    assert f"Resumed the warm start from {saved[0]} at step {state['step']}." in resumed.stdout
    assert f"warm start step {state['step'] + 1}/12" in resumed.stdout
    assert "warm start step 1/12" not in resumed.stdout
    assert "Done: step 2" in resumed.stdout
    sft_steps = [json.loads(line)["step"] for line in (interrupted / "sft/metrics.jsonl").open()]
    assert sft_steps == list(range(1, 13))

    _train(straight, 2, *WARM_START)
    after_resume, uninterrupted = _weights(interrupted, 2), _weights(straight, 2)
    assert all(torch.equal(after_resume[k], uninterrupted[k]) for k in uninterrupted)
    warm = load_file(straight / "sft/checkpoints/step-12/model/model.safetensors")
    assert not all(torch.equal(warm[k], uninterrupted[k]) for k in uninterrupted)  # RL moved


def test_a_run_with_no_rl_steps_is_its_warm_start_and_ends_with_an_evaluated_checkpoint(
    tmp_path,
):
    result = _train(tmp_path, 0, *WARM_START)
    lines = result.stdout.strip().splitlines()
    plan = next(line for line in lines if line.startswith("Plan: "))
    assert "then no RL (train.steps=0)" in plan
    assert not any(line.startswith("step 1/") for line in lines)  # no RL step ran
    summary = lines[lines.index("Done: warm start step 12") :]
    assert summary[2].startswith("  final evaluation: success ") and "at step 12" in summary[2]
    assert summary[4] == f"  checkpoint: {tmp_path / 'checkpoints' / 'step-0'}"
    commands = dict(line.strip().split(": ", 1) for line in summary[5:])
    assert "train on" not in commands and "serve" in commands
    # the checkpoint holds the warm start's weights
    warm = load_file(tmp_path / "sft" / "checkpoints" / "step-12" / "model" / "model.safetensors")
    saved = load_file(tmp_path / "checkpoints" / "step-0" / "model" / "model.safetensors")
    assert warm.keys() == saved.keys()
    assert all(torch.equal(warm[name], saved[name]) for name in warm)
    # going on finds nothing left to do and keeps the run
    again = _train(tmp_path, 0, *WARM_START, "--resume")
    assert "Nothing to do" in again.stdout
