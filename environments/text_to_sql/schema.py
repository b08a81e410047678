"""The databases text-to-SQL questions are asked about: domains of tables, described for templates.

A ``Domain`` is a few ``Table`` s; every table has an ``id INTEGER PRIMARY KEY`` and the columns
listed. A column's ``kind`` tells the question templates what they may do with it: filter on a
``category``, compare and aggregate a ``number``, name rows by their ``label`` (unique per
table), join along a ``ref`` (a foreign key to another table's ``id``).

Example:
    >>> shop = DOMAINS["shop"]
    >>> print(shop.table("orders").create_sql())
    CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), \
product_id INTEGER REFERENCES products(id), quantity INTEGER, status TEXT);
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ColumnKind = Literal["label", "category", "number", "ref"]


@dataclass(frozen=True)
class Column:
    """One column besides ``id``.

    Attributes:
        name: the SQL name.
        kind: ``label`` (unique text naming a row), ``category`` (a few repeated values),
            ``number`` or ``ref`` (the id of a row of table ``ref``).
        noun: how a question names it ("city", "price").
        choices: the values of a category, or the pool a label is drawn from.
        low, high: the range of a number.
        decimals: digits after the point of a number (0: an INTEGER column).
        ref: the table a ``ref`` column points to.
    """

    name: str
    kind: ColumnKind
    noun: str = ""
    choices: tuple[str, ...] = ()
    low: float = 0
    high: float = 0
    decimals: int = 0
    ref: str = ""

    @property
    def sql_type(self) -> str:
        if self.kind in ("label", "category"):
            return "TEXT"
        return "REAL" if self.decimals else "INTEGER"


@dataclass(frozen=True)
class Table:
    """A table of a domain, with how questions name its rows and how many rows it gets."""

    name: str
    singular: str
    plural: str
    columns: tuple[Column, ...]
    rows: tuple[int, int]

    def of_kind(self, kind: ColumnKind) -> list[Column]:
        return [c for c in self.columns if c.kind == kind]

    @property
    def label(self) -> Column | None:
        labels = self.of_kind("label")
        return labels[0] if labels else None

    def create_sql(self) -> str:
        parts = ["id INTEGER PRIMARY KEY"]
        for column in self.columns:
            reference = f" REFERENCES {column.ref}(id)" if column.kind == "ref" else ""
            parts.append(f"{column.name} {column.sql_type}{reference}")
        return f"CREATE TABLE {self.name} ({', '.join(parts)});"


@dataclass(frozen=True)
class Domain:
    """A database: its tables, referenced tables first."""

    name: str
    tables: tuple[Table, ...]

    def table(self, name: str) -> Table:
        return next(t for t in self.tables if t.name == name)


def _combine(pattern: str, firsts: str, seconds: str) -> tuple[str, ...]:
    """Every ``pattern.format(first, second)`` of two space-separated word lists."""
    return tuple(pattern.format(f, s) for f in firsts.split() for s in seconds.split())


_PEOPLE = _combine(
    "{} {}",
    "Ana Ben Chloe Dev Elena Farid Grace Hugo Ines Jonas Kemi Liam Mei Nora Omar Priya",
    "Alves Brandt Costa Diaz Eze Fischer Garcia Haddad Ito Jensen Kim Lopez Moreau Novak",
)
_PRODUCTS = _combine(
    "{} {}",
    "Compact Deluxe Classic Smart Travel Steel Bamboo Retro",
    "Lamp Kettle Backpack Chair Blender Bottle Speaker Tent Mug Clock",
)
_COURSES = _combine(
    "{} {}",
    "Intro Applied Advanced Modern",
    "Algebra Geometry Statistics Chemistry Genetics Painting Sculpture Harmony Composition "
    "Archaeology Economics Rhetoric",
)
_BOOKS = _combine(
    "The {} {}",
    "Silent Hidden Broken Golden Last Northern Paper Quiet Scarlet Winter",
    "Harbor Garden Letter Orchard River Tower Map Lantern Mirror Voyage",
)
_CITIES = ("Oslo", "Lima", "Kyoto", "Austin", "Porto")

DOMAINS: dict[str, Domain] = {
    "shop": Domain(
        "shop",
        (
            Table(
                "customers",
                "customer",
                "customers",
                (
                    Column("name", "label", "name", _PEOPLE),
                    Column("city", "category", "city", _CITIES),
                    Column("tier", "category", "tier", ("bronze", "silver", "gold")),
                    Column("age", "number", "age", low=18, high=80),
                ),
                (8, 14),
            ),
            Table(
                "products",
                "product",
                "products",
                (
                    Column("name", "label", "name", _PRODUCTS),
                    Column(
                        "category",
                        "category",
                        "category",
                        ("kitchen", "garden", "office", "toys", "sports"),
                    ),
                    Column("price", "number", "price", low=2, high=300, decimals=2),
                ),
                (8, 14),
            ),
            Table(
                "orders",
                "order",
                "orders",
                (
                    Column("customer_id", "ref", ref="customers"),
                    Column("product_id", "ref", ref="products"),
                    Column("quantity", "number", "quantity", low=1, high=9),
                    Column(
                        "status",
                        "category",
                        "status",
                        ("pending", "shipped", "delivered", "returned"),
                    ),
                ),
                (18, 30),
            ),
        ),
    ),
    "school": Domain(
        "school",
        (
            Table(
                "students",
                "student",
                "students",
                (
                    Column("name", "label", "name", _PEOPLE),
                    Column("house", "category", "house", ("Amber", "Birch", "Cedar", "Delta")),
                    Column("age", "number", "age", low=11, high=18),
                ),
                (8, 14),
            ),
            Table(
                "courses",
                "course",
                "courses",
                (
                    Column("title", "label", "title", _COURSES),
                    Column(
                        "department",
                        "category",
                        "department",
                        ("math", "science", "art", "music", "history"),
                    ),
                    Column("credits", "number", "credits", low=1, high=8),
                ),
                (7, 12),
            ),
            Table(
                "enrollments",
                "enrollment",
                "enrollments",
                (
                    Column("student_id", "ref", ref="students"),
                    Column("course_id", "ref", ref="courses"),
                    Column("score", "number", "score", low=35, high=100),
                    Column("term", "category", "term", ("spring", "summer", "autumn")),
                ),
                (18, 30),
            ),
        ),
    ),
    "library": Domain(
        "library",
        (
            Table(
                "authors",
                "author",
                "authors",
                (
                    Column("name", "label", "name", _PEOPLE),
                    Column("country", "category", "country", ("Chile", "Egypt", "Japan", "Norway")),
                    Column("born", "number", "birth year", low=1900, high=1995),
                ),
                (6, 10),
            ),
            Table(
                "books",
                "book",
                "books",
                (
                    Column("title", "label", "title", _BOOKS),
                    Column("author_id", "ref", ref="authors"),
                    Column(
                        "genre", "category", "genre", ("mystery", "poetry", "history", "fantasy")
                    ),
                    Column("pages", "number", "page count", low=60, high=900),
                ),
                (12, 20),
            ),
            Table(
                "loans",
                "loan",
                "loans",
                (
                    Column("book_id", "ref", ref="books"),
                    Column("branch", "category", "branch", ("north", "south", "east", "west")),
                    Column("days", "number", "length in days", low=1, high=60),
                ),
                (18, 30),
            ),
        ),
    ),
}
