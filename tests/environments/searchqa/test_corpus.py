"""The generated world, its passages and the BM25 index over them."""

from __future__ import annotations

import pytest

from environments.searchqa.answers import is_correct, normalise
from environments.searchqa.corpus import Corpus, load_corpus
from environments.searchqa.world import generate_world


def test_the_same_seed_draws_the_same_world_and_another_seed_another():
    assert generate_world(3, people=30, cities=10, companies=10) == generate_world(
        3, people=30, cities=10, companies=10
    )
    assert generate_world(3) != generate_world(4)


def test_entities_link_to_entities_of_the_world():
    world = generate_world(1)
    cities = {c.name for c in world.cities}
    people = {p.name: p for p in world.people}
    assert all(p.birth_city in cities for p in world.people)
    assert all(c.headquarters in cities and c.founder in people for c in world.companies)
    # a company is founded in its founder's lifetime, 20 to 60 years after their birth
    assert all(20 <= c.founded - people[c.founder].birth_year <= 60 for c in world.companies)
    names = [e.name for e in (*world.people, *world.cities, *world.companies)]
    assert len(names) == len(set(names))


def test_look_alikes_share_a_word_and_only_when_asked_for():
    def shared_first_names(world):
        firsts = [p.name.split()[0] for p in world.people]
        return len(firsts) - len(set(firsts))

    assert shared_first_names(generate_world(0)) > 20
    plain = generate_world(0, look_alikes=False)
    assert not any(c.name.split()[0] in ("Port", "North", "Upper", "New") for c in plain.cities)


@pytest.mark.parametrize("size", ["small", "medium", "large"])
def test_a_title_search_ranks_its_passage_first(size):
    corpus = load_corpus(0, size)
    misses = [p.title for p in corpus.passages if corpus.search(p.title, k=1) != [p]]
    assert misses == []


def test_a_search_for_one_twin_shows_the_other():
    corpus = load_corpus(0, "medium")
    first_names: dict[str, list[str]] = {}
    for person in corpus.world.people:
        first_names.setdefault(person.name.split()[0], []).append(person.name)
    twin, other = next(names for names in first_names.values() if len(names) == 2)
    titles = [p.title for p in corpus.search(twin, k=3)]
    assert titles[0] == twin and other in titles


def test_a_query_of_unknown_or_stop_words_finds_nothing():
    corpus = load_corpus(0, "small")
    assert corpus.search("xyzzy plugh") == []
    assert corpus.search("the of and") == []
    assert corpus.search("") == []


def test_the_index_is_built_once_per_corpus():
    assert load_corpus(0, "small") is load_corpus(0, "small")
    assert load_corpus(0, "small") is not load_corpus(1, "small")
    assert isinstance(load_corpus(0, "small"), Corpus)


def test_an_unknown_corpus_size_is_refused():
    with pytest.raises(ValueError, match=r"corpus_size must be one of \('small'"):
        load_corpus(0, "huge")


@pytest.mark.parametrize(
    ("answer", "gold", "correct"),
    [
        ("Trunhamouth", "Trunhamouth", True),
        ("  the trunhamouth. ", "Trunhamouth", True),
        ("Port  Rargenford", "Port Rargenford", True),
        ("1822", "1822", True),
        ("Rargenford", "Port Rargenford", False),
        ("Trunhamouth, in 1822", "Trunhamouth", False),
        ("born in Trunhamouth", "Trunhamouth", False),
        ("", "Trunhamouth", False),
        ("the", "The", False),  # nothing left once normalised
    ],
)
def test_answers_match_exactly_once_normalised(answer, gold, correct):
    assert is_correct(answer, gold) is correct


def test_normalise_drops_case_punctuation_and_articles():
    assert normalise("The  Port-Rargenford!") == "portrargenford"
    assert normalise("A poet") == "poet"
