"""``NaiveShopper``: the rule baseline of WebShop, as a user would script it from the pages alone.

It reads nothing but the observation (the instruction line and the ``Available actions:``
line), so it plays the text env and the browser env alike, and knows nothing of the goal:

1. on the search page, search the instruction text itself;
2. on a results page, open the first result;
3. on the item page, click, in page order, each option value whose name occurs in the
   instruction (ignoring case), once each; then ``Buy Now``.

WebShop's paper (Yao et al., 2022) reports 45.6 (mean reward x 100) for its rule baseline
(search the instruction, buy the first hit). ``benchmarks/webshop_naive_shopper.py`` measures
this shopper on both difficulties.

Example:
    >>> import rollenv
    >>> from rollenv.policies import run_episode
    >>> env = rollenv.make("WebShop-v0", difficulty="easy")
    >>> result = run_episode(env, NaiveShopper(env), seed=0)
    >>> result.terminated, 0.0 <= result.total_reward <= 1.0
    (True, True)
"""

from __future__ import annotations

import re
from typing import Any

import gymnasium as gym

_ACTIONS_PREFIX = "Available actions:"
_INSTRUCTION_PREFIX = "Instruction:"
_LABEL = re.compile(r"click\[(.*?)\](?=, click\[|\s*$)")
_NAVIGATION = ("Back to Search", "Next >", "< Prev")


def read_page(observation: str) -> tuple[str, bool, list[str]]:
    """The instruction, whether the search bar is shown, and the clickable labels.

    Example:
        >>> page = "Instruction: find a Mug\\n\\nAvailable actions: click[< Prev], click[B01]"
        >>> read_page(page)
        ('find a mug', False, ['< Prev', 'B01'])
    """
    lines = observation.splitlines()
    instruction = next(
        (
            line[len(_INSTRUCTION_PREFIX) :].strip()
            for line in lines
            if line.startswith(_INSTRUCTION_PREFIX)
        ),
        "",
    )
    actions = [line for line in lines if line.startswith(_ACTIONS_PREFIX)]
    line = actions[-1][len(_ACTIONS_PREFIX) :].strip() if actions else ""
    return instruction.lower(), "search[" in line, _LABEL.findall(line)


class NaiveShopper:
    """The rule baseline (see the module docstring).

    Args:
        env: a WebShop env (possibly wrapped); only its answer format is used.
    """

    def __init__(self, env: gym.Env) -> None:
        self._answer_format = env.unwrapped.answer_format
        self._clicked: set[str] = set()

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return self._answer_format.wrap(self.next_action(observation))

    def next_action(self, observation: str) -> str:
        """The bare action (``search[...]`` or ``click[...]``) for this page."""
        instruction, search_bar, labels = read_page(observation)
        if search_bar:
            self._clicked = set()
            return f"search[{instruction}]"
        if "Buy Now" in labels:  # an item page: options lie between "< Prev" and "Description"
            start = labels.index("< Prev") + 1 if "< Prev" in labels else 0
            end = labels.index("Description") if "Description" in labels else len(labels)
            for label in labels[start:end]:
                if label.lower() in instruction and label not in self._clicked:
                    self._clicked.add(label)
                    return f"click[{label}]"
            return "click[Buy Now]"
        results = [label for label in labels if label not in _NAVIGATION]
        if results:
            return f"click[{results[0]}]"
        return "click[Back to Search]"
