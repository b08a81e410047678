"""MCPToolsEnv against its real stdio MCP server: tools, answers, errors, the server's life."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import rollenv
from environments.mcp_tools.client import MCPServerError, discard_idle
from environments.mcp_tools.env import MCPToolsEnv
from rollenv.policies import RandomPolicy, oracle_for, run_episode

needs_proc = pytest.mark.skipif(not Path("/proc/self").exists(), reason="reads /proc")


@pytest.fixture(scope="module")
def env():
    env = MCPToolsEnv()
    yield env
    env.close()


def _step(env, action: str):
    return env.step(f"<answer>{action}</answer>")


def _result(obs: str) -> str:
    return obs.split("Result:\n", 1)[1].rsplit("\n\nActions left:", 1)[0]


def _exists(pid: int) -> bool:
    """Whether the process still exists, a zombie (exited, never reaped) included."""
    return Path(f"/proc/{pid}").exists()


def test_instruction_lists_the_servers_tools_with_their_schemas(env):
    env.reset(seed=0)
    instruction = env.instruction
    for tool in ("list_files", "read_file", "lookup", "calculate"):
        assert f"- {tool}: " in instruction
    assert '"path": {"type": "string"}' in instruction
    assert "admin_" not in instruction
    assert "call[TOOL]" in instruction and "answer[TEXT]" in instruction


def test_tools_serve_the_episodes_data(env):
    env.reset(seed=4)
    world = env.world
    path = sorted(world.files)[0]
    obs, reward, terminated, _, info = _step(env, f'call[read_file]{{"path": "{path}"}}')
    assert _result(obs) == world.files[path]
    assert (reward, terminated, info["metrics"]["action_is_effective"]) == (0.0, False, True)
    obs, *_ = _step(env, "call[list_files]{}")
    assert _result(obs).splitlines() == sorted(world.files)
    item, price = sorted(world.tables["prices"].items())[0]
    obs, *_ = _step(env, f'call[lookup]{{"table": "prices", "key": "{item}"}}')
    assert _result(obs) == price
    obs, *_ = _step(env, 'call[calculate]{"expression": "3 * (2 + 5)"}')
    assert _result(obs) == "21"


def test_the_next_episode_sees_its_own_data(env):
    env.reset(seed=1)
    first = env.world
    env.reset(seed=2)
    assert env.world.files != first.files
    path = sorted(env.world.files)[0]
    obs, *_ = _step(env, f'call[read_file]{{"path": "{path}"}}')
    assert _result(obs) == env.world.files[path]


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ('call[read_file]{"path": "notes/readme.md"}', "no file 'notes/readme.md'; did you mean"),
        ('call[read_file]{"file": "notes/readme.txt"}', "path\n  Field required"),
        ('call[lookup]{"table": "price", "key": "x"}', "no table 'price'; did you mean 'prices'"),
        ('call[calculate]{"expression": "1 / 0"}', "division by zero"),
        ("call[delete_file]{}", "unknown tool 'delete_file'; the tools are list_files"),
        ('call[admin_load_world]{"world": "{}"}', "unknown tool 'admin_load_world'"),
    ],
)
def test_tool_errors_are_shown_not_raised(env, action, message):
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = _step(env, action)
    assert _result(obs).startswith("Error: ") and message in _result(obs)
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["metrics"]["action_is_valid"] is True
    assert "For further information" not in obs


@pytest.mark.parametrize(
    "action",
    ["call[read_file]{path: 1}", 'call[read_file]["a"]', "call[]{}", "answer[]", "read_file"],
)
def test_malformed_actions_are_penalised_no_ops(env, action):
    obs_before, _ = env.reset(seed=0)
    obs, reward, terminated, _, info = _step(env, action)
    assert (obs, reward, terminated) == (obs_before, -0.1, False)
    assert info["metrics"]["action_is_valid"] is False


def test_the_answer_ends_the_episode_with_its_reward(env):
    env.reset(seed=6)
    obs, reward, terminated, _, info = _step(env, "answer[certainly not the answer]")
    assert (reward, terminated, info["metrics"]["success"]) == (0.0, True, False)
    assert "That is wrong." in obs
    env.reset(seed=6)
    answer = env.task.answer
    _, reward, terminated, _, info = _step(env, f"answer[{answer}]")
    assert (reward, terminated, info["metrics"]["success"]) == (1.0, True, True)


def test_the_episode_is_truncated_when_actions_run_out():
    short = MCPToolsEnv(max_actions=2)
    try:
        short.reset(seed=0)
        assert _step(short, "call[list_files]{}")[2:4] == (False, False)
        _, reward, terminated, truncated, _ = _step(short, "call[list_files]{}")
        assert (reward, terminated, truncated) == (0.0, False, True)
    finally:
        short.close()


@pytest.mark.parametrize("env_id", ["MCPTools-v0", "MCPToolsHard-v0"])
def test_oracle_always_and_random_policy_never_succeeds(env_id):
    env = rollenv.make(env_id)
    try:
        oracle = oracle_for(env)
        assert all(run_episode(env, oracle, seed=seed).success for seed in range(200))
        wins = [run_episode(env, RandomPolicy(env, seed=s), seed=s).success for s in range(200)]
        assert not any(wins)
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ["MCPTools-v0", "MCPToolsHard-v0"])
def test_no_task_ignoring_reply_earns_reward(env_id):
    env = rollenv.make(env_id)
    try:
        assert rollenv.check_reward(env, seeds=range(40)).oracle.success_rate == 1.0
    finally:
        env.close()


def test_same_seed_same_episode_across_envs(env):
    other = MCPToolsEnv()
    try:
        for seed in (3, 9):
            assert other.reset(seed=seed)[0] == env.reset(seed=seed)[0]
            assert other.task == env.task and other.world == env.world
    finally:
        other.close()


def test_steps_are_fast(env):
    env.reset(seed=0)
    start = time.perf_counter()
    for _ in range(40):
        env.step('<answer>call[read_file]{"path": "notes/readme.txt"}</answer>')
        env.actions_taken = 0  # keep the episode going: only the latency is measured
    assert (time.perf_counter() - start) / 40 < 0.05


# ---------------------------------------------------------------------------------- the process
@needs_proc
def test_close_stops_and_reaps_the_server():
    own = MCPToolsEnv()
    own.reset(seed=0)
    pid = own.server_pid
    assert _exists(pid)
    own.close()
    assert not _exists(pid)


@needs_proc
def test_a_dropped_env_hands_its_server_to_the_next_env():
    discard_idle()  # an env dropped by an earlier test may hold the idle slot
    dropped = MCPToolsEnv()
    dropped.reset(seed=0)
    pid = dropped.server_pid
    del dropped
    gc.collect()
    following = MCPToolsEnv()
    try:
        following.reset(seed=0)
        assert following.server_pid == pid
    finally:
        following.close()
    assert not _exists(pid)


@needs_proc
def test_interpreter_exit_stops_the_servers_of_unclosed_envs():
    script = (
        "from environments.mcp_tools.env import MCPToolsEnv\n"
        "envs = [MCPToolsEnv(), MCPToolsEnv()]\n"
        "for seed, env in enumerate(envs):\n"
        "    env.reset(seed=seed)\n"
        "print([env.server_pid for env in envs])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    pids = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(set(pids)) == 2
    assert not [pid for pid in pids if _exists(pid)]


@needs_proc
def test_a_killed_server_is_reported_then_replaced():
    own = MCPToolsEnv()
    try:
        own.reset(seed=0)
        os.kill(own.server_pid, signal.SIGKILL)
        obs, reward, terminated, _, info = _step(own, "call[list_files]{}")
        assert "Error: the MCP server failed" in _result(obs)
        assert (reward, terminated, info["metrics"]["action_is_valid"]) == (0.0, False, True)
        obs, *_ = _step(own, "call[list_files]{}")
        assert _result(obs).splitlines() == sorted(own.world.files)
    finally:
        own.close()


def test_a_server_that_cannot_start_fails_the_reset_with_one_clear_error():
    broken = MCPToolsEnv(server_command=["/nonexistent/mcp-server"])
    with pytest.raises(MCPServerError, match="'/nonexistent/mcp-server' did not start: FileNotF"):
        broken.reset(seed=0)
    silent = MCPToolsEnv(server_command=[sys.executable, "-c", "pass"])
    with pytest.raises(MCPServerError, match="did not start: MCPError: Connection closed"):
        silent.reset(seed=0)


def test_bad_settings_name_the_field():
    with pytest.raises(ValueError, match=r"difficulty='medium' is not one of"):
        MCPToolsEnv(difficulty="medium")
    with pytest.raises(ValueError, match="max_actions must be >= 2"):
        MCPToolsEnv(max_actions=1)
    with pytest.raises(ValueError, match="server_command must be a non-empty sequence"):
        MCPToolsEnv(server_command="python -m server")


@pytest.mark.parametrize("env_id", ["MCPTools-v0", "MCPToolsHard-v0"])
def test_the_oracle_solves_every_task_through_real_tool_calls(env_id):
    env = rollenv.make(env_id, action_format="tools")
    oracle = oracle_for(env)
    try:
        for seed in range(10):
            observation, info = env.reset(seed=seed)
            names = {tool["function"]["name"] for tool in info["tools"]}
            # the server's own tools, as it lists them, and the answer
            assert {"list_files", "read_file", "answer"} <= names
            done = False
            while not done:
                message = json.loads(oracle.act(observation, info))
                assert message["content"] is None  # no call[...] text: calls only
                (call,) = message["tool_calls"]
                assert call["function"]["name"] in names
                observation, reward, terminated, truncated, info = env.step(json.dumps(message))
                assert json.loads(observation)[0]["tool_call_id"] == call["id"]
                done = terminated or truncated
            assert info["metrics"]["success"] and reward == 1.0
    finally:
        env.close()
