"""WebShopHTML-v0 in a real headless Chromium against a real uvicorn server on 127.0.0.1."""

from __future__ import annotations

import pytest

import rollenv
from environments.webshop.naive_shopper import NaiveShopper
from environments.webshop.oracle import available_actions
from rollenv.policies import oracle_for, run_episode
from tests.environments.webshop.conftest import needs_browser

pytestmark = needs_browser


@pytest.fixture(scope="module")
def html_env():
    env = rollenv.make("WebShopHTML-v0")
    yield env
    env.close()


def answer(action: str) -> str:
    return f"<answer>{action}</answer>"


def test_search_open_choose_options_buy_and_see_the_reward(html_env):
    text_env = rollenv.make("WebShop-v0")
    obs, info = html_env.reset(seed=4)
    text_obs, _ = text_env.reset(seed=4)
    goal = html_env.unwrapped.goal
    assert goal == text_env.unwrapped.goal, "the same seed draws the same goal in both modes"
    assert obs.startswith(f"Instruction: {goal.instruction}")
    assert obs.splitlines()[-1] == "Available actions: search[<your query>]"
    assert info["anchor"] == obs

    title = html_env.unwrapped.data.catalog.get(goal.asin).title
    plan = [f"search[{title}]", f"click[{goal.asin}]"]
    plan += [f"click[{value}]" for _, value in goal.options] + ["click[Buy Now]"]
    for action in plan:
        obs, reward, terminated, truncated, info = html_env.step(answer(action))
        text_obs, text_reward, *_ = text_env.step(answer(action))
        assert info["metrics"]["action_is_valid"] and info["metrics"]["action_is_effective"]
        # the browser shows the same actions as the text page, and the same reward
        assert available_actions(obs) == available_actions(text_obs)
        assert reward == text_reward
    assert terminated and not truncated
    assert reward == 1.0 and info["metrics"]["success"]
    assert "Your score (min 0.0, max 1.0): 1.0000" in obs
    assert obs.splitlines()[-1] == "Available actions: none (the episode is over)"


def test_wrong_options_give_the_partial_reward_the_page_shows(html_env):
    html_env.reset(seed=4)
    goal = html_env.unwrapped.goal
    title = html_env.unwrapped.data.catalog.get(goal.asin).title
    html_env.step(answer(f"search[{title}]"))
    html_env.step(answer(f"click[{goal.asin}]"))
    obs, reward, terminated, _, info = html_env.step(answer("click[Buy Now]"))
    # no option chosen: (attributes + 0 + price) / (attributes + options + 1)
    n_attr, n_opt = len(goal.attributes), len(goal.options)
    assert reward == pytest.approx((n_attr + 1) / (n_attr + n_opt + 1))
    assert terminated and not info["metrics"]["success"]
    assert f"Your score (min 0.0, max 1.0): {reward:.4f}" in obs


def test_an_unavailable_action_never_reaches_the_browser(html_env):
    obs, _ = html_env.reset(seed=2)
    for reply in ("click[Buy Now]", "search[]", "hello", answer("click[Next >]")):
        after, reward, terminated, _, info = html_env.step(reply)
        assert after == obs and reward == -0.1 and not terminated
        assert info["metrics"]["action_is_valid"] is False


def test_oracle_buys_the_goal_in_the_browser(html_env):
    results = [run_episode(html_env, oracle_for(html_env), seed=s) for s in range(3)]
    assert [r.success for r in results] == [True, True, True]


def test_the_naive_shopper_gets_the_same_reward_in_the_browser_as_in_text(html_env):
    text_env = rollenv.make("WebShop-v0")
    for seed in (0, 1):
        in_browser = run_episode(html_env, NaiveShopper(html_env), seed=seed)
        in_text = run_episode(text_env, NaiveShopper(text_env), seed=seed)
        assert in_browser.terminated and in_browser.turns == in_text.turns
        assert in_browser.total_reward == pytest.approx(in_text.total_reward)


def test_a_person_can_shop_on_the_same_site(html_env):
    """Opens / in a fresh browser context, as a visitor would, and searches by typing."""
    inner = html_env.unwrapped
    inner.reset(seed=0)
    host, url = inner._host, inner.server_url

    def visit() -> tuple[str, int]:
        context = host.browser.new_context()
        try:
            page = context.new_page()
            page.goto(url + "/")
            page.fill("#search-input", "coffee mug")
            with page.expect_navigation():
                page.press("#search-input", "Enter")
            return page.inner_text("body"), page.locator("ul.results li").count()
        finally:
            context.close()

    text, listed = host.call(visit)
    assert 'Results for "coffee mug"' in text and listed == 10
