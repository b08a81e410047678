"""WebShop's page state machine, shared by the text env and the web server.

Pages: ``search`` -> ``results`` (10 per page, ``Next >`` / ``< Prev``, ``Back to Search``)
-> ``item`` (options, ``Description``, ``Features``, ``Reviews``, ``Buy Now``) -> ``detail``
(one of those three) -> ``done`` (after ``Buy Now``, with the score). Actions are
``search[query]`` (only on the search page) and ``click[label]`` for a label the page shows;
labels are matched ignoring case and repeated spaces. ``resolve`` says whether an action is
available; ``apply`` executes an available one.

Example:
    >>> import random
    >>> from environments.webshop.catalog import generate_catalog
    >>> from environments.webshop.instructions import make_goal
    >>> from environments.webshop.search import SearchIndex
    >>> catalog = generate_catalog(100, seed=0)
    >>> shop = Shop(catalog, SearchIndex(catalog), make_goal(catalog[0], random.Random(0)))
    >>> shop.apply(shop.resolve("search", catalog[0].title))
    True
    >>> shop.page, catalog[0].asin in shop.available()
    ('results', True)
    >>> shop.resolve("click", "buy now") is None
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from environments.webshop.catalog import Catalog, Product
from environments.webshop.instructions import Goal
from environments.webshop.reward import Score, score
from environments.webshop.search import MAX_RESULTS, SearchIndex

SEARCH, RESULTS, ITEM, DETAIL, DONE = "search", "results", "item", "detail", "done"
BACK_TO_SEARCH, NEXT, PREV, BUY_NOW = "Back to Search", "Next >", "< Prev", "Buy Now"
DETAIL_TABS = ("Description", "Features", "Reviews")
MAX_QUERY_LENGTH = 500


def normalize_label(label: str) -> str:
    """The form labels are compared in: lower case, single spaces."""
    return " ".join(label.split()).lower()


@dataclass
class Shop:
    """One shopping session: the page the shopper is on and what it shows.

    Args:
        catalog: the products (shared, read-only).
        index: the catalog's search index (shared, read-only).
        goal: what the shopper is asked to buy.
        results_per_page: results on one page (WebShop shows 10).
    """

    catalog: Catalog
    index: SearchIndex
    goal: Goal
    results_per_page: int = 10
    page: str = SEARCH
    query: str = ""
    results: tuple[str, ...] = ()
    page_number: int = 1
    product: Product | None = None
    tab: str | None = None
    chosen: dict[str, str] = field(default_factory=dict)
    outcome: Score | None = None

    # ------------------------------------------------------------------ what the page offers
    @property
    def has_search_bar(self) -> bool:
        """Whether ``search[...]`` is available (the search page only)."""
        return self.page == SEARCH

    @property
    def page_count(self) -> int:
        """Result pages for the current query (at least 1)."""
        return max(1, math.ceil(len(self.results) / self.results_per_page))

    def page_results(self) -> list[Product]:
        """The products listed on the current results page."""
        start = (self.page_number - 1) * self.results_per_page
        asins = self.results[start : start + self.results_per_page]
        return [p for p in (self.catalog.get(a) for a in asins) if p is not None]

    def available(self) -> list[str]:
        """The labels one can click on the current page, in page order."""
        if self.page == RESULTS:
            labels = [BACK_TO_SEARCH]
            if self.page_number > 1:
                labels.append(PREV)
            if self.page_number < self.page_count:
                labels.append(NEXT)
            return labels + [p.asin for p in self.page_results()]
        if self.page == ITEM:
            assert self.product is not None
            return [
                BACK_TO_SEARCH,
                PREV,
                *self.product.option_values,
                *DETAIL_TABS,
                BUY_NOW,
            ]
        if self.page == DETAIL:
            return [BACK_TO_SEARCH, PREV]
        return []

    def resolve(self, kind: str, argument: str) -> tuple[str, str] | None:
        """The canonical action for ``kind[argument]``, or ``None`` if it is not available here.

        Args:
            kind: ``"search"`` or ``"click"`` (any case).
            argument: the query or the label.
        """
        kind = kind.lower()
        if kind == "search":
            query = " ".join(argument.split())
            if self.has_search_bar and query and len(query) <= MAX_QUERY_LENGTH:
                return ("search", query)
            return None
        if kind == "click":
            wanted = normalize_label(argument)
            for label in self.available():
                if normalize_label(label) == wanted:
                    return ("click", label)
        return None

    # ------------------------------------------------------------------ moving
    def apply(self, action: tuple[str, str]) -> bool:
        """Executes an action from ``resolve``; returns whether the page changed."""
        kind, argument = action
        if kind == "search":
            self.query = argument
            self.results = self.index.search(argument, k=MAX_RESULTS)
            self.page, self.page_number = RESULTS, 1
            return True
        return self._click(argument)

    def _click(self, label: str) -> bool:
        if label == BACK_TO_SEARCH:
            self.page, self.query, self.results, self.product, self.tab = SEARCH, "", (), None, None
            self.chosen = {}
            return True
        if self.page == RESULTS:
            if label == NEXT:
                self.page_number += 1
                return True
            if label == PREV:
                self.page_number -= 1
                return True
            self.product = self.catalog.get(label)
            self.page, self.chosen = ITEM, {}
            return True
        if self.page == DETAIL:  # only "< Prev" is left
            self.page, self.tab = ITEM, None
            return True
        assert self.product is not None
        if label == PREV:
            self.page, self.product, self.chosen = RESULTS, None, {}
            return True
        if label in DETAIL_TABS:
            self.page, self.tab = DETAIL, label
            return True
        if label == BUY_NOW:
            self.outcome = score(self.goal, self.product, self.chosen)
            self.page = DONE
            return True
        dimension = self.product.option_dimension(label)
        if dimension is None or self.chosen.get(dimension) == label:
            return False
        self.chosen[dimension] = label
        return True

    # ------------------------------------------------------------------ text
    def detail_lines(self) -> list[str]:
        """The lines of the open detail tab."""
        assert self.product is not None
        if self.tab == "Description":
            return [self.product.description]
        if self.tab == "Features":
            return list(self.product.bullets)
        return [f"Rating: {self.product.rating} out of 5", *self.product.reviews]

    def render_text(self) -> str:
        """The page as text; the last line lists the available actions."""
        lines = [f"Instruction: {self.goal.instruction}", ""]
        if self.page == SEARCH:
            lines.append("WebShop search page. Type a query to look for products.")
        elif self.page == RESULTS:
            if self.results:
                lines.append(
                    f'Results for "{self.query}": page {self.page_number} of {self.page_count} '
                    f"({len(self.results)} results)"
                )
                for product in self.page_results():
                    lines.append(f"[{product.asin}] {product.title} | ${product.price:.2f}")
            else:
                lines.append(f'No results for "{self.query}".')
        elif self.page in (ITEM, DETAIL):
            product = self.product
            assert product is not None
            lines.append(product.title)
            lines.append(f"Price: ${product.price:.2f} | Rating: {product.rating} out of 5")
            if self.page == ITEM:
                for dimension, values in product.options:
                    picked = self.chosen.get(dimension)
                    shown = ", ".join(f"{v} (selected)" if v == picked else v for v in values)
                    lines.append(f"{dimension}: {shown}")
            else:
                lines.append(f"{self.tab}:")
                lines.extend(self.detail_lines())
        else:
            assert self.product is not None and self.outcome is not None
            picked = ", ".join(f"{d}: {v}" for d, v in self.chosen.items()) or "no options"
            lines.append("Thank you for shopping with us!")
            lines.append(
                f"You bought: {self.product.title} ({picked}) for ${self.product.price:.2f}"
            )
            lines.append(f"Your score (min 0.0, max 1.0): {self.outcome.reward:.4f}")
        lines.append("")
        lines.append(self.actions_line())
        return "\n".join(lines)

    def actions_line(self) -> str:
        """``Available actions: ...`` for the end of every observation."""
        if self.page == DONE:
            return "Available actions: none (the episode is over)"
        actions = ["search[<your query>]"] if self.has_search_bar else []
        actions += [f"click[{label}]" for label in self.available()]
        return "Available actions: " + ", ".join(actions)
