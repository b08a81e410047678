"""Math envs: equivalence checking, the oracle on 200 generated problems, the Python tool."""

from __future__ import annotations

import re
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rollenv
from environments.math.data import MathProblem, load_jsonl
from environments.math.env import question_expressions
from environments.math.verify import is_correct, is_equivalent
from rollenv import check_reward
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


# ---------------------------------------------------------------------------------- rewards
@pytest.mark.parametrize(
    "answer, reference, question, counts",
    [
        ("0.5", "\\frac{1}{2}", "", True),  # equivalent results in either form
        ("-\\frac{3}{4}", "-0.75", "", True),
        ("28,080", "28080", "", True),
        ("$747", "747", "", True),  # a currency sign or a unit word around the number
        ("28080 pounds", "28080", "", True),
        ("x = 5", "5", "", True),
        ("14 + 37 * -17 / 1 + 46", "-569", "Calculate 14 + 37 * -17 / 1 + 46.", False),
        ("12/16", "3/4", "Simplify the fraction 12/16 to its lowest terms.", False),
        ("\\dfrac{12}{16}", "\\dfrac{3}{4}", "Simplify $\\dfrac{12}{16}$.", False),
        ("3/4", "0.75", "Calculate 3 / 4.", False),  # the question's own fraction
        ("26, 130", "26", "Find the GCD of these numbers: 26, 130.", False),
        ("26", "26", "Find the GCD of these numbers: 26, 130.", True),  # the answer is in it
        ("(x+1)^2 - 1", "x^2 + 2x", "Expand (x+1)^2 - 1.", False),
        ("x^2+2x", "x^2 + 2x", "Expand (x+1)^2 - 1.", True),
        ("2", "2x", "", False),  # a variable is no unit to strip
        ("x^2+2y", "x^2+2x", "", False),
        ("5cm", "5", "", True),
        ("5 m", "5", "", True),
    ],
)
def test_only_a_result_in_the_answer_form_is_correct(answer, reference, question, counts):
    assert is_correct(answer, reference, question) is counts


def test_the_question_copied_back_earns_nothing_on_500_seeds():
    report = check_reward(rollenv.make("MathVerify-v0"), seeds=range(500))
    copied = {p.name: p for p in report.probes}
    for name in ("observation copied", "question in \\boxed{}", "expression restated"):
        assert copied[name].mean_return == 0.0 and copied[name].success_rate == 0.0
    assert copied["expression restated"].episodes > 100  # the generators that have one
    assert report.oracle.success_rate == 1.0


def _question_numbers(question: str) -> list[str]:
    return re.findall(r"\d+", question)


@st.composite
def task_ignoring_answers(draw, question: str) -> str:
    """An answer made of the question alone: itself, its numbers joined or listed, its maths."""
    numbers = _question_numbers(question)
    kinds = ["question", "repeated"]
    if len(numbers) >= 2:
        kinds += ["expression", "list"]
    if question_expressions(question):
        kinds.append("span")
    kind = draw(st.sampled_from(kinds))
    if kind == "question":
        answer = question
    elif kind == "repeated":
        answer = " ".join([question] * draw(st.integers(2, 4)))
    elif kind == "span":
        answer = draw(st.sampled_from(question_expressions(question)))
    else:
        picked = draw(st.lists(st.sampled_from(numbers), min_size=2, max_size=6))
        if kind == "list":
            answer = draw(st.sampled_from([", ", "; ", " "])).join(picked)
        else:  # an unevaluated expression: at least one + - * between the question's numbers
            operators = draw(
                st.lists(st.sampled_from("+-*"), min_size=len(picked) - 1, max_size=len(picked) - 1)
            )
            answer = picked[0] + "".join(
                f" {o} {n}" for o, n in zip(operators, picked[1:], strict=True)
            )
    wrapper = draw(
        st.sampled_from(["<answer>{}</answer>", "\\boxed{{{}}}", "<answer>${}$</answer>"])
    )
    return wrapper.format(answer)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(seed=st.integers(0, 100_000), data=st.data())
def test_property_answers_built_from_the_question_alone_earn_nothing(seed, data):
    env = rollenv.make("MathVerify-v0")
    obs, _ = env.reset(seed=seed)
    reply = data.draw(task_ignoring_answers(env.unwrapped.problem.question))
    _, reward, _, _, info = env.step(reply)
    assert reward <= 0.0 and not info["metrics"]["success"], (obs, reply)


def test_task_config_sets_the_reasoning_gym_difficulty():
    easy = {
        "basic_arithmetic": {
            "max_terms": 2,
            "max_digits": 1,
            "operators": ["+"],
            "allow_parentheses": False,
            "allow_negation": False,
        }
    }
    env = rollenv.make("MathVerify-v0", tasks=["basic_arithmetic"], task_config=easy)
    for seed in range(20):
        obs, _ = env.reset(seed=seed)
        terms = re.fullmatch(r"Calculate (\d+) \+ (\d+)\.", obs)
        assert terms is not None, obs
        assert all(0 <= int(t) <= 10 for t in terms.groups())  # reasoning-gym: below 10**digits + 1
        answer = int(terms[1]) + int(terms[2])
        assert env.step(f"<answer>{answer}</answer>")[1] == 1.0
    # the same seed gives the default configuration's problem without it
    default = rollenv.make("MathVerify-v0", tasks=["basic_arithmetic"])
    assert [default.reset(seed=s)[0] for s in range(5)] != [env.reset(seed=s)[0] for s in range(5)]


def test_a_bad_task_config_names_what_is_wrong():
    with pytest.raises(ValueError, match=r"not among tasks \['chain_sum'\]"):
        rollenv.make("MathVerify-v0", tasks=["chain_sum"], task_config={"gcd": {}})
    with pytest.raises(ValueError, match="no setting terms; its settings: .*max_terms"):
        rollenv.make("MathVerify-v0", tasks=["chain_sum"], task_config={"chain_sum": {"terms": 2}})
