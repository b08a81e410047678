"""``rollenv.check_reward`` on envs built to be gameable, and on one that is not."""

from __future__ import annotations

from typing import Any

import pytest

import rollenv
from rollenv import GameableRewardError, RewardTolerance, check_reward
from tests.rollenv.say_the_word import ENTRY_POINT, SayTheWord


@pytest.fixture(scope="module", autouse=True)
def registered():
    rollenv.register("SayTheWord-v0", ENTRY_POINT, max_episode_steps=1)
    yield
    rollenv.registry._remove("SayTheWord-v0")


def test_an_honest_reward_passes_and_reports_every_probe():
    report = check_reward(rollenv.make("SayTheWord-v0"), seeds=range(10))
    assert report.passed and report.gaming == []
    assert report.oracle.success_rate == 1.0 and report.oracle.mean_return == 1.0
    names = [p.name for p in report.probes]
    for expected in (
        "empty answer",
        "observation copied",
        "padding to the length limit",
        "oracle's answer, wrong tag",
        "the magic word",
        "random action words",
    ):
        assert expected in names
    wrong_tag = next(p for p in report.probes if p.name == "oracle's answer, wrong tag")
    assert wrong_tag.mean_return == -0.1  # the format penalty: the right word, the wrong tag


def test_a_reward_paid_for_any_answer_fails_with_a_table_naming_the_replies():
    with pytest.raises(GameableRewardError) as caught:
        check_reward(rollenv.make("SayTheWord-v0", pays_for="any answer"), seeds=range(10))
    message = str(caught.value)
    gaming = {p.name for p in caught.value.report.gaming}
    # every probe whose reply parses to an action; empty answers, a reply without the tag and
    # the instruction (it holds "<answer></answer>" itself) parse to none and cost the penalty
    assert gaming == {
        "observation copied",
        "observation repeated",
        "padding to the length limit",
        "the magic word",
    }
    assert message.startswith("SayTheWord-v0: replies that ignore the task earn reward:")
    assert "'observation copied' (50.0% of the oracle's return, 0% success)" in message
    for line in message.splitlines():
        if line.startswith("observation copied "):
            assert line.split()[-1] == "GAMEABLE" and "50.0%" in line
            break
    else:
        raise AssertionError(f"no table row for 'observation copied' in:\n{message}")


def test_a_reward_paid_for_length_is_caught_by_the_padding_probe():
    report = check_reward(
        rollenv.make("SayTheWord-v0", pays_for="length"), seeds=range(5), raise_on_failure=False
    )
    assert [p.name for p in report.gaming] == ["padding to the length limit"]
    assert not report.passed


def test_a_family_probe_finds_what_the_generic_battery_does_not():
    report = check_reward(
        rollenv.make("SayTheWord-v0", pays_for="magic"), seeds=range(5), raise_on_failure=False
    )
    assert [p.name for p in report.gaming] == ["the magic word"]
    magic = report.gaming[0]
    assert magic.success_rate == 1.0 and magic.share == 1.0


def test_the_random_baseline_is_reported_but_never_judged():
    # five words: random replies say the secret a fifth of the time, which is no gaming
    report = check_reward(rollenv.make("SayTheWord-v0"), seeds=range(40))
    baseline = report.random_baseline
    assert baseline is not None and not baseline.counted
    assert 0 < baseline.success_rate < 1
    assert report.passed


def test_a_looser_tolerance_lets_a_small_payment_through():
    env = rollenv.make("SayTheWord-v0", pays_for="any answer")
    loose = RewardTolerance(max_share=0.6, max_success=0.0)
    assert check_reward(env, seeds=range(5), tolerance=loose).passed


def test_reset_options_reach_every_episode():
    seen = []

    def options(seed: int) -> dict[str, Any]:
        seen.append(seed)
        return {"seed_was": seed}

    check_reward(rollenv.make("SayTheWord-v0"), seeds=[3, 4], options=options)
    assert set(seen) == {3, 4}


def test_an_env_without_an_oracle_is_refused_by_name():
    class NoOracle(SayTheWord):
        oracle = None

    with pytest.raises(NotImplementedError, match="NoOracle"):
        check_reward(NoOracle(), seeds=range(2))
