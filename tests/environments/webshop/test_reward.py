"""WebShop's reward on hand-built products; every expected number is worked out in a comment."""

from __future__ import annotations

import dataclasses

import pytest

from environments.webshop.reward import attribute_matched, score, type_match
from tests.environments.webshop.helpers import BLANKET, BLANKET_GOAL, EARBUDS, MUG, PILLOW


def test_the_target_with_the_asked_options_scores_one():
    # type 1.0; attributes: "machine washable" is in the list, "lightweight" is in the
    # description -> 2 of 2; options red and queen chosen -> 2 of 2; price 25 <= 40 -> 1.
    # 1.0 * (2 + 2 + 1) / (2 + 2 + 1) = 1.0
    result = score(BLANKET_GOAL, BLANKET, {"color": "red", "size": "queen"})
    assert (result.attribute_matches, result.option_matches, result.price_ok) == (2, 2, True)
    assert result.reward == 1.0


def test_one_wrong_option_costs_one_fifth():
    # navy blue is not red: options 1 of 2 -> (2 + 1 + 1) / 5 = 0.8
    assert score(BLANKET_GOAL, BLANKET, {"color": "navy blue", "size": "queen"}).reward == 0.8


def test_no_options_chosen():
    # (2 + 0 + 1) / 5 = 0.6
    assert score(BLANKET_GOAL, BLANKET, {}).reward == pytest.approx(0.6)


def test_over_the_price_ceiling():
    # the same blanket at 55 dollars: price not ok -> (2 + 2 + 0) / 5 = 0.8
    dear = dataclasses.replace(BLANKET, price=55.0)
    assert score(BLANKET_GOAL, dear, {"color": "red", "size": "queen"}).reward == 0.8


def test_a_missing_attribute():
    # no "lightweight" anywhere: attributes 1 of 2, options none, price ok -> (1 + 0 + 1) / 5
    plain = dataclasses.replace(BLANKET, description="A fleece blanket.")
    assert score(BLANKET_GOAL, plain, {}).reward == pytest.approx(0.4)


def test_other_kind_in_the_same_category_path_is_halved():
    # bed pillow, same path: type 0.5. attributes: neither phrase -> 0; option queen chosen -> 1
    # of 2 (red is not an option); price 45 > 40 -> 0. 0.5 * (0 + 1 + 0) / 5 = 0.1
    assert type_match(BLANKET_GOAL, PILLOW) == 0.5
    assert score(BLANKET_GOAL, PILLOW, {"size": "queen"}).reward == pytest.approx(0.1)


def test_same_top_level_category_only_gets_a_tenth():
    # coffee mug, Home & Kitchen but another path: type 0.1. red chosen -> 1 option; price 9 ok.
    # 0.1 * (0 + 1 + 1) / 5 = 0.04
    assert type_match(BLANKET_GOAL, MUG) == 0.1
    assert score(BLANKET_GOAL, MUG, {"color": "red"}).reward == pytest.approx(0.04)


def test_another_department_scores_zero():
    # Electronics: type 0.0, so the reward is 0 whatever else matches
    assert type_match(BLANKET_GOAL, EARBUDS) == 0.0
    assert score(BLANKET_GOAL, EARBUDS, {"color": "red"}).reward == 0.0


def test_fuzzy_matching_ignores_case_punctuation_and_word_order():
    # "Machine-Washable" and "washable machine" are the same words; "machine wash" is not
    # (token_sort_ratio of "machine wash" vs "machine washable" is 2*12/28 = 85.7 -> a match,
    # while "washable" alone against "machine washable" is 2*8/24 = 66.7 -> no match)
    odd = dataclasses.replace(
        BLANKET, attributes=("Machine-Washable",), title="T", description="", bullets=()
    )
    assert attribute_matched("machine washable", odd)
    assert attribute_matched("washable machine", odd)
    assert attribute_matched("machine wash", odd)
    assert not attribute_matched("washable", odd)


def test_fuzzy_option_match_does_not_confuse_blue_with_navy_blue():
    # token_sort_ratio("blue", "navy blue") = 2*4/13 = 61.5 < 85 -> not a match:
    # goal asks color blue and size queen; chosen navy blue and queen -> options 1 of 2.
    # (2 + 1 + 1) / 5 = 0.8
    goal = dataclasses.replace(BLANKET_GOAL, options=(("color", "blue"), ("size", "queen")))
    assert score(goal, BLANKET, {"color": "navy blue", "size": "queen"}).reward == 0.8


def test_sizes_match_exactly_as_in_webshop():
    # token_sort_ratio("x-large", "xx-large") is 93 (a fuzzy match), but WebShop matches the
    # size dimension exactly: goal red + xx-large, chosen red + x-large -> options 1 of 2;
    # attributes 2 of 2, price ok -> (2 + 1 + 1) / 5 = 0.8
    shirt_sizes = dataclasses.replace(
        BLANKET, options=(("color", ("red",)), ("size", ("x-large", "xx-large")))
    )
    goal = dataclasses.replace(BLANKET_GOAL, options=(("color", "red"), ("size", "xx-large")))
    assert score(goal, shirt_sizes, {"color": "red", "size": "x-large"}).reward == 0.8
    # case and punctuation still do not matter: "XX Large" is "xx-large" -> 5 / 5
    assert score(goal, shirt_sizes, {"color": "red", "size": "XX Large"}).reward == 1.0
