"""The catalog generator, instructions made from it, WebShop's file loader and the search."""

from __future__ import annotations

import json
import random

import pytest

import rollenv
from environments.webshop.catalog import cached_catalog, generate_catalog
from environments.webshop.deps import INSTALL_HINT, MissingExtraError, require
from environments.webshop.instructions import make_goal
from environments.webshop.loader import load_webshop
from environments.webshop.reward import score
from environments.webshop.search import index_for
from rollenv.policies import oracle_for, run_episode


def test_generated_catalog_is_seeded_varied_and_complete():
    catalog = cached_catalog()
    assert len(catalog) == 1000
    assert [p.asin for p in generate_catalog(1000, seed=0)] == [p.asin for p in catalog]
    assert [p.asin for p in generate_catalog(50, seed=1)] != [p.asin for p in catalog[:50]]
    assert len({p.category[0] for p in catalog}) >= 5
    assert len({p.asin for p in catalog}) == 1000
    for product in catalog:
        assert product.title and product.description and product.bullets and product.reviews
        assert len(product.category) == 3 and product.price > 0 and product.attributes
        assert product.options and all(values for _, values in product.options)
        # an option label names one option: no value repeats across dimensions
        assert len(set(product.option_values)) == len(product.option_values)


def test_every_generated_goal_is_met_by_its_own_target():
    catalog = cached_catalog()
    for number, product in enumerate(catalog[:300]):
        goal = make_goal(product, random.Random(number))
        assert goal.price_upper > product.price
        assert goal.instruction.endswith(f"price lower than {goal.price_upper:.2f} dollars")
        for _, value in goal.options:
            assert value in goal.instruction
        assert score(goal, product, dict(goal.options)).reward == 1.0


def test_search_finds_a_product_by_its_title_among_the_first_ten():
    catalog = cached_catalog()
    index = index_for(catalog)
    assert index is index_for(catalog), "built once per process"
    misses = [p.asin for p in catalog[:200] if p.asin not in index.search(p.title)[:10]]
    assert misses == []
    hits = index.search("throw blanket")
    assert 0 < len(hits) <= 50
    assert all(catalog.get(a).product_type == "throw blanket" for a in hits[:10])


def test_missing_extra_names_the_install_command():
    with pytest.raises(
        MissingExtraError, match=INSTALL_HINT.replace("[", r"\[").replace("]", r"\]")
    ):
        require("a_module_that_does_not_exist_anywhere")


def _write_webshop_files(folder):
    products = [
        {
            "asin": "B000000001",
            "name": "Cozy Red Throw Blanket",
            "query": "throw blanket",
            "product_category": "Home & Kitchen › Bedding › Throws",
            "pricing": "$19.99",
            "customization_options": {
                "Color": [{"value": "Red", "image": None}, {"value": "Navy/Blue"}],
                "Size": [{"value": "Queen"}],
            },
            "full_description": "A soft blanket.",
            "small_description": ["Machine washable", "Fleece"],
            "average_rating": "4.5 out of 5 stars",
        },
        {
            "asin": "B000000002",
            "name": "Steel Coffee Mug",
            "query": "coffee mug",
            "product_category": "Home & Kitchen › Kitchen › Mugs",
            "pricing": "$5.00 - $9.00",
            "customization_options": {},
        },
        {"asin": "nan", "name": "broken row"},
    ]
    attributes = {
        "B000000001": {
            "attributes": ["machine washable", "soft"],
            "instruction": "i want a machine washable throw blanket",
            "instruction_attributes": ["machine washable"],
        },
        "B000000002": {
            "attributes": ["dishwasher safe"],
            "instruction": "i want a dishwasher safe mug",
            "instruction_attributes": ["dishwasher safe"],
        },
    }
    human = {
        "B000000001": [
            {
                "asin": "B000000001",
                "instruction": "i need a red washable blanket in queen size.",
                "instruction_attributes": ["machine washable"],
                "instruction_options": ["red", "queen"],
            }
        ]
    }
    (folder / "items_shuffle_1000.json").write_text(json.dumps(products))
    (folder / "items_ins_v2_1000.json").write_text(json.dumps(attributes))
    (folder / "items_human_ins.json").write_text(json.dumps(human))


def test_loader_reads_webshop_files(tmp_path):
    _write_webshop_files(tmp_path)
    catalog, goals = load_webshop(tmp_path)
    assert [p.asin for p in catalog] == ["B000000001", "B000000002"]  # the "nan" row is skipped
    blanket = catalog.get("B000000001")
    assert blanket.options == (("color", ("red", "navy | blue")), ("size", ("queen",)))
    assert blanket.category == ("Home & Kitchen", "Bedding", "Throws")
    assert (blanket.price, blanket.rating) == (19.99, 4.5)
    assert catalog.get("B000000002").price == 5.0  # the low end of a price range
    [goal] = goals  # human instructions win when the file is there
    assert goal.options == (("color", "red"), ("size", "queen"))
    assert goal.instruction.startswith("i need a red washable blanket in queen size, and price")
    _, synthetic = load_webshop(tmp_path, goal_source="synthetic")
    assert [g.asin for g in synthetic] == ["B000000001", "B000000002"]


def test_env_plays_webshop_files(tmp_path):
    _write_webshop_files(tmp_path)
    env = rollenv.make("WebShop-v0", data_path=str(tmp_path))
    result = run_episode(env, oracle_for(env), seed=0)
    assert result.success and result.total_reward == 1.0


def test_a_built_index_is_kept_on_disk_and_loaded_by_the_next_process(tmp_path, monkeypatch):
    from environments.webshop.search import SearchIndex, index_cache_root

    monkeypatch.setenv("ROLLENV_CACHE", str(tmp_path))
    catalog = generate_catalog(300, seed=4)
    built = SearchIndex(catalog)
    loaded = SearchIndex(catalog)
    assert (built.loaded_from_cache, loaded.loaded_from_cache) == (False, True)
    queries = [p.title for p in catalog[:40]] + ["red blanket", "no such words zzz"]
    assert [loaded.search(q) for q in queries] == [built.search(q) for q in queries]
    other = SearchIndex(generate_catalog(300, seed=5))
    assert not other.loaded_from_cache  # another catalog is another index
    assert len(list(index_cache_root().iterdir())) == 2


def test_a_half_written_index_folder_is_never_loaded(tmp_path, monkeypatch):
    from environments.webshop.search import SearchIndex, index_cache_root

    monkeypatch.setenv("ROLLENV_CACHE", str(tmp_path))
    catalog = generate_catalog(200, seed=6)
    SearchIndex(catalog)
    [folder] = index_cache_root().iterdir()
    (folder / "rollenv-vocab.json").unlink()  # as a crash before the last file would leave it
    assert not SearchIndex(catalog).loaded_from_cache


def test_an_unwritable_cache_still_gives_an_index(tmp_path, monkeypatch):
    from environments.webshop.search import SearchIndex

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setenv("ROLLENV_CACHE", str(blocker))
    catalog = generate_catalog(200, seed=7)
    index = SearchIndex(catalog)
    assert catalog[3].asin in index.search(catalog[3].title)[:10]
