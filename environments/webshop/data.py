"""What every WebShop env of a process shares read-only: the catalog, its index and the goals.

Goals are numbered: a goal number (any non-negative integer, drawn by the env from its episode
RNG) names one goal, so the text env and the web server rebuild the same goal from the number
alone. For a generated catalog, number ``n`` is the goal ``make_goal`` draws for product
``n % len(catalog)`` with ``random.Random(n)``; for WebShop's files it is goal
``n % len(goals)`` of the file.

Example:
    >>> data = shop_data(num_products=100)
    >>> data is shop_data(num_products=100)
    True
    >>> data.goal(7) == data.goal(7)
    True
"""

from __future__ import annotations

import functools
import random
import threading
from dataclasses import dataclass
from pathlib import Path

from environments.webshop.catalog import DEFAULT_NUM_PRODUCTS, Catalog, cached_catalog
from environments.webshop.instructions import Goal, make_goal
from environments.webshop.search import SearchIndex, index_for


@dataclass(frozen=True)
class ShopData:
    """A catalog, its search index and where goals come from.

    Attributes:
        catalog: the products.
        index: the BM25 index of the catalog.
        goals: WebShop's goals when loaded from its files; ``None`` for goals drawn from products.
    """

    catalog: Catalog
    index: SearchIndex
    goals: tuple[Goal, ...] | None = None

    def goal(self, number: int) -> Goal:
        """The goal with this number (see the module docstring)."""
        if self.goals:
            return self.goals[number % len(self.goals)]
        return make_goal(self.catalog[number % len(self.catalog)], random.Random(number))


_LOCK = threading.Lock()


@functools.lru_cache(maxsize=8)
def _load(
    num_products: int, catalog_seed: int, data_path: str | None, goal_source: str
) -> ShopData:
    if data_path is not None:
        from environments.webshop.loader import load_webshop

        catalog, goals = load_webshop(data_path, goal_source)
        if not goals:
            raise ValueError(f"no usable instructions in {data_path}")
        return ShopData(catalog, SearchIndex(catalog), tuple(goals))
    catalog = cached_catalog(num_products, catalog_seed)
    return ShopData(catalog, index_for(catalog))


def shop_data(
    num_products: int = DEFAULT_NUM_PRODUCTS,
    catalog_seed: int = 0,
    data_path: str | Path | None = None,
    goal_source: str = "human",
) -> ShopData:
    """The process-wide ``ShopData`` for these settings, built on first use (thread-safe).

    Args:
        num_products: size of the generated catalog (ignored with ``data_path``).
        catalog_seed: seed of the generated catalog (ignored with ``data_path``).
        data_path: a folder of WebShop's files to load instead of generating a catalog.
        goal_source: ``"human"`` or ``"synthetic"`` instructions (with ``data_path``).
    """
    path = None if data_path is None else str(Path(data_path).expanduser().resolve())
    with _LOCK:
        return _load(num_products, catalog_seed, path, goal_source)
