"""The words the catalog generator builds products from: product types, attributes, options.

Each ``ProductType`` names its category path, the attributes a product of that type may have
(phrases an instruction asks for, as WebShop's attribute lists do), its option dimensions
(colour, size, flavour, ...) and a price range. Option values never repeat across the
dimensions of one type, so a label on an item page names one option.
"""

from __future__ import annotations

from dataclasses import dataclass

COLORS = (
    "red",
    "navy blue",
    "black",
    "white",
    "forest green",
    "charcoal grey",
    "beige",
    "pink",
    "mustard yellow",
    "purple",
    "teal",
    "brown",
)
APPAREL_SIZES = ("x-small", "small", "medium", "large", "x-large", "xx-large")
SHOE_SIZES = ("6", "7", "7.5", "8", "8.5", "9", "10", "11", "12")
PACKS = ("pack of 1", "pack of 2", "pack of 3", "pack of 6", "pack of 12")

#: How an instruction asks for a value of each option dimension.
OPTION_PHRASES = {
    "color": "in {} color",
    "size": "in size {}",
    "flavor": "with {} flavor",
    "pack": "in a {}",
    "scent": "with a {} scent",
    "capacity": "with {} capacity",
}


@dataclass(frozen=True)
class ProductType:
    """One kind of product the generator can make.

    Attributes:
        name: what a shopper calls it ("throw blanket"); WebShop's ``query``.
        category: the category path, top level first.
        attributes: phrases a product of this type may have.
        options: option dimension -> the values products of this type draw from.
        price: lowest and highest price in dollars.
        materials: words for titles and descriptions.
    """

    name: str
    category: tuple[str, ...]
    attributes: tuple[str, ...]
    options: dict[str, tuple[str, ...]]
    price: tuple[float, float]
    materials: tuple[str, ...]


PRODUCT_TYPES: tuple[ProductType, ...] = (
    ProductType(
        "throw blanket",
        ("Home & Kitchen", "Bedding", "Blankets & Throws"),
        (
            "machine washable",
            "super soft",
            "lightweight",
            "fade resistant",
            "hypoallergenic",
            "double sided",
            "wrinkle free",
        ),
        {"color": COLORS, "size": ("50 x 60 inch", "60 x 80 inch", "twin", "queen", "king")},
        (12.0, 79.0),
        ("fleece", "sherpa", "flannel", "cotton knit"),
    ),
    ProductType(
        "coffee mug",
        ("Home & Kitchen", "Kitchen & Dining", "Drinkware"),
        (
            "dishwasher safe",
            "microwave safe",
            "lead free",
            "heat resistant",
            "easy clean",
            "stackable",
        ),
        {"color": COLORS, "capacity": ("8 oz", "12 oz", "16 oz", "20 oz")},
        (6.0, 35.0),
        ("ceramic", "stoneware", "porcelain", "stainless steel"),
    ),
    ProductType(
        "bath towel",
        ("Home & Kitchen", "Bath", "Towels"),
        (
            "quick drying",
            "highly absorbent",
            "machine washable",
            "super soft",
            "fade resistant",
            "lint free",
        ),
        {"color": COLORS, "pack": PACKS[:4]},
        (9.0, 60.0),
        ("turkish cotton", "bamboo", "microfiber", "egyptian cotton"),
    ),
    ProductType(
        "t-shirt",
        ("Clothing, Shoes & Jewelry", "Men", "Shirts"),
        (
            "machine washable",
            "short sleeve",
            "relaxed fit",
            "moisture wicking",
            "tagless",
            "crew neck",
        ),
        {"color": COLORS, "size": APPAREL_SIZES},
        (8.0, 40.0),
        ("cotton", "polyester blend", "jersey", "organic cotton"),
    ),
    ProductType(
        "hoodie",
        ("Clothing, Shoes & Jewelry", "Women", "Sweatshirts"),
        (
            "machine washable",
            "long sleeve",
            "drawstring hood",
            "kangaroo pocket",
            "relaxed fit",
            "fleece lined",
        ),
        {"color": COLORS, "size": APPAREL_SIZES},
        (18.0, 70.0),
        ("cotton", "french terry", "fleece", "polyester blend"),
    ),
    ProductType(
        "running shoes",
        ("Clothing, Shoes & Jewelry", "Women", "Shoes"),
        (
            "non slip",
            "lightweight",
            "breathable mesh",
            "arch support",
            "memory foam",
            "rubber sole",
        ),
        {"color": COLORS, "size": SHOE_SIZES},
        (30.0, 140.0),
        ("mesh", "knit", "synthetic", "leather"),
    ),
    ProductType(
        "face moisturizer",
        ("Beauty & Personal Care", "Skin Care", "Face"),
        (
            "fragrance free",
            "paraben free",
            "cruelty free",
            "non greasy",
            "long lasting",
            "dermatologist tested",
            "oil free",
        ),
        {
            "size": ("1.7 fl oz", "2.5 fl oz", "3.4 fl oz"),
            "scent": ("unscented", "lavender", "citrus", "rose"),
        },
        (8.0, 65.0),
        ("hyaluronic acid", "aloe vera", "shea butter", "vitamin c"),
    ),
    ProductType(
        "shampoo",
        ("Beauty & Personal Care", "Hair Care", "Shampoo & Conditioner"),
        (
            "sulfate free",
            "paraben free",
            "cruelty free",
            "color safe",
            "natural ingredients",
            "vegan",
        ),
        {
            "size": ("8 fl oz", "12 fl oz", "16 fl oz", "32 fl oz"),
            "scent": ("coconut", "mint", "argan", "unscented"),
        },
        (5.0, 40.0),
        ("argan oil", "tea tree", "keratin", "biotin"),
    ),
    ProductType(
        "wireless earbuds",
        ("Electronics", "Headphones", "Earbuds"),
        (
            "noise cancelling",
            "water resistant",
            "fast charging",
            "long battery life",
            "hands free",
            "touch control",
        ),
        {"color": ("black", "white", "navy blue", "pink", "charcoal grey")},
        (15.0, 180.0),
        ("bluetooth 5.3", "silicone", "aluminum", "abs plastic"),
    ),
    ProductType(
        "phone case",
        ("Electronics", "Cell Phones & Accessories", "Cases"),
        (
            "shockproof",
            "slim fit",
            "wireless charging compatible",
            "scratch resistant",
            "easy install",
            "raised edges",
        ),
        {"color": COLORS, "size": ("iphone 14", "iphone 15", "galaxy s23", "pixel 8")},
        (6.0, 45.0),
        ("silicone", "tpu", "polycarbonate", "leather"),
    ),
    ProductType(
        "usb c charger",
        ("Electronics", "Power Accessories", "Chargers"),
        (
            "fast charging",
            "foldable plug",
            "overheat protection",
            "compact design",
            "universal compatible",
        ),
        {"color": ("black", "white"), "pack": PACKS[:3]},
        (9.0, 55.0),
        ("gan", "abs plastic", "fire retardant pc", "braided nylon"),
    ),
    ProductType(
        "protein bar",
        ("Grocery & Gourmet Food", "Snacks", "Nutrition Bars"),
        (
            "gluten free",
            "low sugar",
            "high protein",
            "non gmo",
            "keto friendly",
            "low carb",
            "plant based",
        ),
        {
            "flavor": (
                "chocolate peanut butter",
                "cookie dough",
                "salted caramel",
                "vanilla almond",
                "blueberry",
            ),
            "pack": PACKS[1:],
        },
        (10.0, 48.0),
        ("whey", "pea protein", "almond butter", "oats"),
    ),
    ProductType(
        "green tea",
        ("Grocery & Gourmet Food", "Beverages", "Tea"),
        (
            "organic",
            "caffeine free",
            "non gmo",
            "sugar free",
            "individually wrapped",
            "kosher certified",
        ),
        {"flavor": ("jasmine", "matcha", "lemon ginger", "mint", "original"), "pack": PACKS[:4]},
        (4.0, 30.0),
        ("loose leaf", "tea bags", "sencha", "gunpowder"),
    ),
    ProductType(
        "yoga mat",
        ("Sports & Outdoors", "Exercise & Fitness", "Yoga"),
        ("non slip", "extra thick", "eco friendly", "easy clean", "lightweight", "carrying strap"),
        {"color": COLORS, "size": ("4 mm", "6 mm", "8 mm")},
        (14.0, 90.0),
        ("tpe", "natural rubber", "pvc", "cork"),
    ),
    ProductType(
        "water bottle",
        ("Sports & Outdoors", "Outdoor Recreation", "Hydration"),
        (
            "bpa free",
            "leak proof",
            "dishwasher safe",
            "vacuum insulated",
            "wide mouth",
            "lightweight",
        ),
        {"color": COLORS, "capacity": ("12 oz", "18 oz", "24 oz", "32 oz", "40 oz")},
        (8.0, 50.0),
        ("stainless steel", "tritan", "glass", "aluminum"),
    ),
    ProductType(
        "dog bed",
        ("Pet Supplies", "Dogs", "Beds & Furniture"),
        ("machine washable", "orthopedic", "non slip", "waterproof", "removable cover", "calming"),
        {"color": COLORS, "size": ("small", "medium", "large", "x-large")},
        (18.0, 120.0),
        ("memory foam", "plush", "faux fur", "canvas"),
    ),
)

BRANDS = (
    "Acorn & Pine",
    "Bluebay",
    "Corevia",
    "Driftwood Co",
    "Elmstone",
    "Fernhill",
    "Glowpoint",
    "Harbor Lane",
    "Ironleaf",
    "Juniper Works",
    "Kestrel",
    "Lumen & Loom",
    "Maplecrest",
    "Northwind",
    "Oakridge",
    "Pebble Bay",
    "Quillmark",
    "Riverstone",
    "Sagebrush",
    "Tidewater",
    "Upland",
    "Verdant",
    "Willowby",
    "Yarrow",
    "Zephyr",
)
QUALITY_WORDS = ("premium", "classic", "everyday", "deluxe", "essential", "modern", "signature")
REVIEW_TEMPLATES = (
    "Exactly what I wanted, the {attribute} part really holds up.",
    "Good {name} for the price. {Attribute} as described.",
    "Bought two of these. {Attribute} and nice {material}.",
    "Not bad, but the {material} feels thinner than I expected.",
    "Five stars, {attribute} and arrived quickly.",
)
