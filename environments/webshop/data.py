"""What every WebShop env of a process shares read-only: the catalog, its index and the goals.

Goals are numbered: a goal number (any non-negative integer, drawn by the env from its episode
RNG) names one goal, so the text env and the web server rebuild the same goal from the number
alone. For a generated catalog, number ``n`` is the goal its difficulty draws
(``make_paper_goal`` or ``make_goal``) for product ``n % len(catalog)`` with
``random.Random(n)``; for WebShop's files it is goal ``n % len(goals)`` of the file.

Example:
    >>> data = shop_data(num_products=100)
    >>> data is shop_data(num_products=100), data.difficulty, data.catalog.key
    (True, 'paper', 'paper-100-0')
    >>> data.goal(7) == data.goal(7)
    True
    >>> shop_data(num_products=100, difficulty="easy").catalog.key
    'generated-100-0'
"""

from __future__ import annotations

import functools
import random
import threading
from dataclasses import dataclass
from pathlib import Path

from environments.webshop.catalog import Catalog, cached_catalog
from environments.webshop.difficulty import (
    DEFAULT_DIFFICULTY,
    check_difficulty,
    default_num_products,
)
from environments.webshop.instructions import Goal, make_goal
from environments.webshop.paper_catalog import generate_paper_catalog
from environments.webshop.paper_instructions import make_paper_goal
from environments.webshop.search import SearchIndex, index_for


@dataclass(frozen=True)
class ShopData:
    """A catalog, its search index and where goals come from.

    Attributes:
        catalog: the products.
        index: the BM25 index of the catalog.
        goals: WebShop's goals when loaded from its files; ``None`` for goals drawn from products.
        difficulty: how goals are drawn from products (see ``environments.webshop.difficulty``).
    """

    catalog: Catalog
    index: SearchIndex
    goals: tuple[Goal, ...] | None = None
    difficulty: str = DEFAULT_DIFFICULTY

    def goal(self, number: int) -> Goal:
        """The goal with this number (see the module docstring)."""
        if self.goals:
            return self.goals[number % len(self.goals)]
        draw = make_paper_goal if self.difficulty == "paper" else make_goal
        return draw(self.catalog[number % len(self.catalog)], random.Random(number))


_LOCK = threading.Lock()


@functools.lru_cache(maxsize=8)
def _load(
    num_products: int, catalog_seed: int, data_path: str | None, goal_source: str, difficulty: str
) -> ShopData:
    if data_path is not None:
        from environments.webshop.loader import load_webshop

        catalog, goals = load_webshop(data_path, goal_source)
        if not goals:
            raise ValueError(f"no usable instructions in {data_path}")
        return ShopData(catalog, SearchIndex(catalog), tuple(goals))
    if difficulty == "paper":
        catalog = generate_paper_catalog(num_products, catalog_seed)
    else:
        catalog = cached_catalog(num_products, catalog_seed)
    return ShopData(catalog, index_for(catalog), difficulty=difficulty)


def shop_data(
    num_products: int | None = None,
    catalog_seed: int = 0,
    data_path: str | Path | None = None,
    goal_source: str = "human",
    difficulty: str = DEFAULT_DIFFICULTY,
) -> ShopData:
    """The process-wide ``ShopData`` for these settings, built on first use (thread-safe).

    Args:
        num_products: size of the generated catalog (``None``: the difficulty's default;
            ignored with ``data_path``).
        catalog_seed: seed of the generated catalog (ignored with ``data_path``).
        data_path: a folder of WebShop's files to load instead of generating a catalog.
        goal_source: ``"human"`` or ``"synthetic"`` instructions (with ``data_path``).
        difficulty: ``"paper"`` or ``"easy"`` (see ``environments.webshop.difficulty``);
            WebShop's own files (``data_path``) are played as they are.

    Raises:
        ValueError: an unknown difficulty, or ``num_products`` below 1.
    """
    check_difficulty(difficulty)
    if num_products is None:
        num_products = default_num_products(difficulty)
    if data_path is not None:  # the files are the catalog: nothing is generated
        path = str(Path(data_path).expanduser().resolve())
        with _LOCK:
            return _load(0, 0, path, goal_source, DEFAULT_DIFFICULTY)
    with _LOCK:  # goal_source names WebShop's files' instructions: one entry whatever it is
        return _load(num_products, catalog_seed, None, "human", difficulty)
