"""Shopping instructions (goals) made from products, in WebShop's style.

A goal is drawn from one target product: some of its attributes, one value of each of its
option dimensions and a price ceiling above its price. The instruction reads like WebShop's
("i am looking for a machine washable throw blanket in red color, and price lower than 40.00
dollars"). Any product of the same type that has those attributes and options within the price
scores 1, not only the target.

Example:
    >>> import random
    >>> from environments.webshop.catalog import generate_catalog
    >>> product = generate_catalog(10, seed=0)[0]
    >>> goal = make_goal(product, random.Random(0))
    >>> goal.asin == product.asin and goal.price_upper > product.price
    True
    >>> goal.instruction.endswith("dollars")
    True
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from environments.webshop.catalog import Product
from environments.webshop.vocab import OPTION_PHRASES

#: Price ceilings an instruction may name (WebShop draws from a similar ladder).
PRICE_LADDER = (10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0, 150.0, 200.0, 300.0)
_OPENINGS = (
    "i need {a} {what}",
    "i am looking for {a} {what}",
    "find me {a} {what}",
    "i want to buy {a} {what}",
    "i would like {a} {what}",
)


@dataclass(frozen=True)
class Goal:
    """What the shopper is asked to buy.

    Attributes:
        asin: the product the goal was drawn from.
        instruction: the text the agent reads.
        product_type: the kind of product asked for ("throw blanket").
        category: the category path of the target.
        attributes: attribute phrases asked for.
        options: ``(dimension, value)`` pairs asked for.
        price_upper: the price ceiling in dollars.
    """

    asin: str
    instruction: str
    product_type: str
    category: tuple[str, ...]
    attributes: tuple[str, ...]
    options: tuple[tuple[str, str], ...]
    price_upper: float

    @property
    def option_values(self) -> tuple[str, ...]:
        """The option values asked for."""
        return tuple(value for _, value in self.options)


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def instruction_text(
    product_type: str,
    attributes: tuple[str, ...],
    options: tuple[tuple[str, str], ...],
    price_upper: float,
    opening: int = 0,
) -> str:
    """Writes an instruction in WebShop's style.

    Example:
        >>> instruction_text("mug", ("lead free",), (("color", "red"),), 20.0)
        'i need a lead free mug in red color, and price lower than 20.00 dollars'
    """
    what = " ".join((*attributes[:1], product_type))
    text = _OPENINGS[opening % len(_OPENINGS)].format(a=_article(what), what=what)
    if len(attributes) > 1:
        text += " that is " + " and ".join(attributes[1:])
    phrases = [OPTION_PHRASES.get(dim, dim + " {}").format(value) for dim, value in options]
    if phrases:
        text += " " + ", ".join(phrases)
    return f"{text}, and price lower than {price_upper:.2f} dollars"


#: writes a goal's instruction from (product, attributes, options, price_upper, rng)
InstructionWriter = Callable[
    [Product, tuple[str, ...], tuple[tuple[str, str], ...], float, random.Random], str
]


def draw_goal(
    product: Product, rng: random.Random, write: InstructionWriter, ceilings: int = 3
) -> Goal:
    """Draws a goal whose target is ``product`` and has ``write`` word it.

    The goal asks for 1 to 3 of the product's attributes, one value of each of its option
    dimensions and a price ceiling among the first ``ceilings`` rungs of ``PRICE_LADDER`` above
    its price; ``write`` draws from ``rng`` after those choices.
    """
    count = rng.randint(1, min(3, len(product.attributes)))
    attributes = tuple(rng.sample(product.attributes, count))
    options = tuple((dim, rng.choice(values)) for dim, values in product.options if values)
    rungs = [p for p in PRICE_LADDER if p > product.price][:ceilings] or [
        float(int(product.price * 1.5) + 1)
    ]
    price_upper = rng.choice(rungs)
    return Goal(
        asin=product.asin,
        instruction=write(product, attributes, options, price_upper, rng),
        product_type=product.product_type,
        category=product.category,
        attributes=attributes,
        options=options,
        price_upper=price_upper,
    )


def _write(
    product: Product,
    attributes: tuple[str, ...],
    options: tuple[tuple[str, str], ...],
    price_upper: float,
    rng: random.Random,
) -> str:
    opening = rng.randrange(len(_OPENINGS))
    return instruction_text(product.product_type, attributes, options, price_upper, opening)


def make_goal(product: Product, rng: random.Random) -> Goal:
    """Draws a goal whose target is ``product``; every choice comes from ``rng``.

    Args:
        product: the target product.
        rng: the source of randomness (the env's episode RNG).

    Returns:
        A goal that ``product`` itself satisfies with reward 1.
    """
    return draw_goal(product, rng, _write)
