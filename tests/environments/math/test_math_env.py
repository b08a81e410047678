"""Math envs: equivalence checking, the oracle on 200 generated problems, the Python tool."""

from __future__ import annotations

import shutil

import pytest

import rollenv
from environments.math.data import MathProblem, load_jsonl
from environments.math.verify import is_equivalent
from rollenv.policies import oracle_for, run_episode


def test_oracle_solves_200_generated_problems():
    env = rollenv.make("MathVerify-v0")
    oracle = oracle_for(env)
    sources, failed = set(), []
    for seed in range(200):
        result = run_episode(env, oracle, seed=seed)
        sources.add(env.unwrapped.problem.source)
        if not (result.success and result.total_reward == 1.0):
            failed.append(seed)
    assert failed == []
    assert len(sources) >= 3


@pytest.mark.parametrize(
    "answer, reference, same",
    [
        ("0.5", "\\frac{1}{2}", True),
        ("1/2", "0.5", True),
        ("2x+1", "1+2x", True),
        ("3", "4", False),
    ],
)
def test_answers_are_compared_by_value(answer, reference, same):
    assert is_equivalent(answer, reference) is same


def test_boxed_answers_count_and_wrong_ones_fail():
    env = rollenv.make("MathVerify-v0")
    problem = MathProblem("What is half of one?", "\\frac{1}{2}", "test")
    env.reset(seed=0, options={"problem": problem})
    _, reward, terminated, _, info = env.step("It is \\boxed{0.5}.")
    assert reward == 1.0 and terminated and info["metrics"]["success"]
    env.reset(seed=0, options={"problem": problem})
    _, reward, terminated, _, info = env.step("<answer>0.25</answer>")
    assert reward == 0.0 and terminated and not info["metrics"]["success"]


def test_gsm8k_jsonl_answers_are_read_after_the_marks(tmp_path):
    path = tmp_path / "gsm.jsonl"
    path.write_text(
        '{"question": "2 boxes of 3?", "answer": "2*3=6\\n#### 6"}\n'
        '{"problem": "Half?", "solution": "It is $\\\\boxed{\\\\frac12}$."}\n'
    )
    problems = load_jsonl(path)
    assert [p.answer for p in problems] == ["6", "\\frac12"]
    env = rollenv.make("MathVerify-v0", dataset=str(path))
    assert all(run_episode(env, oracle_for(env), seed=s).success for s in range(4))


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_tool_runs_python_in_a_session_that_keeps_state():
    env = rollenv.make("MathTool-v0")
    problem = MathProblem("What is 2**100 mod 7?", str(2**100 % 7), "test")
    env.reset(seed=0, options={"problem": problem})
    obs, reward, terminated, _, info = env.step("<python>x = 2**100 % 7\nprint('x =', x)</python>")
    assert f"x = {2**100 % 7}" in obs and not terminated and reward == 0.0
    obs, *_ = env.step("<python>print(open('/etc/shadow').read())</python>")
    assert "Error" in obs and "root:" not in obs
    obs, *_ = env.step("<python>print(x * 10)</python>")
    assert str(2**100 % 7 * 10) in obs
    _, reward, terminated, _, info = env.step(f"<answer>{2**100 % 7}</answer>")
    assert reward == 1.0 and terminated and info["metrics"]["success"]
    env.close()
