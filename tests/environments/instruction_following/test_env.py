"""InstructionFollowing-v0: the oracle keeps every constraint, random and task-ignoring replies
earn nothing, and bad prompts are refused with one clear line."""

from __future__ import annotations

import random
import statistics

import pytest

import rollenv
from environments.instruction_following.constraints import CONSTRAINT_KINDS, UnknownConstraintError
from environments.instruction_following.env import InstructionFollowingEnv
from environments.instruction_following.generator import (
    FORBIDDEN,
    RARE_LETTERS,
    generate_prompt,
)
from environments.instruction_following.writer import write_reply
from rollenv.policies import RandomPolicy, oracle_for, run_episode

TASK = {"task": "Write a diary entry about the garden.", "topic": "garden"}
REPLY = (
    "My garden woke early today and the roses opened while the bees came back to work "
    "in the warm morning light."
)


def _step(reply: str, constraints: list, **kwargs):
    env = InstructionFollowingEnv(**kwargs)
    env.reset(options={**TASK, "constraints": constraints})
    return env, env.step(f"<answer>{reply}</answer>")


def test_the_oracle_keeps_every_constraint_of_500_prompts():
    env = rollenv.make("InstructionFollowing-v0")
    oracle = oracle_for(env)
    returns, kinds_seen = [], set()
    for seed in range(500):
        result = run_episode(env, oracle, seed=seed)
        returns.append(result.total_reward)
        kinds_seen |= {c["kind"] for c in text_env(env).prompt.constraints}
    assert returns == [1.0] * 500
    assert kinds_seen == set(CONSTRAINT_KINDS)  # every kind was drawn and kept


def text_env(env) -> InstructionFollowingEnv:
    return env.unwrapped


def test_random_replies_score_near_zero():
    env = rollenv.make("InstructionFollowing-v0")
    policy = RandomPolicy(env, seed=0)
    returns = [run_episode(env, policy, seed=seed).total_reward for seed in range(200)]
    assert statistics.mean(returns) <= 0.01


def test_the_oracle_never_writes_a_forbidden_word_a_rare_letter_or_a_comma():
    for seed in range(300):
        prompt = generate_prompt(random.Random(seed))
        kinds = {c["kind"] for c in prompt.constraints}
        reply = write_reply(prompt).lower()
        assert not any(f" {word} " in f" {reply} " for word in FORBIDDEN)
        if "json_format" not in kinds:
            assert "," not in reply
            assert not any(letter in reply for letter in RARE_LETTERS)


def test_the_reward_is_the_fraction_kept_or_all_or_nothing():
    constraints = [
        {"kind": "no_commas", "args": {}},
        {"kind": "word_count_at_least", "args": {"n": 100}},
    ]
    env, (_, reward, terminated, _, info) = _step(REPLY, constraints)
    assert (reward, terminated, info["metrics"]["success"]) == (0.5, True, False)
    assert env.kept == [True, False]
    assert "Kept 1 of 2 constraints (kept: 1)." in env.render()
    _, (_, reward, _, _, _) = _step(REPLY, constraints, all_or_nothing=True)
    assert reward == 0.0
    _, (_, reward, _, _, info) = _step(REPLY, constraints[:1], all_or_nothing=True)
    assert (reward, info["metrics"]["success"]) == (1.0, True)


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("The garden is nice.", "it has 4 words, fewer than 15"),
        ("garden " * 20, "fewer than 8 different words"),
        (REPLY.replace("garden", "yard"), "does not name the topic (garden)"),
        (
            "Write a diary entry about the garden. Constraints: 1. Do not use any commas. Yes.",
            "repeats 8 or more words of the prompt",
        ),
        (
            "My reply about the garden keeps each constraint that was given and so it deserves "
            "the full reward today.",
            "talks about its constraints or its reward",
        ),
    ],
)
def test_a_reply_that_is_no_attempt_at_the_task_earns_nothing(reply, why):
    env, (_, reward, _, _, info) = _step(reply, [{"kind": "no_commas", "args": {}}])
    assert reward == 0.0 and not info["metrics"]["success"]
    assert why in env.off_task
    assert "Not scored:" in env.render()


def test_task_ignoring_replies_earn_nothing_over_many_prompts():
    # 30 seeds here (the registry-wide test runs 12); `roll-agent check InstructionFollowing-v0
    # --reward --episodes 500` passes too
    report = rollenv.check_reward(rollenv.make("InstructionFollowing-v0"), seeds=range(30))
    assert report.passed, report.table()
    assert report.oracle.success_rate == 1.0
    names = {p.name for p in report.probes}
    assert {"prose about nothing", "a claim of compliance", "constraints restated"} <= names
    assert all(p.mean_return <= 0 for p in report.probes if p.counted)


def test_a_bad_prompt_or_kind_is_refused_with_one_line():
    env = InstructionFollowingEnv()
    with pytest.raises(UnknownConstraintError, match="did you mean: postscript"):
        env.reset(options={**TASK, "constraints": [{"kind": "postscrpt", "args": {}}]})
    with pytest.raises(ValueError, match="'task' and 'topic'"):
        env.reset(options={"constraints": [{"kind": "no_commas", "args": {}}]})
    with pytest.raises(UnknownConstraintError, match="did you mean: title"):
        InstructionFollowingEnv(kinds=["titel"])
    with pytest.raises(ValueError, match="within 1..5"):
        InstructionFollowingEnv(constraints=(0, 2))


def test_kinds_limit_what_is_drawn():
    env = InstructionFollowingEnv(constraints=2, kinds=["no_commas", "title", "json_format"])
    for seed in range(20):
        env.reset(seed=seed)
        kinds = [c["kind"] for c in env.prompt.constraints]
        # json_format claims the commas and the start: it never comes with the other two
        assert kinds and set(kinds) <= {"no_commas", "title", "json_format"}
        assert "json_format" not in kinds or kinds == ["json_format"]
