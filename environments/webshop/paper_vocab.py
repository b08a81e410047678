"""The paper difficulty's product types: the easy ones, their look-alikes and more colours.

Every easy type gets two sibling types in its own category path (a *weighted blanket* beside the
*throw blanket*): a sibling shares the type's attributes and options, so a search for one kind
lists the others, and buying one scores half (WebShop's type reward for the same category).
No two type names are alike enough to count as the same kind for the reward. Colours gain near
neighbours ("blue" beside "navy blue" and "light blue") so that option labels contain each
other's words.

Example:
    >>> len(PAPER_TYPES), len({t.name for t in PAPER_TYPES})
    (48, 48)
    >>> [t.name for t in PAPER_TYPES if t.category[-1] == "Blankets & Throws"]
    ['throw blanket', 'weighted blanket', 'electric blanket']
"""

from __future__ import annotations

import dataclasses

from environments.webshop.vocab import COLORS, PRODUCT_TYPES, ProductType

PAPER_COLORS = (*COLORS, "blue", "light blue", "wine red", "light grey", "off white")

#: easy type -> (sibling name, its price range, its materials), two each
_SIBLINGS: dict[str, tuple[tuple[str, tuple[float, float], tuple[str, ...]], ...]] = {
    "throw blanket": (
        ("weighted blanket", (35.0, 140.0), ("glass beads", "minky", "cotton")),
        ("electric blanket", (30.0, 120.0), ("microplush", "flannel", "fleece")),
    ),
    "coffee mug": (
        ("travel mug", (10.0, 40.0), ("stainless steel", "bamboo", "plastic")),
        ("espresso cup", (6.0, 30.0), ("porcelain", "glass", "ceramic")),
    ),
    "bath towel": (
        ("hand towel", (6.0, 35.0), ("cotton", "bamboo", "linen")),
        ("washcloth", (5.0, 25.0), ("cotton", "microfiber", "muslin")),
    ),
    "t-shirt": (
        ("polo shirt", (14.0, 55.0), ("pique cotton", "polyester", "jersey")),
        ("tank top", (8.0, 30.0), ("cotton", "modal", "rib knit")),
    ),
    "hoodie": (
        ("sweatshirt", (16.0, 60.0), ("cotton", "fleece", "terry")),
        ("zip jacket", (22.0, 80.0), ("fleece", "softshell", "polyester")),
    ),
    "running shoes": (
        ("walking shoes", (28.0, 120.0), ("mesh", "leather", "knit")),
        ("hiking boots", (45.0, 180.0), ("suede", "leather", "nylon")),
    ),
    "face moisturizer": (
        ("face serum", (10.0, 70.0), ("niacinamide", "retinol", "vitamin c")),
        ("eye cream", (9.0, 60.0), ("caffeine", "peptides", "hyaluronic acid")),
    ),
    "shampoo": (
        ("conditioner", (5.0, 38.0), ("argan oil", "coconut oil", "keratin")),
        ("dry shampoo", (6.0, 30.0), ("rice starch", "charcoal", "clay")),
    ),
    "wireless earbuds": (
        ("over ear headphones", (20.0, 200.0), ("leather", "aluminum", "plastic")),
        ("bluetooth speaker", (18.0, 150.0), ("fabric", "rubber", "aluminum")),
    ),
    "phone case": (
        ("screen protector", (5.0, 25.0), ("tempered glass", "film", "hydrogel")),
        ("wallet case", (10.0, 50.0), ("leather", "vegan leather", "canvas")),
    ),
    "usb c charger": (
        ("charging cable", (6.0, 30.0), ("braided nylon", "silicone", "tpe")),
        ("power bank", (15.0, 70.0), ("aluminum", "abs plastic", "silicone")),
    ),
    "protein bar": (
        ("granola bar", (6.0, 35.0), ("oats", "honey", "nuts")),
        ("protein cookie", (12.0, 45.0), ("whey", "pea protein", "almond flour")),
    ),
    "green tea": (
        ("black tea", (4.0, 30.0), ("assam", "ceylon", "darjeeling")),
        ("herbal tea", (4.0, 28.0), ("chamomile", "rooibos", "hibiscus")),
    ),
    "yoga mat": (
        ("yoga block", (8.0, 35.0), ("cork", "foam", "bamboo")),
        ("exercise mat", (18.0, 90.0), ("foam", "rubber", "vinyl")),
    ),
    "water bottle": (
        ("tumbler", (10.0, 45.0), ("stainless steel", "glass", "tritan")),
        ("shaker bottle", (7.0, 28.0), ("plastic", "stainless steel", "tritan")),
    ),
    "dog bed": (
        ("dog crate pad", (15.0, 70.0), ("foam", "fleece", "canvas")),
        ("dog blanket", (10.0, 45.0), ("fleece", "sherpa", "plush")),
    ),
}


def _paper_options(options: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    return {dim: PAPER_COLORS if pool == COLORS else pool for dim, pool in options.items()}


def _paper_types() -> tuple[ProductType, ...]:
    types: list[ProductType] = []
    for base in PRODUCT_TYPES:
        base = dataclasses.replace(base, options=_paper_options(base.options))
        types.append(base)
        for name, price, materials in _SIBLINGS[base.name]:
            types.append(dataclasses.replace(base, name=name, price=price, materials=materials))
    return tuple(types)


PAPER_TYPES: tuple[ProductType, ...] = _paper_types()

#: marketing words noisy titles are stuffed with; no attribute phrase is among them
TITLE_FLUFF = (
    "Upgraded",
    "2024 New",
    "Best Seller",
    "Gift Idea",
    "Perfect Gift",
    "Value Set",
    "Top Rated",
    "Limited Edition",
    "Multipurpose",
    "Home Office",
    "Travel Friendly",
    "Everyday Use",
    "Men Women",
    "Adults Kids",
    "Holiday",
    "Birthday Christmas",
    "Stylish",
    "Cute",
    "Heavy Duty",
    "Professional",
)
