"""Questions over a generated world, one or two hops, each with its answer and its evidence.

A one-hop question asks a fact of a named entity (``In which year was Doloburg founded?``); a
two-hop question asks a fact of an entity reached through another (``In which year was the
city where Neka Lathaiis was born founded?``: Neka Lathaiis's passage names the city, the
city's passage its founding year). ``Question.evidence`` lists the titles of the passages that
hold the chain, in order: what a searcher must find (and what the oracle searches for).

Example:
    >>> import random
    >>> from environments.searchqa.world import generate_world
    >>> world = generate_world(0, people=20, cities=8, companies=6)
    >>> question = draw_question(random.Random(0), world, hops=2)
    >>> len(question.evidence)
    2
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from environments.searchqa.world import City, Company, Person, World

E = TypeVar("E", Person, City, Company)
F = TypeVar("F", Person, City, Company)


@dataclass(frozen=True)
class Question:
    text: str
    answer: str
    #: titles of the passages that state the chain, in the order a searcher meets them
    evidence: tuple[str, ...]


Draw = Callable[[random.Random], Question]


def _about(entities: Sequence[E], ask: str, fact: Callable[[E], str]) -> Draw:
    """A one-hop template: ``ask`` names a random entity, ``fact`` of it is the answer."""

    def draw(rng: random.Random) -> Question:
        entity = rng.choice(entities)
        return Question(ask.format(entity.name), fact(entity), (entity.name,))

    return draw


def _via(entities: Sequence[E], link: Callable[[E], F], ask: str, fact: Callable[[F], str]) -> Draw:
    """A two-hop template: ``ask`` names a random entity, ``fact`` of the one it links to is
    the answer."""

    def draw(rng: random.Random) -> Question:
        entity = rng.choice(entities)
        linked = link(entity)
        return Question(ask.format(entity.name), fact(linked), (entity.name, linked.name))

    return draw


def _one_hop(world: World) -> list[Draw]:
    person = partial(_about, world.people)
    city = partial(_about, world.cities)
    company = partial(_about, world.companies)
    return [
        person("In which city was {} born?", lambda p: p.birth_city),
        person("In which year was {} born?", lambda p: str(p.birth_year)),
        person("What was the occupation of {}?", lambda p: p.occupation),
        city("In which year was {} founded?", _founded),
        city("In which country is {}?", lambda c: c.country),
        city("On which river is {}?", lambda c: c.river),
        company("Who founded {}?", lambda c: c.founder),
        company("In which city is {} headquartered?", lambda c: c.headquarters),
        company("In which year was {} founded?", lambda c: str(c.founded)),
    ]


def _two_hop(world: World) -> list[Draw]:
    person_by_name = {p.name: p for p in world.people}
    city_by_name = {c.name: c for c in world.cities}
    via_birth_city = partial(_via, world.people, lambda p: city_by_name[p.birth_city])
    via_founder = partial(_via, world.companies, lambda c: person_by_name[c.founder])
    via_headquarters = partial(_via, world.companies, lambda c: city_by_name[c.headquarters])
    return [
        via_birth_city("In which year was the city where {} was born founded?", _founded),
        via_birth_city("In which country was {} born?", lambda c: c.country),
        via_founder("In which year was the founder of {} born?", lambda p: str(p.birth_year)),
        via_founder("In which city was the founder of {} born?", lambda p: p.birth_city),
        via_founder("What was the occupation of the founder of {}?", lambda p: p.occupation),
        via_headquarters("In which country is {} headquartered?", lambda c: c.country),
        via_headquarters("In which year was the city where {} is headquartered founded?", _founded),
    ]


def _founded(city: City) -> str:
    return str(city.founded)


def draw_question(rng: random.Random, world: World, hops: int) -> Question:
    """A question of ``hops`` hops (1 or 2) about ``world``, every template equally likely."""
    if hops not in (1, 2):
        raise ValueError(f"hops must be 1 or 2, got {hops!r}")
    templates = _one_hop(world) if hops == 1 else _two_hop(world)
    return rng.choice(templates)(rng)
