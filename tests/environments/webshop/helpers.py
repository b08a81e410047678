"""Hand-built products and goals for the WebShop tests."""

from __future__ import annotations

from environments.webshop.catalog import Product
from environments.webshop.instructions import Goal

BLANKET = Product(
    asin="B0BLANKET1",
    title="Acme Fleece Throw Blanket, Machine Washable",
    product_type="throw blanket",
    category=("Home & Kitchen", "Bedding", "Blankets & Throws"),
    price=25.0,
    attributes=("machine washable", "super soft"),
    options=(("color", ("red", "navy blue")), ("size", ("twin", "queen"))),
    description="A soft fleece blanket. It is lightweight.",
    bullets=("MACHINE WASHABLE: yes.", "MATERIAL: fleece."),
    rating=4.5,
    reviews=("Nice.",),
)

# a different kind in the same category path, and a kind in another path of the same top level
PILLOW = Product(
    asin="B0PILLOW01",
    title="Acme Pillow",
    product_type="bed pillow",
    category=("Home & Kitchen", "Bedding", "Blankets & Throws"),
    price=45.0,
    attributes=("hypoallergenic",),
    options=(("size", ("queen",)),),
    description="A pillow.",
    bullets=(),
    rating=4.0,
    reviews=(),
)
MUG = Product(
    asin="B0MUG00001",
    title="Acme Mug",
    product_type="coffee mug",
    category=("Home & Kitchen", "Kitchen & Dining", "Drinkware"),
    price=9.0,
    attributes=("dishwasher safe",),
    options=(("color", ("red",)),),
    description="A mug.",
    bullets=(),
    rating=4.0,
    reviews=(),
)
EARBUDS = Product(
    asin="B0EARBUDS1",
    title="Acme Earbuds",
    product_type="wireless earbuds",
    category=("Electronics", "Headphones", "Earbuds"),
    price=30.0,
    attributes=("noise cancelling",),
    options=(("color", ("red",)),),
    description="Earbuds.",
    bullets=(),
    rating=4.0,
    reviews=(),
)

# asks for 2 attributes and 2 options under 40 dollars: reward denominators are 2 + 2 + 1 = 5
BLANKET_GOAL = Goal(
    asin="B0BLANKET1",
    instruction="i need a machine washable throw blanket that is lightweight in red color, "
    "in size queen, and price lower than 40.00 dollars",
    product_type="throw blanket",
    category=("Home & Kitchen", "Bedding", "Blankets & Throws"),
    attributes=("machine washable", "lightweight"),
    options=(("color", "red"), ("size", "queen")),
    price_upper=40.0,
)
