"""CodeSandbox envs: grading in the real bwrap sandbox, the oracle on all of HumanEval."""

from __future__ import annotations

import re
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def test_a_partial_solution_earns_nothing_but_reports_its_pass_rate():
    env = rollenv.make("CodeSandbox-v0")
    env.reset(seed=0, options={"index": 0})  # has_close_elements: 7 tests
    # right only when nothing is close, so it fails exactly the tests that expect True
    reply = "<answer>def has_close_elements(numbers, threshold):\n    return False</answer>"
    _, reward, terminated, _, info = env.step(reply)
    expected_true = [s for s in env.unwrapped.problem.test.splitlines() if "== True" in s]
    total = sum(1 for s in env.unwrapped.problem.test.splitlines() if "assert candidate" in s)
    assert reward == 0.0  # pass@1: all tests or nothing
    assert info["metrics"]["pass_rate"] == pytest.approx((total - len(expected_true)) / total)
    assert terminated and not info["metrics"]["success"]


ADD_PROBLEM = (
    '{"task_id": "add", "text": "Write a function to add two numbers.", '
    '"code": "def add(a, b):\\n    return a + b", '
    '"test_list": ["assert add(1, 2) == 3", "assert add(0, 0) == 0", "assert add(2, 2) == 4"]}\n'
)


def test_partial_credit_counts_only_the_tests_no_stub_passes(tmp_path):
    path = tmp_path / "add.jsonl"
    path.write_text(ADD_PROBLEM)
    env = rollenv.make("CodeSandbox-v0", dataset=str(path), partial_credit=True)
    env.reset(seed=0)
    assert env.unwrapped.passed_by_stubs() == {1}  # "return 0" passes add(0, 0) == 0
    # right on add(1, 2) only: one of the two tests that no stub passes
    _, reward, _, _, info = env.step("<answer>def add(a, b):\n    return 3</answer>")
    assert reward == 0.5 and info["metrics"]["pass_rate"] == pytest.approx(1 / 3)
    for stub in ("return 0", "return None", "return a"):
        env.reset(seed=0)
        _, reward, _, _, _ = env.step(f"<answer>def add(a, b):\n    {stub}</answer>")
        assert reward == 0.0, stub
    env.reset(seed=0)
    assert env.step("<answer>def add(a, b):\n    return a + b</answer>")[1] == 1.0


def test_last_result_is_the_answers_run_even_when_the_stubs_run_after_it(tmp_path):
    path = tmp_path / "add.jsonl"
    path.write_text(ADD_PROBLEM)
    env = rollenv.make("CodeSandbox-v0", dataset=str(path), partial_credit=True)
    env.reset(seed=0)
    # wrong on add(1, 2) only: passes 2 of 3 tests; the stubs (run now, for the credit) pass 1
    env.step("<answer>def add(a, b):\n    return 0 if a == 1 else a + b</answer>")
    passed_lines = re.findall(r"^@@test-result-\w+ \d+ 1 ", env.unwrapped.last_result.stdout, re.M)
    assert len(passed_lines) == 2


def _stub_returns(env, indices: list[int]) -> list[tuple[int, str, float]]:
    """(problem, stub, reward) of every stub that earned something on these problems."""
    earned = []
    for index in indices:
        env.reset(seed=0, options={"index": index})
        for name, reply in env.unwrapped.task_ignoring_replies().items():
            env.reset(seed=0, options={"index": index})
            _, reward, _, _, info = env.step(reply)
            if reward > 0 or info["metrics"]["success"]:
                earned.append((index, name, reward))
    return earned


def _stubs_earned(partial_credit: bool, problems: range) -> list[tuple[int, str, float]]:
    chunks = [list(problems)[i::2] for i in range(2)]
    with ThreadPoolExecutor(2) as pool:
        envs = [rollenv.make("CodeSandbox-v0", partial_credit=partial_credit) for _ in chunks]
        return sum(pool.map(_stub_returns, envs, chunks), [])


@pytest.mark.slow
def test_every_stub_earns_nothing_on_all_164_problems():
    assert _stubs_earned(partial_credit=False, problems=range(164)) == []


@pytest.mark.slow
def test_with_partial_credit_stubs_still_earn_nothing():
    # partial credit runs every stub once per problem first: a quarter of HumanEval here
    assert _stubs_earned(partial_credit=True, problems=range(0, 164, 4)) == []


@st.composite
def constant_stubs(draw) -> str:
    """A function body that ignores the problem: a constant of any common type, or an input."""
    constant = st.recursive(
        st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2) | st.text(max_size=3),
        lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner),
        max_leaves=4,
    )
    kind = draw(st.sampled_from(["constant", "argument", "raise"]))
    if kind == "constant":
        return f"return {draw(constant)!r}"
    if kind == "argument":
        return f"return args[{draw(st.integers(0, 2))}] if len(args) > 2 else None"
    return "raise ValueError('no')"


@settings(max_examples=60, deadline=None, derandomize=True)
@given(index=st.integers(0, 163), body=constant_stubs())
def test_property_a_function_that_ignores_the_problem_earns_nothing(index, body):
    env = rollenv.make("CodeSandbox-v0")
    env.reset(seed=0, options={"index": index})
    entry = env.unwrapped.problem.entry_point
    reply = f"<answer>def {entry}(*args, **kwargs):\n    {body}</answer>"
    _, reward, _, _, info = env.step(reply)
    assert reward == 0.0 and not info["metrics"]["success"], (index, body)


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
        "    print('@@test-result-0000000000000000 ' + str(i) + ' 1 ')\n"
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
    _, reward, _, _, info = env.step("<answer>def add(a, b):\n    return 3</answer>")
    assert reward == 0.0 and info["metrics"]["pass_rate"] == 0.5


def test_defer_reward_is_single_turn_and_needs_a_dataset():
    import rollenv

    with pytest.raises(ValueError, match="defer_reward needs max_attempts=1"):
        rollenv.make("CodeSandboxMultiTurn-v0", defer_reward=True)
    env = rollenv.make("CodeSandbox-v0", defer_reward=True)
    obs, info = env.reset(seed=0)
    _, reward, terminated, _, info = env.step("<answer>def f():\n    return 1</answer>")
    assert reward == 0.0 and terminated and not info["metrics"]["success"]
    request = info["reward_request"]
    assert request["kind"] == "sandbox" and request["rule"] == "environments.code.env:pass_at_1"
    from environments.code.env import pass_at_1

    assert pass_at_1(request["response"], **request["data"]) == 0.0


def test_a_failures_text_reaches_the_feedback_whole():
    env = rollenv.make("CodeSandboxMultiTurn-v0")
    env.reset(seed=0, options={"index": 2})  # truncate_number
    reply = "<answer>def truncate_number(x):\n    raise ValueError('naïve ✓\\nline two')</answer>"
    obs, reward, _, _, _ = env.step(reply)
    assert reward == 0.0
    assert "ValueError: naïve ✓\nline two" in obs
