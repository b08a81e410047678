"""The gold-answer oracle on every reasoning-gym task that has a reference answer."""

from __future__ import annotations

import pytest

import rollenv
from environments.gem.catalog import GAMEABLE_TASKS, TASKS_WITHOUT_GOLD
from environments.gem.env import GemEnv, GemReasoningEnv
from rollenv.policies import has_oracle, oracle_for, run_episode, text_env_of

from .conftest import REGISTERED, SLOW_GEM_IDS, param

TASKS = [e for e in REGISTERED if e.kind == "task"]


@pytest.mark.parametrize("entry", [param(e) for e in TASKS if e.has_gold_answer])
def test_the_oracle_solves_every_seed(entry):
    env = rollenv.make(entry.env_id)
    oracle = oracle_for(env)
    seeds = range(3 if entry.env_id in SLOW_GEM_IDS else 20)
    failed = [seed for seed in seeds if not run_episode(env, oracle, seed=seed).success]
    assert failed == []


@pytest.mark.parametrize("name", sorted(TASKS_WITHOUT_GOLD))
def test_tasks_without_a_reference_answer_have_no_oracle(name):
    entry = next(e for e in TASKS if e.name == name)
    if entry.env_id not in rollenv.registry:
        pytest.skip(f"{entry.env_id} is unavailable here: {entry.unavailable}")
    spec = rollenv.spec(entry.env_id)
    assert not has_oracle(spec)
    env = rollenv.make(entry.env_id)
    env.reset(seed=0)
    assert type(text_env_of(env)) is GemEnv
    if TASKS_WITHOUT_GOLD[name].startswith("no reference answer"):
        assert text_env_of(env)._gem.data["answer"] is None


def test_games_have_no_oracle():
    games = [e for e in REGISTERED if e.kind == "game"]
    assert games and not any(has_oracle(rollenv.spec(e.env_id)) for e in games)


@pytest.mark.parametrize(
    "env_id", ["gem/Gcd-v0", "gem/BasicArithmetic-v0", "gem/LetterCounting-v0", "gem/Maze-v0"]
)
def test_no_task_ignoring_reply_earns_reward(env_id):
    report = rollenv.check_reward(rollenv.make(env_id), seeds=range(12))
    assert report.passed, report.table()
    assert report.oracle.success_rate == 1.0
    assert isinstance(text_env_of(rollenv.make(env_id)), GemReasoningEnv)


@pytest.mark.parametrize("name", sorted(GAMEABLE_TASKS))
def test_the_tasks_left_out_for_a_gameable_reward_are_gameable(name):
    env = GemReasoningEnv(f"rg:{name}")
    with pytest.raises(rollenv.GameableRewardError, match="observation copied|padding|random"):
        rollenv.check_reward(env, seeds=range(12))
    assert f"gem/{name}" not in {i.lower() for i in rollenv.registry}
