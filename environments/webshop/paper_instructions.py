"""The paper difficulty's instructions: paraphrased, in a shopper's words, with distractors.

The goal is drawn as in the easy difficulty (some of the target's attributes, one value of each
of its option dimensions, a price ceiling above its price), but the text asks for most
attributes and options in other words (see ``environments.webshop.paraphrases``), and some
instructions also name an option value the shopper does *not* want ("not navy blue"), as
people do. The goal's attributes and options stay the catalog's own phrases: the reward
compares those with what was bought, so a shopper has to understand the instruction, not
copy its words.

Example:
    >>> import random
    >>> from environments.webshop.paper_catalog import generate_paper_catalog
    >>> product = generate_paper_catalog(10, seed=0)[0]
    >>> goal = make_paper_goal(product, random.Random(0))
    >>> goal.asin == product.asin and goal.price_upper > product.price
    True
    >>> set(goal.attributes) <= set(product.attributes)
    True
"""

from __future__ import annotations

import random

from environments.webshop.catalog import Product
from environments.webshop.instructions import Goal, draw_goal
from environments.webshop.paraphrases import (
    ATTRIBUTE_PHRASINGS,
    OPTION_PHRASINGS,
    TYPE_PHRASINGS,
)
from environments.webshop.vocab import OPTION_PHRASES

#: how often the kind, an attribute, an option is asked for in other words; how often an
#: unwanted value of one option is named too
PARAPHRASE_TYPE = 0.5
PARAPHRASE_ATTRIBUTE = 0.9
PARAPHRASE_OPTION = 0.8
UNWANTED_OPTION = 0.5

_OPENINGS = (
    "i'm looking for {}",
    "i need {}",
    "can you find me {}",
    "i want to get {}",
    "please help me find {}",
    "shopping for {}",
)
_UNWANTED = ("not {}", "anything but {}", "i don't want {}", "no {} please")
_PRICES = (
    "and price lower than {:.2f} dollars",
    "for less than {:.2f} dollars",
    "and it has to cost under {:.2f} dollars",
    "my budget is {:.2f} dollars",
)


#: kinds a shopper asks for as "a pair of ..."
_PAIRS = frozenset(
    {"running shoes", "walking shoes", "hiking boots", "wireless earbuds", "over ear headphones"}
)


def _with_article(what: str, kind: str) -> str:
    if kind in _PAIRS and not what.startswith("pair of"):
        return f"a pair of {what}"
    return f"{'an' if what[:1] in 'aeiou' else 'a'} {what}"


def _attribute_clause(attribute: str, rng: random.Random) -> str:
    phrasings = ATTRIBUTE_PHRASINGS.get(attribute)
    if phrasings and rng.random() < PARAPHRASE_ATTRIBUTE:
        return rng.choice(phrasings)
    return f"that is {attribute}"


def _option_clause(dimension: str, value: str, rng: random.Random) -> str:
    phrasings = OPTION_PHRASINGS.get(value)
    if phrasings and rng.random() < PARAPHRASE_OPTION:
        return rng.choice(phrasings)
    return OPTION_PHRASES.get(dimension, dimension + " {}").format(value)


def _unwanted_clause(
    product: Product, options: tuple[tuple[str, str], ...], rng: random.Random
) -> str | None:
    """Names a value of one asked-for dimension that is not the one asked for, or ``None``."""
    if rng.random() >= UNWANTED_OPTION:
        return None
    choices = [
        (dimension, value)
        for dimension, values in product.options
        for value in values
        if (dimension, value) not in options
    ]
    if not choices:
        return None
    _, value = rng.choice(choices)
    return rng.choice(_UNWANTED).format(value)


def paper_instruction_text(
    product: Product,
    attributes: tuple[str, ...],
    options: tuple[tuple[str, str], ...],
    price_upper: float,
    rng: random.Random,
) -> str:
    """Writes a paraphrased instruction for a goal drawn from ``product``.

    Example:
        >>> from environments.webshop.paper_catalog import generate_paper_catalog
        >>> product = generate_paper_catalog(5, seed=0)[2]
        >>> text = paper_instruction_text(product, (), (), 40.0, random.Random(1))
        >>> text.endswith("40.00 dollars")
        True
    """
    kind = what = product.product_type
    if kind in TYPE_PHRASINGS and rng.random() < PARAPHRASE_TYPE:
        what = rng.choice(TYPE_PHRASINGS[kind])
    text = rng.choice(_OPENINGS).format(_with_article(what, kind))
    clauses = [_attribute_clause(a, rng) for a in attributes]
    clauses += [_option_clause(dimension, value, rng) for dimension, value in options]
    rng.shuffle(clauses)
    if clauses:
        text += " " + ", ".join(clauses)
    unwanted = _unwanted_clause(product, options, rng)
    if unwanted is not None:
        text += f" ({unwanted})"
    return f"{text}, {rng.choice(_PRICES).format(price_upper)}"


def make_paper_goal(product: Product, rng: random.Random) -> Goal:
    """Draws a paper-difficulty goal whose target is ``product``; every choice comes from ``rng``.

    Args:
        product: the target product.
        rng: the source of randomness.

    Returns:
        A goal that ``product`` itself satisfies with reward 1.
    """
    return draw_goal(product, rng, paper_instruction_text, ceilings=1)
