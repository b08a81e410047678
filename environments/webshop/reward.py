"""WebShop's reward: how well a bought product (with the options chosen) fits the goal.

    reward = type_match * (attribute matches + option matches + price ok)
                        / (attributes asked + options asked + 1)

* ``type_match`` is 1.0 when the product is the kind asked for (its product type matches the
  goal's, fuzzily), 0.5 when it is another kind in the same category path, 0.1 when only the top
  level category is shared, 0.0 otherwise.
* An attribute asked for matches when one of the product's attributes matches it fuzzily
  (``token_sort_ratio >= 85`` after lower-casing and dropping punctuation) or the phrase occurs
  in its title, bullet points or description.
* A chosen option value counts when it is one of the values asked for: exactly (ignoring case
  and punctuation) for a ``size``, as WebShop matches sizes, so "x-large" is not "xx-large";
  fuzzily for any other dimension. At most one count per value asked for.
* ``price ok`` is 1 when the price is at most the goal's ceiling.

Next to WebShop's own code (``web_agent_site/engine/goal.py``) the formula is the same and three
rules are stricter: phrases are compared with ``token_sort_ratio`` rather than
``token_set_ratio`` (which scores "blue" against "navy blue" 100, as one's words are a subset of
the other's); a chosen option whose value merely appears in the product's title or text does not
count (WebShop counts it even when it is not the option asked for); and the type reward is
computed from the product types and category paths above, not from spaCy noun overlap of the
titles (where WebShop gives another kind of the same department the full 1.0 when the names
share a noun).

Example:
    >>> from environments.webshop.catalog import generate_catalog
    >>> from environments.webshop.instructions import make_goal
    >>> import random
    >>> product = generate_catalog(5, seed=0)[1]
    >>> goal = make_goal(product, random.Random(1))
    >>> score(goal, product, dict(goal.options)).reward
    1.0
    >>> score(goal, product, {}).reward < 1.0
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from environments.webshop.catalog import Product
from environments.webshop.deps import require
from environments.webshop.instructions import Goal

#: Fuzzy scores (0-100) at or above which two phrases count as the same.
MATCH_THRESHOLD = 85.0
#: Option dimensions whose values must match exactly (WebShop's ``EXACT_MATCH_OPTS``).
EXACT_MATCH_DIMENSIONS = frozenset({"size"})


@dataclass(frozen=True)
class Score:
    """The parts of one reward, for logs and tests."""

    type_match: float
    attribute_matches: int
    attributes: int
    option_matches: int
    options: int
    price_ok: bool
    reward: float


def _similar(a: str, b: str) -> bool:
    rapidfuzz = require("rapidfuzz")
    ratio = rapidfuzz.fuzz.token_sort_ratio(a, b, processor=rapidfuzz.utils.default_process)
    return ratio >= MATCH_THRESHOLD


def _same(a: str, b: str) -> bool:
    process = require("rapidfuzz").utils.default_process
    return process(a) == process(b)


def option_matches(goal: Goal, chosen: Mapping[str, str]) -> int:
    """How many of the goal's options the chosen values meet (sizes exactly, others fuzzily).

    Example:
        >>> from environments.webshop.instructions import Goal
        >>> goal = Goal("B0", "", "t-shirt", (), (), (("size", "xx-large"), ("color", "Red")), 9.0)
        >>> option_matches(goal, {"size": "x-large", "color": "red"})
        1
    """
    wanted = goal.option_values
    hits = 0
    for dimension, value in chosen.items():
        match = _same if dimension.lower() in EXACT_MATCH_DIMENSIONS else _similar
        hits += any(match(value, w) for w in wanted)
    return min(hits, len(wanted))


def type_match(goal: Goal, product: Product) -> float:
    """1.0 same kind, 0.5 same category path, 0.1 same top-level category, else 0.0."""
    if _similar(goal.product_type, product.product_type):
        return 1.0
    if goal.category and tuple(goal.category) == tuple(product.category):
        return 0.5
    if goal.category and product.category and goal.category[0] == product.category[0]:
        return 0.1
    return 0.0


def attribute_matched(attribute: str, product: Product) -> bool:
    """Whether the product has the attribute (fuzzily in its list, or verbatim in its text)."""
    if any(_similar(attribute, own) for own in product.attributes):
        return True
    needle = attribute.lower()
    texts = (product.title, product.description, *product.bullets)
    return any(needle in text.lower() for text in texts)


def score(goal: Goal, product: Product, chosen: Mapping[str, str]) -> Score:
    """Scores buying ``product`` with the option values ``chosen`` (dimension -> value).

    Args:
        goal: what was asked for.
        product: what was bought.
        chosen: the option value picked in each dimension (dimensions not picked are absent).

    Returns:
        The reward and its parts.
    """
    kind = type_match(goal, product)
    attribute_hits = sum(attribute_matched(a, product) for a in goal.attributes)
    option_hits = option_matches(goal, chosen)
    price_ok = product.price <= goal.price_upper
    total = len(goal.attributes) + len(goal.options) + 1
    reward = kind * (attribute_hits + option_hits + int(price_ok)) / total
    return Score(
        type_match=kind,
        attribute_matches=attribute_hits,
        attributes=len(goal.attributes),
        option_matches=option_hits,
        options=len(goal.options),
        price_ok=price_ok,
        reward=reward,
    )
