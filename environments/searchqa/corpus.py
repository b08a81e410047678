"""The search-QA corpus: one passage per entity of a generated world, indexed with BM25.

``load_corpus(seed, size, look_alikes)`` writes the passages of ``generate_world`` and indexes
them with ``bm25s``; the result is cached per process, so every env over one corpus shares one
index (it is read-only). ``Corpus.search`` returns the top passages of a query, best first, and
only passages that share at least one word with it.

Example:
    >>> corpus = load_corpus(0, "small")
    >>> person = corpus.world.people[0]
    >>> hits = corpus.search(person.name, k=3)
    >>> hits[0].title == person.name
    True
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import bm25s

from environments.searchqa.world import World, generate_world

#: entities per corpus size: (people, cities, companies)
CORPUS_SIZES: dict[str, tuple[int, int, int]] = {
    "small": (100, 30, 30),
    "medium": (400, 100, 100),
    "large": (1600, 300, 400),
}


@dataclass(frozen=True)
class Passage:
    """One encyclopedia entry: its id (index in the corpus), title and text."""

    id: int
    title: str
    text: str
    #: every name and number the text states: what a reader could give as an answer
    values: tuple[str, ...]

    def render(self) -> str:
        return f"{self.title}: {self.text}"


def write_passages(world: World) -> list[Passage]:
    """One passage per person, city and company, in that order."""
    entries: list[tuple[str, str, tuple[str, ...]]] = []
    for p in world.people:
        first = p.name.split()[0]
        text = (
            f"{p.name} was a {p.occupation}, born in {p.birth_city} in {p.birth_year}. "
            f"{first} is remembered as one of the notable {p.occupation}s of the age."
        )
        entries.append((p.name, text, (p.occupation, p.birth_city, str(p.birth_year))))
    for c in world.cities:
        text = (
            f"{c.name} is a city in {c.country}, on the river {c.river}. "
            f"{c.name} was founded in {c.founded}."
        )
        entries.append((c.name, text, (c.country, c.river, str(c.founded))))
    for c in world.companies:
        text = (
            f"{c.name} is a {c.industry} company headquartered in {c.headquarters}. "
            f"It was founded in {c.founded} by {c.founder}."
        )
        entries.append((c.name, text, (c.industry, c.headquarters, c.founder, str(c.founded))))
    return [Passage(i, title, text, values) for i, (title, text, values) in enumerate(entries)]


class Corpus:
    """The passages of a world and their BM25 index."""

    def __init__(self, world: World):
        self.world = world
        self.passages = write_passages(world)
        self._by_title = {p.title: p for p in self.passages}
        tokens = bm25s.tokenize(
            [p.render() for p in self.passages], stopwords="en", show_progress=False
        )
        self._retriever = bm25s.BM25()
        self._retriever.index(tokens, show_progress=False)
        self._vocabulary = tokens.vocab

    def passage(self, title: str) -> Passage:
        """The passage about ``title`` (an entity's exact name)."""
        return self._by_title[title]

    def search(self, query: str, k: int = 3) -> list[Passage]:
        """The ``k`` best passages for ``query`` by BM25, best first; none shares no word."""
        words = bm25s.tokenize(query, stopwords="en", return_ids=False, show_progress=False)[0]
        known = [w for w in words if w in self._vocabulary]
        if not known:
            return []
        k = min(k, len(self.passages))
        ids, scores = self._retriever.retrieve([known], k=k, show_progress=False)
        return [self.passages[int(i)] for i, s in zip(ids[0], scores[0], strict=True) if s > 0]


@functools.cache
def load_corpus(seed: int, size: str = "medium", look_alikes: bool = True) -> Corpus:
    """The corpus of world ``seed`` at ``size``, built once per process."""
    if size not in CORPUS_SIZES:
        raise ValueError(f"corpus_size must be one of {tuple(CORPUS_SIZES)}, got {size!r}")
    people, cities, companies = CORPUS_SIZES[size]
    world = generate_world(
        seed, people=people, cities=cities, companies=companies, look_alikes=look_alikes
    )
    return Corpus(world)
