"""JudgedAnswer-v0: the rule first, answers addressed to the grader and over-long ones refused
before any verifier, and a judge asked (with defer_reward) only about what the rule rejects."""

from __future__ import annotations

import pytest

pytest.importorskip("reasoning_gym")

import rollenv  # noqa: E402
from environments.judged_answer.env import JudgedAnswerEnv  # noqa: E402
from environments.judged_answer.questions import SOURCES  # noqa: E402

GIVEN = {"question": "What is Ann to Bo?", "reference": "mother-in-law"}


def _step(env, answer):
    env.reset(options=GIVEN)
    return env.step(f"<answer>{answer}</answer>")


@pytest.mark.parametrize("answer", ["mother-in-law", " Mother-in-law. ", "'MOTHER-IN-LAW'"])
def test_the_rule_takes_the_reference_up_to_case_and_punctuation(answer):
    for env in (JudgedAnswerEnv(), JudgedAnswerEnv(defer_reward=True)):
        _, reward, terminated, _, info = _step(env, answer)
        assert reward == 1.0 and terminated and info["metrics"]["success"]
        assert "reward_request" not in info  # no judge needed


def test_a_rejected_answer_scores_0_inline_and_goes_to_the_judge_when_deferred():
    _, reward, _, _, info = _step(JudgedAnswerEnv(), "She is his mother-in-law")
    assert reward == 0.0 and not info["metrics"]["success"] and "reward_request" not in info
    obs, reward, _, _, info = _step(JudgedAnswerEnv(defer_reward=True), "She is his mother-in-law")
    assert reward == 0.0 and "a judge scores it" in obs
    assert info["reward_request"] == {
        "kind": "judge",
        "question": GIVEN["question"],
        "response": "She is his mother-in-law",
        "reference": "mother-in-law",
    }


def test_replies_to_the_grader_and_overlong_answers_never_reach_a_judge():
    env = JudgedAnswerEnv(defer_reward=True)
    env.reset(options=GIVEN)
    probes = env.task_ignoring_replies()
    assert len(probes) == 7
    for name, reply in probes.items():
        env.reset(options=GIVEN)
        obs, reward, _, _, info = env.step(reply)
        assert reward == 0.0, name
        assert "reward_request" not in info, name
        assert "Not scored" in obs, name  # refused before the rule and the judge
    # the reference inside a long answer: over the limit, refused unseen
    env = JudgedAnswerEnv(defer_reward=True, max_answer_chars=30)
    obs, reward, *_ = _step(env, "it is a relation by marriage, a mother-in-law")
    assert reward == 0.0 and "over 30 characters" in obs


@pytest.mark.parametrize("source", SOURCES)
def test_each_source_gives_a_question_its_reference_answers(source):
    env = rollenv.make("JudgedAnswer-v0", sources=[source])
    obs, info = env.reset(seed=11)
    assert info["source"] == source and obs.startswith("Question: ")
    reference = env.unwrapped.current.reference
    assert reference.strip()
    _, reward, *_ = env.step(f"<answer>{reference}</answer>")
    assert reward == 1.0
    env.reset(seed=11)
    _, reward, *_ = env.step("<answer>zzz</answer>")
    assert reward == 0.0


def test_bad_input_is_one_clear_line():
    with pytest.raises(ValueError, match="sources must be some of family_relationships"):
        JudgedAnswerEnv(sources=["trivia"])
    env = JudgedAnswerEnv()
    with pytest.raises(ValueError, match="'question' and 'reference'"):
        env.reset(options={"question": "What?"})
    for action in ["", "<answer>", "<answer></answer>", "\x00" * 5000]:
        env.reset(seed=0)
        env.step(action)  # never raises
