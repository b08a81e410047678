"""Search-QA's actions, answers and oracle: retrieval is real, answers are exact."""

from __future__ import annotations

import random

import pytest

import rollenv
from environments.searchqa.env import SearchQAEnv
from environments.searchqa.oracle import SearchQAOracle
from environments.searchqa.questions import draw_question
from rollenv.policies import RandomPolicy, run_episode


def _reply(action: str) -> str:
    return f"<answer>{action}</answer>"


def test_a_search_shows_the_top_passages():
    env = SearchQAEnv(hops=1, corpus_size="small")
    env.reset(seed=0)
    title = env.question.evidence[0]
    obs, reward, terminated, _, info = env.step(_reply(f"search[{title}]"))
    lines = obs.splitlines()
    assert lines[1] == f"Results for search[{title}]:"
    assert lines[2] == f"[1] {env.corpus.passage(title).render()}"
    assert len([line for line in lines if line.startswith("[")]) == 3
    assert lines[-1].startswith("Actions left: 3.")
    assert (reward, terminated) == (0.0, False) and info["metrics"]["action_is_effective"]
    # the same search again shows the same passages: valid, not effective
    obs_again, *_, info = env.step(_reply(f"SEARCH[{title}]"))
    assert info["metrics"]["action_is_valid"] and not info["metrics"]["action_is_effective"]


def test_a_right_answer_pays_one_and_a_wrong_one_ends_with_nothing():
    env = SearchQAEnv(hops=1, corpus_size="small")
    env.reset(seed=0)
    gold = env.question.answer
    _, reward, terminated, _, info = env.step(_reply(f"Answer[ {gold.upper()}. ]"))
    assert (reward, terminated, info["metrics"]["success"]) == (1.0, True, True)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(_reply(f"answer[{gold} or not]"))
    assert (reward, terminated, info["metrics"]["success"]) == (0.0, True, False)


def test_a_two_hop_answer_needs_both_passages():
    env = SearchQAEnv(hops=2, corpus_size="small")
    env.reset(seed=5)
    first, second = env.question.evidence
    obs, *_ = env.step(_reply(f"search[{first}]"))
    # the first passage names the second entity; the answer is only in the second passage
    assert second in env.corpus.passage(first).text
    assert env.question.answer in env.corpus.passage(second).values
    obs, *_ = env.step(_reply(f"search[{second}]"))
    assert env.corpus.passage(second).render() in obs


def test_running_out_of_actions_truncates_without_reward():
    env = SearchQAEnv(hops=1, corpus_size="small", max_actions=2)
    env.reset(seed=1)
    env.step(_reply("search[city]"))
    obs, reward, terminated, truncated, _ = env.step(_reply("search[river]"))
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert "Actions left: 0." in obs


@pytest.mark.parametrize(
    "reply",
    [
        _reply("search[]"),
        _reply("search[   ]"),
        _reply("answer[]"),
        _reply("lookup[Doloburg]"),
        _reply("search Doloburg"),
        _reply("Trunhamouth"),
        "search[Doloburg]",  # no answer tag
        _reply("search[a] answer[b]") + " trailing",
    ],
)
def test_anything_but_search_or_answer_is_a_penalised_no_op(reply):
    env = SearchQAEnv(hops=1, corpus_size="small")
    before, _ = env.reset(seed=2)
    obs, reward, terminated, _, info = env.step(reply)
    assert (obs, reward, terminated) == (before, -0.1, False)
    assert not info["metrics"]["action_is_valid"] and env.actions_taken == 0


@pytest.mark.parametrize("env_id", ["SearchQA-v0", "SearchQAMultiHop-v0"])
def test_the_oracle_answers_only_after_retrieving_every_evidence_passage(env_id):
    env = rollenv.make(env_id)
    inner, oracle = env.unwrapped, SearchQAOracle(env)
    for seed in range(200):
        obs, info = env.reset(seed=seed)
        terminated = truncated = False
        while not (terminated or truncated):
            reply = oracle.act(obs, info)
            if "answer[" in reply:
                # every passage of the chain was shown by one of its searches
                assert set(inner.question.evidence) <= inner.retrieved, seed
            obs, reward, terminated, truncated, info = env.step(reply)
        assert info["metrics"]["success"], seed


def test_random_samples_rarely_answer_a_two_hop_question():
    env = rollenv.make("SearchQAMultiHop-v0")
    wins = sum(run_episode(env, RandomPolicy(env, seed=s), seed=s).success for s in range(100))
    assert wins <= 5


def test_questions_vary_with_the_seed_and_repeat_with_it():
    env = SearchQAEnv(hops=2)
    first = [env.reset(seed=s)[0] for s in range(20)]
    assert first == [SearchQAEnv(hops=2).reset(seed=s)[0] for s in range(20)]
    assert len(set(first)) > 15


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"hops": 3}, "hops must be 1 or 2"),
        ({"corpus_size": "huge"}, "corpus_size must be one of"),
        ({"top_k": 0}, "top_k must be >= 1"),
    ],
)
def test_bad_settings_name_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SearchQAEnv(**kwargs)


# nine one-hop templates, but a city's and a company's "In which year was {} founded?" read alike
@pytest.mark.parametrize(("hops", "templates"), [(1, 8), (2, 7)])
def test_every_template_is_drawn(hops, templates):
    world = SearchQAEnv(hops=hops, corpus_size="small").corpus.world
    rng = random.Random(0)
    drawn = set()
    for _ in range(400):
        question = draw_question(rng, world, hops)
        drawn.add(question.text.replace(question.evidence[0], "{}"))
        assert len(question.evidence) == hops
    assert len(drawn) == templates


def test_no_task_ignoring_reply_earns_reward():
    report = rollenv.check_reward(rollenv.make("SearchQAMultiHop-v0"), seeds=range(12))
    assert report.passed and report.oracle.success_rate == 1.0
