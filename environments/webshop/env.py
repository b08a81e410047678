"""``WebShopEnv``: shop for what an instruction asks, on a text website, in process.

Each episode draws a goal (an instruction written from a target product). The agent searches,
opens products, picks options and buys; buying ends the episode with WebShop's reward (see
``environments.webshop.reward``), and ``info["metrics"]["success"]`` is true when it is 1.
Every other valid action gives 0; a reply with no available action is a no-op that costs the
format penalty. Every observation ends with the list of available actions.

Many envs live in one process: they share the catalog and its BM25 index read-only, and each
keeps its own ``Shop`` (page state).

Example:
    >>> import rollenv
    >>> env = rollenv.make("WebShop-v0")
    >>> obs, info = env.reset(seed=0)
    >>> obs.splitlines()[-1]
    'Available actions: search[<your query>]'
    >>> obs, reward, terminated, truncated, info = env.step("<answer>search[blanket]</answer>")
    >>> info["metrics"]["action_is_valid"], obs.splitlines()[-1].startswith("Available actions")
    (True, True)
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from environments.webshop.data import ShopData, shop_data
from environments.webshop.difficulty import DEFAULT_DIFFICULTY
from environments.webshop.instructions import Goal
from environments.webshop.pages import DONE, Shop
from rollenv.action_tools import ActionTool, templated_tool
from rollenv.actions import AnswerFormat
from rollenv.text_env import TextEnv

ACTION_PATTERN = re.compile(r"(search|click)\s*\[(.*)\]", re.IGNORECASE | re.DOTALL)
SUCCESS_REWARD = 1.0 - 1e-9


def parse_action(text: str) -> tuple[str, str] | None:
    """Splits ``search[query]`` or ``click[label]`` into ``(kind, argument)``, else ``None``.

    Example:
        >>> parse_action("click[Buy Now]"), parse_action("buy it")
        (('click', 'Buy Now'), None)
    """
    match = ACTION_PATTERN.fullmatch(text.strip())
    if match is None:
        return None
    return match.group(1).lower(), match.group(2)


def shop_tools(search_bar: bool, labels: Sequence[str]) -> tuple[ActionTool, ...]:
    """WebShop's actions as tools: ``click(target)`` among the page's buttons and products, and
    ``search(query)`` where the page has a search bar.

    Example:
        >>> [tool.name for tool in shop_tools(True, ["Next >", "B0123"])]
        ['search', 'click']
    """
    tools = []
    if search_bar:
        query = {"query": {"type": "string", "minLength": 1}}
        tools.append(templated_tool("search", "Searches the shop.", "search[{query}]", query))
    if labels:
        target = {"target": {"type": "string", "enum": list(dict.fromkeys(labels))}}
        tools.append(
            templated_tool(
                "click", "Clicks a button, a product or an option.", "click[{target}]", target
            )
        )
    return tuple(tools)


def describe_rules(answer_format: AnswerFormat) -> str:
    """The instruction (system prompt) of both WebShop envs."""
    return (
        "You are shopping on WebShop, a shopping website. Each page starts with your instruction "
        "and ends with the actions available on it. Find a product that matches the instruction "
        "(its kind, attributes, options such as colour and size, and the price ceiling), choose "
        "its options and buy it. Actions: search[your query] on the search page; click[label] "
        "for a label the page lists (a result's id, an option value, Description, Features, "
        "Reviews, Buy Now, Next >, < Prev, Back to Search). Buying ends the episode; the reward "
        "is how well the product fits the instruction, from 0 to 1. "
        f"{answer_format.describe()} Example: {answer_format.wrap('search[red throw blanket]')}"
    )


class WebShopEnv(TextEnv):
    """WebShop in text, with no server.

    Args:
        num_products: size of the generated catalog (by default 5,000 at the paper difficulty,
            1,000 at the easy one; 100,000 works).
        catalog_seed: seed of the generated catalog (the same for every episode).
        data_path: a folder with WebShop's own files (``items_shuffle*.json``, ...) to use
            instead of a generated catalog.
        goal_source: ``"human"`` or ``"synthetic"`` instructions when reading WebShop's files.
        difficulty: ``"paper"`` (look-alike products, noisy titles, paraphrased instructions:
            as hard as WebShop) or ``"easy"`` (clean titles, instructions in the catalog's own
            words); see ``environments.webshop.difficulty``. With ``data_path`` WebShop's
            own files are played as they are.
        results_per_page: results on one page.
        max_actions: actions per episode before truncation (WebShop uses 15).
        format_penalty: reward of a reply with no available action.
        answer_format: how actions are read from a reply.
        render_mode: ``"ansi"`` or ``None``.

    ``reset(options={"goal": n})`` plays goal number ``n`` (see ``environments.webshop.data``).
    The current goal is ``env.goal``; the last purchase's score parts are ``env.shop.outcome``.
    """

    oracle = "environments.webshop.oracle:WebShopOracle"

    def __init__(
        self,
        num_products: int | None = None,
        catalog_seed: int = 0,
        data_path: str | Path | None = None,
        goal_source: str = "human",
        *,
        difficulty: str = DEFAULT_DIFFICULTY,
        results_per_page: int = 10,
        max_actions: int = 15,
        format_penalty: float = -0.1,
        answer_format: AnswerFormat | dict[str, Any] | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            answer_format=answer_format,
            format_penalty=format_penalty,
            max_actions=max_actions,
            render_mode=render_mode,
        )
        if results_per_page < 1:
            raise ValueError(f"results_per_page must be >= 1, got {results_per_page}")
        self.data: ShopData = shop_data(
            num_products, catalog_seed, data_path, goal_source, difficulty
        )
        self.results_per_page = results_per_page
        self.goal_number = 0
        self.shop: Shop | None = None
        self._instruction = describe_rules(self.answer_format)

    # ------------------------------------------------------------------ TextEnv
    @property
    def instruction(self) -> str:
        return self._instruction

    @property
    def goal(self) -> Goal:
        """What the current episode asks to buy."""
        return self._current().goal

    @property
    def action_words(self) -> tuple[str, ...]:
        if self.shop is None:  # before the first reset: the search page's actions
            return ("search[throw blanket]", "search[coffee mug]")
        shop = self.shop
        words = [f"click[{label}]" for label in shop.available()]
        if shop.has_search_bar:
            words = [
                f"search[{shop.goal.product_type}]",
                f"search[{' '.join((*shop.goal.attributes[:1], shop.goal.product_type))}]",
                *words,
            ]
        return tuple(words)

    def action_tools(self) -> tuple[ActionTool, ...]:
        if self.shop is None:
            return shop_tools(True, [])
        return shop_tools(self.shop.has_search_bar, self.shop.available())

    def _current(self) -> Shop:
        if self.shop is None:
            raise RuntimeError("call reset() first")
        return self.shop

    def _new_episode(self, rng: random.Random, options: dict[str, Any] | None) -> None:
        number = rng.getrandbits(62)
        if options and "goal" in options:
            number = int(options["goal"])
        self.goal_number = number
        self.shop = Shop(
            self.data.catalog,
            self.data.index,
            self.data.goal(number),
            results_per_page=self.results_per_page,
        )

    def _observation(self) -> str:
        return self._current().render_text()

    def _parse_action(self, text: str) -> tuple[str, str] | None:
        parsed = parse_action(text)
        if parsed is None:
            return None
        return self._current().resolve(*parsed)

    def _apply(self, action: tuple[str, str]) -> tuple[float, bool]:
        shop = self._current()
        if shop.page == DONE:
            return 0.0, False
        changed = shop.apply(action)
        if shop.page == DONE and shop.outcome is not None:
            return float(shop.outcome.reward), changed
        return 0.0, changed

    def _solved(self) -> bool:
        outcome = self.shop.outcome if self.shop else None
        return outcome is not None and outcome.reward >= SUCCESS_REWARD

    def _failed(self) -> bool:
        return self.shop is not None and self.shop.page == DONE and not self._solved()
