"""BM25 search over a catalog, through bm25s; one index per catalog, built once and cached.

A product is indexed by its title (twice, so title words weigh more), product type, category
path, attributes, option values and bullet points. Queries are split, lower-cased and stripped
of English stop words as the corpus was; words the catalog never uses are ignored. The index is
read-only after it is built, so every env of a process shares it.

Built indexes are also kept on disk, in ``$ROLLENV_CACHE/webshop-index`` (``~/.cache/rollenv``
by default), under a digest of the indexed texts: another process (a Ray env actor, the next
run) loads the index of a 100,000-product catalog instead of building it again. A folder is
written whole under a temporary name and renamed, so a crash never leaves one a later load
would trust; a cache that cannot be written is skipped.

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
import hashlib
import json
import os
import re
import shutil
import threading
from pathlib import Path

from environments.webshop.catalog import Catalog, Product
from environments.webshop.deps import require

MAX_RESULTS = 50
_SPLITTER = r"(?u)\b\w\w+\b"
_WORD = re.compile(_SPLITTER)
#: changes when what is indexed, or how, changes: older cached indexes are then not used
_INDEX_FORMAT = 1
_VOCAB_FILE = "rollenv-vocab.json"


def index_cache_root() -> Path:
    """Where built indexes are kept: ``$ROLLENV_CACHE/webshop-index``."""
    root = Path(os.environ.get("ROLLENV_CACHE") or "~/.cache/rollenv").expanduser()
    return root / "webshop-index"


def _digest(texts: list[str], bm25s_version: str) -> str:
    digest = hashlib.sha256(f"{_INDEX_FORMAT}|{_SPLITTER}|en|{bm25s_version}".encode())
    for text in texts:
        digest.update(text.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


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

    def __init__(self, catalog: Catalog, *, disk_cache: bool = True) -> None:
        bm25s = require("bm25s")
        stopwords = require("bm25s.stopwords")
        self.catalog = catalog
        self._asins = tuple(p.asin for p in catalog)
        self._stopwords = frozenset(stopwords.STOPWORDS_EN)
        texts = [product_text(p) for p in catalog]
        folder = index_cache_root() / _digest(texts, bm25s.__version__) if disk_cache else None
        #: whether this index was read from the disk cache rather than built
        self.loaded_from_cache = folder is not None and (folder / _VOCAB_FILE).is_file()
        if self.loaded_from_cache:
            self._retriever = bm25s.BM25.load(str(folder), load_vocab=True)
            self._vocab = json.loads((folder / _VOCAB_FILE).read_text())
            return
        tokenizer = require("bm25s.tokenization").Tokenizer(
            lower=True, splitter=_SPLITTER, stopwords="en"
        )
        # as (ids, vocab): bm25s then keeps the vocabulary, and the index saves and loads
        tokenized = tokenizer.tokenize(texts, show_progress=False, return_as="tuple")
        self._vocab = dict(tokenizer.get_vocab_dict())
        self._retriever = bm25s.BM25()
        self._retriever.index(tokenized, show_progress=False)
        if folder is not None:
            self._save(folder)

    def _save(self, folder: Path) -> None:
        """Writes the index to ``folder`` whole or not at all (the vocab file goes last)."""
        partial = folder.with_name(f"{folder.name}.tmp-{os.getpid()}-{threading.get_ident()}")
        try:
            self._retriever.save(str(partial), show_progress=False)
            (partial / _VOCAB_FILE).write_text(json.dumps(self._vocab))
            partial.rename(folder)
        except OSError:  # read-only home, or another process renamed its copy first
            shutil.rmtree(partial, ignore_errors=True)

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
