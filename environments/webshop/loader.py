"""Reads WebShop's own data files (Yao et al., 2022) into a ``Catalog`` and its goals.

Give it the folder holding the files of WebShop's ``setup.sh`` download:

* ``items_shuffle*.json``: the products (a list of dicts with ``asin``, ``name``,
  ``product_category``, ``query``, ``pricing``, ``customization_options``,
  ``full_description``, ``small_description``, ``average_rating``);
* ``items_ins_v2*.json``: per asin, the product's ``attributes`` and a synthetic
  ``instruction`` with its ``instruction_attributes`` (and ``instruction_options`` if any);
* ``items_human_ins.json`` (optional): per asin, a list of human-written instructions with
  ``instruction``, ``instruction_attributes`` and ``instruction_options``.

Goals come from the human instructions when that file is there (``goal_source="human"``), else
from the synthetic ones. Price ceilings are drawn from the price ladder above the product's price
with a fixed seed per goal, as WebShop draws them at random. Products and fields that cannot be
read are skipped, never guessed.

Example:
    >>> import json, pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "items_shuffle_1000.json").write_text(json.dumps([{"asin": "B01ABCDEFG",
    ...     "name": "Red Mug", "query": "mug", "product_category": "Home › Kitchen",
    ...     "pricing": "$9.99", "customization_options": {"color": [{"value": "Red"}]}}]))
    >>> _ = (folder / "items_ins_v2_1000.json").write_text(json.dumps({"B01ABCDEFG": {
    ...     "attributes": ["lead free"], "instruction": "i need a red mug",
    ...     "instruction_attributes": ["lead free"]}}))
    >>> catalog, goals = load_webshop(folder)
    >>> catalog[0].options, catalog[0].price, goals[0].price_upper in (10.0, 20.0, 30.0)
    ((('color', ('red',)),), 9.99, True)
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

from environments.webshop.catalog import Catalog, Product
from environments.webshop.instructions import PRICE_LADDER, Goal

_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _first(folder: Path, pattern: str) -> Path | None:
    matches = sorted(folder.glob(pattern))
    return matches[0] if matches else None


def _price(pricing: Any) -> float | None:
    if isinstance(pricing, list):
        pricing = " ".join(str(p) for p in pricing)
    numbers = _NUMBER.findall(str(pricing or "").replace(",", ""))
    return float(numbers[0]) if numbers else None


def _text_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    if isinstance(value, list):
        return tuple(str(v) for v in value if str(v).strip())
    return ()


def _options(raw: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(raw, dict):
        return ()
    options = []
    for name, contents in raw.items():
        values = []
        for item in contents or []:
            value = item.get("value") if isinstance(item, dict) else item
            value = " ".join(str(value or "").replace("/", " | ").split()).lower()
            if value and value not in values:
                values.append(value)
        if values:
            options.append((str(name).lower(), tuple(values)))
    return tuple(options)


def _product(raw: dict[str, Any], info: dict[str, Any]) -> Product | None:
    asin = str(raw.get("asin", "")).upper()
    title = raw.get("name") or raw.get("Title")
    if not asin or asin == "NAN" or len(asin) > 10 or not title:
        return None
    price = _price(raw.get("pricing"))
    category = tuple(
        part.strip() for part in str(raw.get("product_category", "")).split("›") if part.strip()
    )
    rating = _price(raw.get("average_rating"))
    return Product(
        asin=asin,
        title=str(title),
        product_type=str(raw.get("query", "")).lower().strip()
        or (category[-1] if category else ""),
        category=category,
        price=price if price is not None else 100.0,
        attributes=tuple(str(a).lower() for a in info.get("attributes", []) or []),
        options=_options(raw.get("customization_options")),
        description=str(raw.get("full_description") or ""),
        bullets=_text_list(raw.get("small_description")),
        rating=rating if rating is not None else 0.0,
        reviews=(),
    )


def _goal(product: Product, entry: dict[str, Any], seed: int) -> Goal | None:
    text = str(entry.get("instruction") or "").strip().rstrip(".")
    if not text:
        return None
    ceilings = [p for p in PRICE_LADDER if p > product.price][:3] or [
        float(int(product.price * 1.5) + 1)
    ]
    price_upper = random.Random(seed).choice(ceilings)
    raw_options = entry.get("instruction_options") or []
    if isinstance(raw_options, dict):
        pairs = [(str(k).lower(), str(v).lower()) for k, v in raw_options.items()]
    else:
        pairs = []
        for value in raw_options:
            value = " ".join(str(value).split()).lower()
            pairs.append((product.option_dimension(value) or "option", value))
    return Goal(
        asin=product.asin,
        instruction=f"{text}, and price lower than {price_upper:.2f} dollars",
        product_type=product.product_type,
        category=product.category,
        attributes=tuple(str(a).lower() for a in entry.get("instruction_attributes", []) or []),
        options=tuple(pairs),
        price_upper=price_upper,
    )


def load_webshop(folder: str | Path, goal_source: str = "human") -> tuple[Catalog, list[Goal]]:
    """Loads WebShop's products and instructions from ``folder``.

    Args:
        folder: the folder holding ``items_shuffle*.json`` and ``items_ins_v2*.json``.
        goal_source: ``"human"`` (``items_human_ins.json``, when present) or ``"synthetic"``.

    Returns:
        The catalog (keyed by the folder) and the goals, in file order.

    Raises:
        FileNotFoundError: the products file is missing.
    """
    folder = Path(folder).expanduser()
    products_file = _first(folder, "items_shuffle*.json")
    if products_file is None:
        raise FileNotFoundError(f"no items_shuffle*.json in {folder} (WebShop's product file)")
    attributes_file = _first(folder, "items_ins_v2*.json")
    infos: dict[str, Any] = json.loads(attributes_file.read_text()) if attributes_file else {}
    products: dict[str, Product] = {}
    for raw in json.loads(products_file.read_text()):
        asin = str(raw.get("asin", "")).upper()
        product = _product(raw, infos.get(asin, {}) or {})
        if product is not None and product.asin not in products:
            products[product.asin] = product
    catalog = Catalog(list(products.values()), key=f"webshop:{folder.resolve()}")

    human_file = folder / "items_human_ins.json"
    entries: list[tuple[str, dict[str, Any]]] = []
    if goal_source == "human" and human_file.exists():
        for asin, items in json.loads(human_file.read_text()).items():
            entries += [(asin.upper(), item) for item in (items or []) if isinstance(item, dict)]
    else:
        entries = [(asin.upper(), info) for asin, info in infos.items() if isinstance(info, dict)]
    goals = []
    for number, (asin, entry) in enumerate(entries):
        product = products.get(asin)
        goal = _goal(product, entry, seed=number) if product else None
        if goal is not None:
            goals.append(goal)
    return catalog, goals
