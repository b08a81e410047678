"""A fictional world for search-QA: people, cities and companies with facts that link them.

``generate_world(seed, ...)`` draws it. Every name is made up from syllables, so no model can
answer from memory: the facts are only in the corpus (``corpus.py``). Entities link to each other
(a person was born in a city, a company was founded by a person and sits in a city), which is
what two-hop questions walk. With ``look_alikes``, some entities get a twin whose name shares a
word (``Kelmar Vossen`` and ``Kelmar Vossan``, ``Veltholm`` and ``Port Veltholm``) but whose facts
differ: a search for one finds both, and only a careful reader tells them apart.

Example:
    >>> world = generate_world(0, people=20, cities=8, companies=6)
    >>> person = world.people[0]
    >>> person.birth_city in {city.name for city in world.cities}
    True
"""

from __future__ import annotations

import random
from dataclasses import dataclass

_ONSETS = (
    "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p",
    "r", "s", "t", "v", "w", "z", "br", "dr", "gr", "tr", "th",
)  # fmt: skip
_VOWELS = ["a", "e", "i", "o", "u", "a", "e", "i", "o", "u", "ae", "ai", "ou"]
_CODAS = ["n", "r", "l", "s", "m", "nd"]
_SURNAME_ENDINGS = ["en", "ar", "is", "ov", "ane", "ick", "ell"]
_CITY_ENDINGS = ["ford", "holm", "ton", "ria", "mouth", "burg", "dale", "port", "wick"]
_CITY_PREFIXES = ("Port", "North", "Upper", "New")
#: a company's kind (the last word of its name) and its industry
_COMPANY_KINDS = {
    "Works": "engineering",
    "Foundry": "metalworking",
    "Press": "publishing",
    "Mills": "textile",
    "Labs": "research",
    "Shipping": "shipping",
    "Brewery": "brewing",
    "Bank": "banking",
}
_OCCUPATIONS = (
    "painter", "chemist", "sailor", "architect", "poet", "astronomer", "engineer", "composer",
    "cartographer", "surgeon", "botanist", "weaver", "judge", "glassblower", "historian",
)  # fmt: skip


@dataclass(frozen=True)
class Person:
    name: str
    occupation: str
    birth_city: str
    birth_year: int


@dataclass(frozen=True)
class City:
    name: str
    country: str
    river: str
    founded: int


@dataclass(frozen=True)
class Company:
    name: str
    industry: str
    headquarters: str
    founder: str
    founded: int


@dataclass(frozen=True)
class World:
    """Everything the corpus describes and the questions ask about."""

    people: tuple[Person, ...]
    cities: tuple[City, ...]
    companies: tuple[Company, ...]
    countries: tuple[str, ...]


class _Names:
    """Draws made-up names; a new name shares no word with an earlier one (only twins do)."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.used_words: set[str] = set()

    def syllable(self) -> str:
        rng = self.rng
        coda = rng.choice(_CODAS) if rng.random() < 0.3 else ""
        return rng.choice(_ONSETS) + rng.choice(_VOWELS) + coda

    def fresh(self, make) -> str:
        while True:
            name = make()
            words = set(name.lower().split())
            if not words & self.used_words:
                self.used_words |= words
                return name

    def word(self, ending: str = "") -> str:
        return (self.syllable() + self.syllable() + ending).capitalize()


def generate_world(
    seed: int,
    *,
    people: int = 200,
    cities: int = 60,
    companies: int = 60,
    countries: int = 8,
    look_alikes: bool = True,
) -> World:
    """Draws a world from ``seed``; ``look_alikes`` adds twins for about a third of it."""
    for name, value in (("people", people), ("cities", cities), ("companies", companies)):
        if value < 2:
            raise ValueError(f"{name} must be >= 2, got {value}")
    rng = random.Random(seed)
    names = _Names(rng)
    country_names = tuple(
        names.fresh(lambda: names.word().rstrip("aeiou") + "ia") for _ in range(countries)
    )

    city_list: list[City] = []
    while len(city_list) < cities:
        name = names.fresh(lambda: names.word(rng.choice(_CITY_ENDINGS)))
        city_list.append(_city(rng, names, name, country_names))
        if look_alikes and rng.random() < 1 / 3 and len(city_list) < cities:
            twin = f"{rng.choice(_CITY_PREFIXES)} {name}"
            city_list.append(_city(rng, names, twin, country_names))
    city_names = [c.name for c in city_list]

    person_list: list[Person] = []
    while len(person_list) < people:
        first = names.word()
        endings = rng.sample(_SURNAME_ENDINGS, 2)
        stem = names.fresh(names.word)
        person_list.append(_person(rng, f"{first} {stem}{endings[0]}", city_names))
        if look_alikes and rng.random() < 1 / 3 and len(person_list) < people:
            # the same first name, the surname's ending changed: Kelmar Vossen, Kelmar Vossar
            person_list.append(_person(rng, f"{first} {stem}{endings[1]}", city_names))

    company_list: list[Company] = []
    while len(company_list) < companies:
        base = names.fresh(names.word)
        kinds = rng.sample(sorted(_COMPANY_KINDS), 2)
        company_list.append(_company(rng, f"{base} {kinds[0]}", city_names, person_list))
        if look_alikes and rng.random() < 1 / 3 and len(company_list) < companies:
            company_list.append(_company(rng, f"{base} {kinds[1]}", city_names, person_list))
    return World(tuple(person_list), tuple(city_list), tuple(company_list), country_names)


def _city(rng: random.Random, names: _Names, name: str, countries: tuple[str, ...]) -> City:
    river = names.fresh(names.word)
    return City(name, rng.choice(countries), river, rng.randint(800, 1890))


def _person(rng: random.Random, name: str, cities: list[str]) -> Person:
    return Person(name, rng.choice(_OCCUPATIONS), rng.choice(cities), rng.randint(1700, 1990))


def _company(rng: random.Random, name: str, cities: list[str], people: list[Person]) -> Company:
    founder = rng.choice(people)
    return Company(
        name,
        _COMPANY_KINDS[name.rsplit(" ", 1)[1]],
        rng.choice(cities),
        founder.name,
        founder.birth_year + rng.randint(20, 60),
    )
