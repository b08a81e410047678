"""The paper difficulty's catalog: many look-alike products under noisy, keyword-stuffed titles.

Products are drawn from ``PAPER_TYPES`` (each easy type and two siblings in its category path),
so a kind has dozens of products that differ only in attributes, options and price. A title
reads like a marketplace listing: brand and model number, the kind (often beside a sibling's
name, as sellers stuff keywords), material, marketing words, maybe one attribute and the
default variant ("Northwind N-48213 Throw Blanket Weighted Blanket Fleece Upgraded, Super Soft
- Wine Red"). The model number makes every title unique. Option values are listed in an
arbitrary order, as on a real product page, and colours include near neighbours ("blue",
"light blue", "navy blue").

Example:
    >>> catalog = generate_paper_catalog(200, seed=1)
    >>> len(catalog), catalog.key
    (200, 'paper-200-1')
    >>> len({p.title for p in catalog})
    200
    >>> [p.asin for p in catalog] == [p.asin for p in generate_paper_catalog(200, seed=1)]
    True
"""

from __future__ import annotations

import random

from environments.webshop.catalog import Catalog, Product, finish_product
from environments.webshop.paper_vocab import PAPER_TYPES, TITLE_FLUFF
from environments.webshop.vocab import BRANDS, QUALITY_WORDS, ProductType

#: how often a title also names a sibling kind, an attribute, the default variant
_SIBLING_IN_TITLE = 0.7
_ATTRIBUTE_IN_TITLE = 0.5
_VARIANT_IN_TITLE = 0.6

_SAME_PATH: dict[tuple[str, ...], tuple[str, ...]] = {}
for _kind in PAPER_TYPES:
    _SAME_PATH[_kind.category] = (*_SAME_PATH.get(_kind.category, ()), _kind.name)


def _model(rng: random.Random, brand: str, taken: set[str]) -> str:
    initials = "".join(word[0] for word in brand.replace("&", "").split())[:2].upper()
    while True:
        model = f"{initials}-{rng.randint(10000, 99999)}"
        if model not in taken:
            taken.add(model)
            return model


def _title(
    rng: random.Random,
    kind: ProductType,
    brand: str,
    model: str,
    material: str,
    attributes: tuple[str, ...],
    options: tuple[tuple[str, tuple[str, ...]], ...],
) -> str:
    words = [brand, model, kind.name.title()]
    siblings = [name for name in _SAME_PATH[kind.category] if name != kind.name]
    if rng.random() < _SIBLING_IN_TITLE:
        words.append(rng.choice(siblings).title())
    words.append(material.title())
    words.extend(rng.sample(TITLE_FLUFF, rng.randint(1, 2)))
    title = " ".join(words)
    if rng.random() < _ATTRIBUTE_IN_TITLE:
        title += ", " + rng.choice(attributes).title()
    if rng.random() < _VARIANT_IN_TITLE:
        title += " - " + ", ".join(values[0].title() for _, values in options)
    return title


def _paper_product(rng: random.Random, taken: set[str], models: set[str]) -> Product:
    kind = rng.choice(PAPER_TYPES)
    brand = rng.choice(BRANDS)
    material = rng.choice(kind.materials)
    attributes = tuple(rng.sample(kind.attributes, rng.randint(2, 3)))
    options = []
    for dimension, pool in kind.options.items():
        values = rng.sample(pool, rng.randint(min(2, len(pool)), min(6, len(pool))))
        options.append((dimension, tuple(values)))  # drawn order: pages list them shuffled
    quality = rng.choice(QUALITY_WORDS)
    title = _title(rng, kind, brand, _model(rng, brand, models), material, attributes, options)
    description = (
        f"The {brand} {kind.name} is made of {material}. It is "
        + ", ".join(attributes[:-1])
        + f" and {attributes[-1]}"
        + f". A {quality} pick in {kind.category[-1].lower()}."
    )
    bullets = tuple(
        [f"{a.upper()}: {rng.choice(('designed to be', 'made to be'))} {a}." for a in attributes]
        + [f"MATERIAL: {material}.", f"WHAT YOU GET: one {kind.name} from {brand}."]
    )
    return finish_product(
        rng, taken, kind, material, title, attributes, options, description, bullets
    )


def generate_paper_catalog(num_products: int, seed: int = 0) -> Catalog:
    """Generates the paper difficulty's catalog; the same seed gives the same catalog.

    Args:
        num_products: how many products.
        seed: seeds every choice.

    Returns:
        The catalog, keyed ``"paper-<num_products>-<seed>"``.
    """
    if num_products < 1:
        raise ValueError(f"num_products must be >= 1, got {num_products}")
    rng = random.Random(seed)
    taken: set[str] = set()
    models: set[str] = set()
    products = [_paper_product(rng, taken, models) for _ in range(num_products)]
    return Catalog(products, key=f"paper-{num_products}-{seed}")
