"""BM25 search over a catalog, through bm25s; one index per catalog, built once per process.

A product is indexed by its title (twice, so title words weigh more), product type, category
path, attributes, option values and bullet points. Queries are split, lower-cased and stripped
of English stop words as the corpus was; words the catalog never uses are ignored. The index is
read-only after it is built, so every env of a process shares it.

Example:
    >>> from environments.webshop.catalog import generate_catalog
    >>> catalog = generate_catalog(200, seed=0)
    >>> index = SearchIndex(catalog)
    >>> hits = index.search(catalog[5].title)
    >>> catalog[5].asin in hits[:10]
    True
    >>> index.search("zzzz qqqq")
    ()
"""

from __future__ import annotations

import functools
import re
import threading

from environments.webshop.catalog import Catalog, Product
from environments.webshop.deps import require

MAX_RESULTS = 50
_SPLITTER = r"(?u)\b\w\w+\b"
_WORD = re.compile(_SPLITTER)


def product_text(product: Product) -> str:
    """The text a product is indexed by."""
    return " ".join(
        (
            product.title,
            product.title,
            product.product_type,
            " ".join(product.category),
            " ".join(product.attributes),
            " ".join(product.option_values),
            " ".join(product.bullets),
        )
    )


class SearchIndex:
    """A BM25 index of one catalog.

    Args:
        catalog: the products to index.
    """

    def __init__(self, catalog: Catalog) -> None:
        bm25s = require("bm25s")
        tokenization = require("bm25s.tokenization")
        stopwords = require("bm25s.stopwords")
        self.catalog = catalog
        self._asins = tuple(p.asin for p in catalog)
        self._stopwords = frozenset(stopwords.STOPWORDS_EN)
        tokenizer = tokenization.Tokenizer(lower=True, splitter=_SPLITTER, stopwords="en")
        ids = tokenizer.tokenize(
            [product_text(p) for p in catalog], show_progress=False, return_as="ids"
        )
        self._vocab = dict(tokenizer.get_vocab_dict())
        self._retriever = bm25s.BM25()
        self._retriever.index(ids, show_progress=False)

    def _query_ids(self, query: str) -> list[int]:
        words = _WORD.findall(query.lower())
        ids = [self._vocab.get(w) for w in words if w not in self._stopwords]
        return [i for i in ids if i]  # 0 is bm25s's empty token; None is an unknown word

    def search(self, query: str, k: int = MAX_RESULTS) -> tuple[str, ...]:
        """The asins of the best ``k`` products for ``query``, best first (ties by catalog order).

        Products that share no word with the query are never returned.
        """
        ids = self._query_ids(query)
        if not ids or k < 1:
            return ()
        k = min(k, len(self._asins))
        documents, scores = self._retriever.retrieve([ids], k=k, show_progress=False, n_threads=1)
        ranked = sorted(
            ((-float(s), int(d)) for d, s in zip(documents[0], scores[0], strict=True) if s > 0)
        )
        return tuple(self._asins[d] for _, d in ranked)


_LOCK = threading.Lock()


@functools.lru_cache(maxsize=8)
def _cached(catalog: Catalog) -> SearchIndex:
    return SearchIndex(catalog)


def index_for(catalog: Catalog) -> SearchIndex:
    """The process-wide index of ``catalog``, built on first use (thread-safe)."""
    with _LOCK:
        return _cached(catalog)
