"""The product catalog: ``Product``, ``Catalog`` and a seeded generator of catalogs.

A generated product has a title, a category path, a price, attributes (phrases such as
"machine washable" that an instruction may ask for), options (colour, size, ...), a description,
bullet points and reviews, like a product of WebShop's scraped catalog. Everything is frozen, so
one catalog is shared read-only by every env of a process.

Example:
    >>> catalog = generate_catalog(50, seed=1)
    >>> len(catalog), catalog[0].asin == generate_catalog(50, seed=1)[0].asin
    (50, True)
    >>> catalog.get(catalog[3].asin) is catalog[3]
    True
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from environments.webshop.vocab import (
    BRANDS,
    PRODUCT_TYPES,
    QUALITY_WORDS,
    REVIEW_TEMPLATES,
    ProductType,
)

DEFAULT_NUM_PRODUCTS = 1000
_ASIN_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class Product:
    """One product of the catalog (immutable).

    Attributes:
        asin: the product's id, shown as its link on result pages ("B0...").
        title: the product name.
        product_type: what a shopper calls it ("throw blanket"), WebShop's ``query``.
        category: the category path, top level first.
        price: price in dollars.
        attributes: phrases the product has ("machine washable").
        options: ``(dimension, values)`` pairs in page order, e.g. ``(("color", ("red",)),)``.
        description: a paragraph.
        bullets: feature bullet points.
        rating: average stars, 1 to 5.
        reviews: review texts.
    """

    asin: str
    title: str
    product_type: str
    category: tuple[str, ...]
    price: float
    attributes: tuple[str, ...]
    options: tuple[tuple[str, tuple[str, ...]], ...]
    description: str
    bullets: tuple[str, ...]
    rating: float
    reviews: tuple[str, ...]

    @property
    def option_values(self) -> tuple[str, ...]:
        """Every option value of every dimension, in page order."""
        return tuple(value for _, values in self.options for value in values)

    def option_dimension(self, value: str) -> str | None:
        """The dimension an option value belongs to, or ``None``."""
        for dimension, values in self.options:
            if value in values:
                return dimension
        return None


class Catalog(Sequence[Product]):
    """An immutable sequence of products with lookup by asin.

    Args:
        products: the products; their asins must be unique.
        key: names the catalog (caches of search indexes are keyed by it).
    """

    def __init__(self, products: Sequence[Product], key: str) -> None:
        self._products = tuple(products)
        by_asin = {p.asin: p for p in self._products}
        if len(by_asin) != len(self._products):
            raise ValueError("catalog asins must be unique")
        self._by_asin = MappingProxyType(by_asin)
        self.key = key

    def __len__(self) -> int:
        return len(self._products)

    def __getitem__(self, index):  # type: ignore[override]
        return self._products[index]

    def __iter__(self) -> Iterator[Product]:
        return iter(self._products)

    def get(self, asin: str) -> Product | None:
        """The product with this asin (case-insensitive), or ``None``."""
        return self._by_asin.get(asin.upper())

    def __repr__(self) -> str:
        return f"Catalog({self.key!r}, {len(self)} products)"


def _asin(rng: random.Random, taken: set[str]) -> str:
    """A fresh asin ("B0" and 8 characters) not in ``taken``, which it joins."""
    while True:
        asin = "B0" + "".join(rng.choice(_ASIN_ALPHABET) for _ in range(8))
        if asin not in taken:
            taken.add(asin)
            return asin


def _price(rng: random.Random, low: float, high: float) -> float:
    """A price from ``low`` up to ``high`` dollars with a shop's usual cents."""
    dollars = rng.randint(int(low), int(high) - 1)
    return round(dollars + rng.choice((0.49, 0.95, 0.99, 0.0, 0.5)), 2)


def finish_product(
    rng: random.Random,
    taken: set[str],
    kind: ProductType,
    material: str,
    title: str,
    attributes: tuple[str, ...],
    options: Sequence[tuple[str, tuple[str, ...]]],
    description: str,
    bullets: tuple[str, ...],
) -> Product:
    """The product with these texts; draws its reviews, asin, price and rating, in that order.

    Every generated catalog (this module's and ``paper_catalog``'s) ends a product with it.
    """
    reviews = tuple(
        rng.choice(REVIEW_TEMPLATES).format(
            name=kind.name,
            material=material,
            attribute=(a := rng.choice(attributes)),
            Attribute=a.capitalize(),
        )
        for _ in range(rng.randint(1, 3))
    )
    return Product(
        asin=_asin(rng, taken),
        title=title,
        product_type=kind.name,
        category=kind.category,
        price=_price(rng, *kind.price),
        attributes=attributes,
        options=tuple(options),
        description=description,
        bullets=bullets,
        rating=round(rng.uniform(2.5, 5.0), 1),
        reviews=reviews,
    )


def _product(rng: random.Random, taken: set[str]) -> Product:
    kind = rng.choice(PRODUCT_TYPES)
    brand = rng.choice(BRANDS)
    material = rng.choice(kind.materials)
    attributes = tuple(rng.sample(kind.attributes, rng.randint(2, min(4, len(kind.attributes)))))
    options = []
    for dimension, pool in kind.options.items():
        count = rng.randint(min(2, len(pool)), min(5, len(pool)))
        chosen = set(rng.sample(pool, count))
        options.append((dimension, tuple(v for v in pool if v in chosen)))  # pool order
    quality = rng.choice(QUALITY_WORDS)
    headline = rng.choice(attributes)
    title = f"{brand} {quality.title()} {material.title()} {kind.name.title()}, {headline.title()}"
    if rng.random() < 0.5:
        title += f", {attributes[-1].title()}" if attributes[-1] != headline else ""
    description = (
        f"The {brand} {kind.name} is made of {material}. It is "
        + ", ".join(attributes[:-1])
        + (f" and {attributes[-1]}" if len(attributes) > 1 else attributes[0])
        + f". {'An' if quality[0] in 'aeiou' else 'A'} {quality} pick in "
        + f"{kind.category[-1].lower()}."
    )
    bullets = tuple(
        [
            f"{a.upper()}: {rng.choice(('designed to be', 'made to be', 'tested to be'))} {a}."
            for a in attributes
        ]
        + [f"MATERIAL: {material}.", f"WHAT YOU GET: one {kind.name} from {brand}."]
    )
    return finish_product(
        rng, taken, kind, material, title, attributes, options, description, bullets
    )


def generate_catalog(num_products: int = DEFAULT_NUM_PRODUCTS, seed: int = 0) -> Catalog:
    """Generates a catalog of ``num_products`` products; the same seed gives the same catalog.

    Args:
        num_products: how many products (1,000 by default; 100,000 works, in a few seconds).
        seed: seeds every choice.

    Returns:
        The catalog, keyed ``"generated-<num_products>-<seed>"``.
    """
    if num_products < 1:
        raise ValueError(f"num_products must be >= 1, got {num_products}")
    rng = random.Random(seed)
    taken: set[str] = set()
    products = [_product(rng, taken) for _ in range(num_products)]
    return Catalog(products, key=f"generated-{num_products}-{seed}")


@functools.lru_cache(maxsize=8)
def cached_catalog(num_products: int = DEFAULT_NUM_PRODUCTS, seed: int = 0) -> Catalog:
    """``generate_catalog`` made once per process and shared read-only."""
    return generate_catalog(num_products, seed)
