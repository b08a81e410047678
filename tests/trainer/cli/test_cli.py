"""Tests of the ``roll-agent`` command, run as the installed console script."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

import rollenv
from rollenv.policies import has_oracle, oracle_for, text_env_of
from trainer.cli.main import main
from trainer.config import load_config, preset_names

INSTALLED_SCRIPT = Path(sys.executable).parent / "roll-agent"
# the script pip installed beside this interpreter; else the module, with the same interpreter
ROLL_AGENT = (
    [str(INSTALLED_SCRIPT)] if INSTALLED_SCRIPT.exists() else [sys.executable, "-m", "trainer.cli"]
)


def roll_agent(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ROLL_AGENT, *args], input=stdin, capture_output=True, text=True, timeout=60
    )


def oracle_moves(env_id: str, seed: int) -> list[str]:
    """The oracle's moves for one episode, as the bare words a person would type."""
    env = rollenv.make(env_id)
    answer_format = text_env_of(env).answer_format
    oracle = oracle_for(env)
    observation, info = env.reset(seed=seed)
    moves, done = [], False
    while not done:
        reply = oracle.act(observation, info)
        moves.extend(answer_format.extract(reply))
        observation, _, terminated, truncated, info = env.step(reply)
        done = terminated or truncated
    assert info["metrics"]["success"]
    return moves


def table_row(output: str, first_cell: str) -> list[float]:
    """The numbers in the table row that starts with ``first_cell`` (rich or plain table)."""
    for line in output.splitlines():
        cells = [cell for cell in re.split(r"[│|]|\s{2,}", line) if cell.strip()]
        if cells and cells[0].strip() == first_cell:
            return [float(number) for number in re.findall(r"-?\d+(?:\.\d+)?", line)]
    raise AssertionError(f"no row {first_cell!r} in:\n{output}")


def test_envs_lists_every_registered_id() -> None:
    result = roll_agent("envs")

    assert result.returncode == 0, result.stderr
    for env_id in rollenv.registry:
        assert env_id in result.stdout


def test_envs_marks_an_id_whose_extra_is_missing_with_the_install_command() -> None:
    script = (
        "import sys; sys.modules['bm25s'] = None\n"  # as if the [webshop] extra were missing
        "from trainer.cli.main import main\n"
        "raise SystemExit(main(['envs', '--family', 'webshop']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )

    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if "WebShop-v0" in line]
    assert len(rows) == 1, result.stdout
    assert "WebShop-v0 (unavailable)" in rows[0]
    assert 'pip install "rollenv[webshop]"' in result.stdout


def test_envs_without_rich_prints_a_plain_table(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "rich", None)

    assert main(["envs", "--family", "sokoban"]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["id", "family", "max", "turns", "description"]
    assert any(line.split()[:3] == ["Sokoban-v0", "sokoban", "10"] for line in lines)


def test_check_sokoban_passes_with_the_oracle_always_solving() -> None:
    result = roll_agent("check", "Sokoban-v0", "--episodes", "20")

    assert result.returncode == 0, result.stdout + result.stderr
    assert "check_env: passed" in result.stdout
    episodes, success, valid, _mean_return, mean_turns = table_row(result.stdout, "oracle")
    assert (episodes, success, valid) == (20, 100.0, 100.0)
    assert 1 <= mean_turns <= rollenv.spec("Sokoban-v0").max_episode_steps
    random_episodes, random_success, *_ = table_row(result.stdout, "random")
    assert random_episodes == 20
    assert 0 <= random_success <= 100


def test_check_reward_prints_the_table_for_several_envs() -> None:
    result = roll_agent("check", "Sokoban-v0", "MathVerify-v0", "--reward", "--episodes", "6")

    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("check_env: passed") == 2
    assert result.stdout.count("PASS: every task-ignoring reply within the tolerance") == 2
    episodes, mean_return, share, success = table_row(result.stdout, "observation copied")
    assert episodes == 6 and share <= 0 and success == 0  # Sokoban's row comes first
    assert table_row(result.stdout, "oracle")[-1] == 100.0
    assert "random action words (baseline, not judged)" in result.stdout


def test_check_reward_fails_on_a_gameable_env_and_names_the_reply(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rollenv.register(
        "SayTheWordGameable-v0",
        "tests.rollenv.say_the_word:SayTheWord",
        max_episode_steps=1,
        kwargs={"pays_for": "any answer"},
    )
    try:
        status = main(["check", "SayTheWordGameable-v0", "--reward", "--episodes", "4"])
    finally:
        rollenv.registry._remove("SayTheWordGameable-v0")

    out = capsys.readouterr().out
    assert status == 1
    assert "FAIL: replies that ignore the task earn reward: 'observation copied'" in out
    assert table_row(out, "observation copied")[:3] == [4, 0.5, 50.0]


def test_play_with_the_oracle_moves_solves_the_puzzle() -> None:
    moves = oracle_moves("Sokoban-v0", seed=3)

    result = roll_agent("play", "Sokoban-v0", "--seed", "3", stdin="\n".join(moves) + "\n")

    assert result.returncode == 0, result.stderr
    assert "Solved!" in result.stdout
    assert "invalid actions: 0" in result.stdout
    assert result.stdout.count("success: yes") == 1


def test_play_accepts_full_replies_in_the_answer_format() -> None:
    replies = [f"<answer>{move}</answer>" for move in oracle_moves("Sokoban-v0", seed=3)]

    result = roll_agent("play", "Sokoban-v0", "--seed", "3", stdin="\n".join(replies) + "\n")

    assert "Solved!" in result.stdout


def test_play_reports_invalid_actions_and_quits_on_q() -> None:
    result = roll_agent("play", "Sokoban-v0", "--seed", "0", stdin="jump\nfly away\nq\nUp\n")

    assert result.returncode == 0, result.stderr
    assert result.stdout.count("valid: no") == 2
    assert "Quit." in result.stdout
    assert "invalid actions: 2 of 2" in result.stdout


def test_play_ends_at_end_of_input() -> None:
    result = roll_agent("play", "Sokoban-v0", "--seed", "0", stdin="")

    assert result.returncode == 0, result.stderr
    assert "Quit." in result.stdout


class _Terminal:
    """A child process on a pseudo-terminal, as a person's terminal would run it."""

    def __init__(self, command: list[str]) -> None:
        import pty

        self.leader, follower = pty.openpty()
        self.child = subprocess.Popen(
            command, stdin=follower, stdout=follower, stderr=follower, start_new_session=True
        )
        os.close(follower)
        self.output = b""

    def type(self, keys: bytes) -> None:
        os.write(self.leader, keys)

    def read_until(self, expected: str, timeout: float = 30.0) -> str:
        """Everything the child wrote so far, once ``expected`` appears after what was read
        before (an error if it does not within ``timeout`` seconds)."""
        start = len(self.output)
        deadline = time.monotonic() + timeout
        while expected.encode() not in self.output[start:]:
            ready, _, _ = select.select([self.leader], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                raise AssertionError(f"no {expected!r} within {timeout} s:\n{self.text}")
            try:
                chunk = os.read(self.leader, 4096)
            except OSError:  # the child closed its terminal
                chunk = b""
            if not chunk:
                raise AssertionError(f"the child ended before {expected!r}:\n{self.text}")
            self.output += chunk
        return self.text

    @property
    def text(self) -> str:
        return self.output.decode(errors="replace").replace("\r\n", "\n")

    def close(self) -> int:
        try:
            status = self.child.wait(timeout=30)
        finally:
            if self.child.poll() is None:
                self.child.kill()
                self.child.wait()
            os.close(self.leader)
        return status


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_play_reads_the_down_arrow_key_on_a_terminal_as_down() -> None:
    env = rollenv.make("Sokoban-v0")
    before, _ = env.reset(seed=3)
    after_down, *_ = env.step("<answer>Down</answer>")
    assert after_down != before

    terminal = _Terminal([*ROLL_AGENT, "play", "Sokoban-v0", "--seed", "3"])
    try:
        terminal.read_until("your move> ")
        terminal.type(b"\x1b[B\r")  # the down arrow key, then Enter
        terminal.read_until("your move> ")
        terminal.type(b"left\r")  # typed words still work
        terminal.read_until("your move> ")
        terminal.type(b"q\r")
        text = terminal.read_until("Quit.")
    finally:
        status = terminal.close()

    assert status == 0
    assert "move: Down" in text
    assert after_down in text
    assert "invalid actions: 0 of 2" in text
    assert "or the arrow keys" in text


def test_play_an_arrow_key_where_there_are_no_directions_is_not_sent() -> None:
    from rollenv.commands.play_command import _arrow_actions, _arrow_moves

    sokoban = _arrow_actions(("Up", "Down", "Left", "Right"))
    assert _arrow_moves("\x1b[A\x1b[D", sokoban) == ["Up", "Left"]
    assert _arrow_moves("\x1bOB", sokoban) == ["Down"]  # application cursor mode
    assert _arrow_moves("\x1b[Aup", sokoban) is None
    assert _arrow_moves("\x1b[A", _arrow_actions(("guess",))) is None


def test_play_watches_the_oracle_solve_the_puzzle() -> None:
    result = roll_agent("play", "Sokoban-v0", "--policy", "oracle", "--seed", "3", "--delay", "0")

    assert result.returncode == 0, result.stderr
    assert "oracle policy" in result.stdout
    assert "oracle: <answer>" in result.stdout
    assert result.stdout.rstrip().splitlines()[-1].startswith("Solved!")


def test_play_watches_random_episodes_to_their_end() -> None:
    # stdout is a pipe here, so no --delay means no pause between moves
    result = roll_agent(
        "play", "Sokoban-v0", "--policy", "random", "--seed", "0", "--episodes", "2"
    )

    assert result.returncode == 0, result.stderr
    ends = [line for line in result.stdout.splitlines() if line.startswith(("Solved!", "Episode"))]
    assert len(ends) == 2
    assert "random: <answer>" in result.stdout
    assert "of 2 episodes." in result.stdout


def test_play_oracle_of_an_env_without_one_is_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    env_id = next(
        (env_id for env_id in rollenv.registry if not has_oracle(rollenv.spec(env_id))), None
    )
    if env_id is None:
        pytest.skip("every registered env has an oracle")

    assert main(["play", env_id, "--policy", "oracle"]) == 2

    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 1 and "no oracle" in errors[0], errors


def test_unknown_env_id_is_one_line_with_close_matches() -> None:
    result = roll_agent("check", "Sokobon-v0")

    assert result.returncode == 2
    assert "Did you mean" in result.stderr
    assert "'Sokoban-v0'" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["check", "Sokoban-v0", "--episodes", "0"],
        ["check", "Sokoban-v0", "--seed", "-1"],
        ["play", "Sokoban-v0", "--max-turns", "many"],
        ["envs", "--family", "no-such-family"],
        ["envs", "--no-such-option"],
    ],
)
def test_bad_options_give_one_error_line_and_status_2(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2

    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(errors) == 1


def test_train_without_torch_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # as if torch were not installed

    assert main(["train", "--env", "sokoban"]) == 2

    assert "pip install torch==2.13.0 && pip install 'rollenv[train]'" in capsys.readouterr().err


def test_a_gpu_engine_on_the_cpu_is_refused_in_one_line_before_any_model_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    args = ["train", "--env", "frozenlake", "--model", "tiny-random", "--steps", "1"]
    args += ["--output", str(tmp_path / "run"), "--set", "train.device=cpu"]

    assert main([*args, "--set", "generation.backend=vllm"]) == 2

    out, err = capsys.readouterr()
    assert [line for line in err.splitlines() if line.strip()] == [
        "roll-agent: error: generation.backend=vllm generates on a CUDA GPU, and this run's "
        "device is cpu: set train.device=cuda on a GPU machine, or use "
        "generation.backend=continuous"
    ]
    assert "Loading model" not in out + err


@pytest.mark.parametrize(
    ("command", "env", "extra"),
    [
        ("train", "sokoban-rl-only", []),  # the preset trains the top 10 of SmolLM2's 30 layers
        ("train", "sokoban", ["--set", "model.lora=null", "--set", "model.trainable_layers=3"]),
        ("sft", "sokoban", ["--set", "model.lora=null", "--set", "model.trainable_layers=3"]),
    ],
)
def test_more_trainable_layers_than_the_model_has_are_refused_before_any_model_loads(
    command: str,
    env: str,
    extra: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("torch")
    args = [command, "--env", env, "--model", "tiny-random"]
    args += ["--steps", "1"] if command == "train" else []
    args += ["--output", str(tmp_path / "run"), *extra]

    assert main(args) == 2

    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1
    assert lines[0].startswith("roll-agent: error: model.trainable_layers=")
    assert "but tiny-random has 2 decoder layers: choose 1 to 2, or null" in lines[0]
    assert "Loading model" not in out + err
    assert not (tmp_path / "run" / "sft").exists()  # the warm start never began


def test_envs_does_not_import_torch_or_ray() -> None:
    code = (
        "import sys; from trainer.cli.main import main; main(['envs']); "
        "assert 'torch' not in sys.modules and 'ray' not in sys.modules"
    )

    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("preset", [n for n in preset_names() if n.endswith("-rl-only")])
def test_each_rl_only_preset_trains_a_step_from_the_command_line(preset: str, tmp_path: Path):
    pytest.importorskip("torch")
    output = tmp_path / "run"
    # the tiny model has 2 layers: train them all; 2 groups keep the step short
    overrides = ["--set", "model.trainable_layers=null", "--set", "env.groups_per_step=2"]
    args = ["train", "--env", preset, "--model", "tiny-random", "--steps", "1"]
    assert main([*args, "--output", str(output), *overrides]) == 0

    rows = [json.loads(line) for line in (output / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows if "rollout/success" in row] == [1]
    env = load_config(preset).env
    if env.curriculum is not None:  # the step played at the curriculum's first level
        start = env.kwargs[env.curriculum.kwarg]
        assert rows[0][f"curriculum/{env.curriculum.kwarg}"] == start
