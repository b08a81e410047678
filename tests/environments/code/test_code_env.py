"""CodeSandbox envs: grading in the real bwrap sandbox, the oracle on all of HumanEval."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest

import rollenv
from environments.code.data import load_humaneval, load_jsonl
from rollenv.policies import oracle_for, run_episode

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bubblewrap is not installed (apt-get install -y bubblewrap)",
)


def _oracle_successes(env, indices: list[int]) -> list[int]:
    oracle = oracle_for(env)
    failed = []
    for index in indices:
        env.reset(seed=0, options={"index": index})
        _, reward, terminated, _, info = env.step(oracle.act("", {}))
        if not (reward == 1.0 and terminated and info["metrics"]["success"]):
            failed.append(index)
    return failed


def test_oracle_passes_every_humaneval_problem():
    problems = load_humaneval()
    assert len(problems) == 164
    chunks = [list(range(i, len(problems), 2)) for i in range(2)]
    with ThreadPoolExecutor(2) as pool:
        envs = [rollenv.make("CodeSandbox-v0") for _ in chunks]
        failed = sum(pool.map(_oracle_successes, envs, chunks), [])
    assert failed == []


def test_partial_solution_gets_the_fraction_of_tests_passed():
    env = rollenv.make("CodeSandbox-v0")
    env.reset(seed=0, options={"index": 0})  # has_close_elements: 7 tests
    # right only when nothing is close, so it fails exactly the tests that expect True
    reply = "<answer>def has_close_elements(numbers, threshold):\n    return False</answer>"
    _, reward, terminated, _, info = env.step(reply)
    expected_true = [s for s in env.unwrapped.problem.test.splitlines() if "== True" in s]
    total = sum(1 for s in env.unwrapped.problem.test.splitlines() if "assert candidate" in s)
    assert reward == pytest.approx((total - len(expected_true)) / total)
    assert terminated and not info["metrics"]["success"]


def test_multi_turn_shows_the_failing_test_and_allows_a_fix():
    env = rollenv.make("CodeSandboxMultiTurn-v0")
    env.reset(seed=0, options={"index": 2})  # truncate_number
    obs, reward, terminated, _, _ = env.step(
        "<answer>def truncate_number(x):\n    return x</answer>"
    )
    assert not terminated and reward == 0.0
    assert "previous answer failed" in obs and "assert" in obs
    oracle = oracle_for(env)
    _, reward, terminated, _, info = env.step(oracle.act(obs, {}))
    assert terminated and reward == 1.0 and info["metrics"]["success"]


def test_hanging_answer_times_out_and_scores_zero():
    env = rollenv.make("CodeSandbox-v0", timeout_s=1.0)
    env.reset(seed=0, options={"index": 2})
    _, reward, terminated, _, _ = env.step(
        "<answer>def truncate_number(x):\n    while True: pass</answer>"
    )
    assert reward == 0.0 and terminated
    assert env.unwrapped.last_result.timed_out


def test_printing_fake_results_does_not_score():
    env = rollenv.make("CodeSandbox-v0")
    env.reset(seed=0, options={"index": 2})
    fake = (
        "import sys\nfor i in range(10):\n"
        "    print('@@test-result-0000 [' + str(i) + ', true, \"\"]')\n"
        "def truncate_number(x):\n    return -1\n"
    )
    _, reward, _, _, _ = env.step(f"<answer>{fake}</answer>")
    assert reward == 0.0


def test_jsonl_loader_reads_mbpp_style_records(tmp_path):
    path = tmp_path / "mbpp.jsonl"
    path.write_text(
        '{"task_id": 1, "text": "Write a function to add two numbers.", '
        '"code": "def add(a, b):\\n    return a + b", '
        '"test_list": ["assert add(1, 2) == 3", "assert add(0, 0) == 0"]}\n'
    )
    problems = load_jsonl(path)
    env = rollenv.make("CodeSandbox-v0", problems=problems)
    result = run_episode(env, oracle_for(env), seed=0)
    assert result.success and result.total_reward == 1.0
    env.reset(seed=0)
    assert env.step("<answer>def add(a, b):\n    return 3</answer>")[1] == 0.5
