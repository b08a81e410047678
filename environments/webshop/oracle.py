"""``WebShopOracle``: a scripted shopper that buys the goal's target with the goal's options.

It is privileged the way every rollenv oracle is: it knows the goal (its target product, the
attributes, options and price ceiling), not just the instruction text. Everything else it reads
from the observation, so it plays the text env and the browser env alike:

1. on the search page, search the instruction text itself;
2. on a results page, open the target if it is listed, else go to the next page (at most
   ``max_pages`` pages); when the results run out, go back and search the target's exact title;
3. on the item page, click each option value the goal asks for, then ``Buy Now``;
4. on a detail page, go back to the item.

Example:
    >>> import rollenv
    >>> from rollenv.policies import run_episode
    >>> env = rollenv.make("WebShop-v0")
    >>> run_episode(env, WebShopOracle(env), seed=3).success
    True
"""

from __future__ import annotations

import re
from typing import Any

import gymnasium as gym

from environments.webshop.pages import BACK_TO_SEARCH, BUY_NOW, NEXT, PREV, normalize_label

_CLICK = re.compile(r"click\[(.*?)\](?=, click\[|\s*$)")


def available_actions(observation: str) -> tuple[bool, list[str]]:
    """Reads the last ``Available actions:`` line: (search bar shown, clickable labels).

    Example:
        >>> available_actions("...\\nAvailable actions: click[Back to Search], click[Next >]")
        (False, ['Back to Search', 'Next >'])
    """
    lines = [line for line in observation.splitlines() if line.startswith("Available actions:")]
    if not lines:
        return False, []
    line = lines[-1].removeprefix("Available actions:").strip()
    return "search[" in line, _CLICK.findall(line)


class WebShopOracle:
    """The scripted shopper (see the module docstring).

    Args:
        env: a ``WebShopEnv`` or ``WebShopHTMLEnv``, possibly wrapped.
        max_pages: result pages it looks through before searching the exact title.
    """

    def __init__(self, env: gym.Env, max_pages: int = 3) -> None:
        inner = env.unwrapped
        if not hasattr(type(inner), "goal") or not hasattr(inner, "data"):
            raise TypeError(f"WebShopOracle needs a WebShop env, got {type(inner).__name__}")
        self._env = inner
        self.max_pages = max_pages
        self._goal_asin: str | None = None
        self._searched_instruction = False
        self._searched_title = False
        self._pages_seen = 0
        self._clicked: set[str] = set()

    def _start_if_new_episode(self) -> None:
        goal = self._env.goal
        if goal.asin != self._goal_asin or self._env.actions_taken == 0:
            self._goal_asin = goal.asin
            self._searched_instruction = False
            self._searched_title = False
            self._pages_seen = 0
            self._clicked = set()

    def act(self, observation: str, info: dict[str, Any]) -> str:
        self._start_if_new_episode()
        return self._env.answer_format.wrap(self._next_action(observation))

    def _next_action(self, observation: str) -> str:
        goal = self._env.goal
        search_bar, labels = available_actions(observation)
        by_norm = {normalize_label(label): label for label in labels}
        if search_bar:
            self._pages_seen = 0
            if not self._searched_instruction:
                self._searched_instruction = True
                return f"search[{goal.instruction}]"
            self._searched_title = True
            product = self._env.data.catalog.get(goal.asin)
            return f"search[{product.title if product else goal.product_type}]"
        if BUY_NOW in labels:  # item page
            for _, value in goal.options:
                label = by_norm.get(normalize_label(value))
                if label is not None and label not in self._clicked:
                    self._clicked.add(label)
                    return f"click[{label}]"
            return f"click[{BUY_NOW}]"
        if labels == [BACK_TO_SEARCH, PREV]:  # a detail page
            return f"click[{PREV}]"
        if BACK_TO_SEARCH in labels:  # a results page
            target = by_norm.get(normalize_label(goal.asin))
            if target is not None:
                return f"click[{target}]"
            self._pages_seen += 1
            if NEXT in labels and self._pages_seen < self.max_pages:
                return f"click[{NEXT}]"
            if self._searched_title:  # the title search did not list it either: take the top
                results = [label for label in labels if label not in (BACK_TO_SEARCH, PREV, NEXT)]
                if results:
                    return f"click[{results[0]}]"
            return f"click[{BACK_TO_SEARCH}]"
        return f"click[{BUY_NOW}]"  # the episode is over; any reply will do
