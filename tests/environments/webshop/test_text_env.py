"""WebShop-v0: the page state machine through the env, isolation of many envs, the oracle."""

from __future__ import annotations

import random
import subprocess
import sys

import rollenv
from environments.webshop.data import shop_data
from environments.webshop.oracle import available_actions
from rollenv.policies import oracle_for, run_episode


def answer(action: str) -> str:
    return f"<answer>{action}</answer>"


def test_search_results_paging_item_options_details_and_buy():
    env = rollenv.make("WebShop-v0")
    obs, info = env.reset(seed=4)
    goal = env.unwrapped.goal
    assert obs.startswith(f"Instruction: {goal.instruction}")
    assert obs.endswith("Available actions: search[<your query>]")

    obs, reward, terminated, _, info = env.step(answer(f"search[{goal.product_type}]"))
    search_bar, labels = available_actions(obs)
    assert not search_bar and labels[:2] == ["Back to Search", "Next >"]
    first_page = labels[2:]
    assert len(first_page) == 10, "10 results a page"
    assert (reward, terminated, info["metrics"]["action_is_effective"]) == (0.0, False, True)

    obs, *_ = env.step(answer("click[next >]"))  # labels match ignoring case
    _, labels = available_actions(obs)
    assert labels[:3] == ["Back to Search", "< Prev", "Next >"]
    assert not set(labels[3:]) & set(first_page)
    obs, *_ = env.step(answer("click[< Prev]"))
    assert available_actions(obs)[1][2:] == first_page

    asin = first_page[0]
    obs, *_ = env.step(answer(f"click[{asin}]"))
    product = env.unwrapped.data.catalog.get(asin)
    assert product.title in obs and f"${product.price:.2f}" in obs
    _, labels = available_actions(obs)
    assert labels == [
        "Back to Search",
        "< Prev",
        *product.option_values,
        "Description",
        "Features",
        "Reviews",
        "Buy Now",
    ]

    obs, *_ = env.step(answer("click[Features]"))
    assert product.bullets[0] in obs and available_actions(obs)[1] == ["Back to Search", "< Prev"]
    env.step(answer("click[< Prev]"))

    value = product.options[0][1][-1]
    obs, _, _, _, info = env.step(answer(f"click[{value}]"))
    assert f"{value} (selected)" in obs and info["metrics"]["action_is_effective"]
    _, _, _, _, info = env.step(answer(f"click[{value}]"))  # already chosen: valid, no change
    assert info["metrics"]["action_is_valid"] and not info["metrics"]["action_is_effective"]

    obs, reward, terminated, truncated, info = env.step(answer("click[Buy Now]"))
    expected = env.unwrapped.shop.outcome.reward
    assert terminated and not truncated and reward == expected
    assert f"Your score (min 0.0, max 1.0): {expected:.4f}" in obs
    assert info["metrics"]["success"] == (expected == 1.0)


def test_unavailable_actions_are_penalised_no_ops():
    env = rollenv.make("WebShop-v0")
    obs, _ = env.reset(seed=0)
    for reply in ("click[Buy Now]", "search[]", "buy[it]", "click[B0NOTHERE0]"):
        after, reward, terminated, _, info = env.step(answer(reply))
        assert after == obs and reward == -0.1 and not terminated
        assert info["metrics"]["action_is_valid"] is False
    env.step(answer("search[mug]"))
    obs2, reward, *_ = env.step(answer("search[blanket]"))  # no search bar on results pages
    assert reward == -0.1 and 'Results for "mug"' in obs2


def test_a_query_with_no_known_word_lists_no_results():
    env = rollenv.make("WebShop-v0")
    env.reset(seed=0)
    obs, *_ = env.step(answer("search[zzzqqq xxyyzz]"))
    assert 'No results for "zzzqqq xxyyzz".' in obs
    assert obs.endswith("Available actions: click[Back to Search]")


def test_64_envs_in_one_process_share_no_mutable_state():
    envs = [rollenv.make("WebShop-v0") for _ in range(64)]
    observations = [env.reset(seed=i)[0] for i, env in enumerate(envs)]
    assert envs[0].unwrapped.data is envs[63].unwrapped.data  # catalog and index: shared
    assert len({id(env.unwrapped.shop) for env in envs}) == 64
    rng = random.Random(0)
    oracles = [oracle_for(env) for env in envs]
    for _ in range(6):
        # step one env at a time; every other env's observation must stay what it was
        for i in rng.sample(range(64), 64):
            obs, *_ = envs[i].step(oracles[i].act(observations[i], {}))
            observations[i] = obs
            for j in rng.sample(range(64), 5):
                assert envs[j].unwrapped._observation() == observations[j]  # re-rendered
    # each env's episode, replayed alone in a fresh env, gives the same final page
    for i in (0, 17, 63):
        alone = rollenv.make("WebShop-v0")
        result_obs, _ = alone.reset(seed=i)
        oracle = oracle_for(alone)
        for _ in range(6):
            result_obs, *_ = alone.step(oracle.act(result_obs, {}))
        assert result_obs == observations[i]


def test_oracle_reaches_reward_one_on_at_least_99_percent_of_500_easy_instructions():
    # the paper difficulty (the default) has its own such test in test_paper_difficulty.py
    env = rollenv.make("WebShop-v0", difficulty="easy")
    oracle = oracle_for(env)
    results = [run_episode(env, oracle, seed=seed) for seed in range(1000, 1500)]
    rate = sum(r.success for r in results) / len(results)
    assert rate >= 0.99
    assert all(r.total_reward == 1.0 for r in results if r.success)


def test_goal_numbers_pick_goals():
    env = rollenv.make("WebShop-v0")
    first, _ = env.reset(options={"goal": 123})
    again, _ = env.reset(options={"goal": 123})
    assert first == again and env.unwrapped.goal == shop_data().goal(123)


def test_importing_rollenv_and_environments_loads_no_heavy_dependency():
    code = (
        "import sys, rollenv, environments; rollenv.registry['WebShop-v0']; "
        "import environments.webshop; "
        "print(sorted(m for m in ('bm25s', 'playwright', 'fastapi', 'uvicorn', 'torch', 'ray', "
        "'rapidfuzz') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
