"""How a query's rows are compared with the gold query's."""

from __future__ import annotations

from environments.text_to_sql.results import same_result


def test_column_order_and_row_order_do_not_matter_unless_asked():
    gold = [("Oslo", 2), ("Lima", 1)]
    assert same_result(gold, [(1, "Lima"), (2, "Oslo")], ordered=False)
    assert same_result(gold, [("Oslo", 2), ("Lima", 1)], ordered=True)
    assert same_result(gold, [(2, "Oslo"), (1, "Lima")], ordered=True)
    assert not same_result(gold, [("Lima", 1), ("Oslo", 2)], ordered=True)


def test_rows_compare_as_a_multiset():
    assert not same_result([(1,), (1,)], [(1,)], ordered=False)
    assert not same_result([(1,), (2,)], [(1,), (1,)], ordered=False)
    assert same_result([(1,), (1,), (2,)], [(2,), (1,), (1,)], ordered=False)


def test_extra_or_missing_columns_fail():
    assert not same_result([("Ana",)], [("Ana", 3)], ordered=False)
    assert not same_result([("Ana", 3)], [("Ana",)], ordered=False)


def test_numbers_compare_after_rounding_and_across_types():
    assert same_result([(2.5,)], [(2.5000000001,)], ordered=False)
    assert same_result([(3,)], [(3.0,)], ordered=False)
    assert not same_result([(2.5,)], [(2.51,)], ordered=False)
    assert not same_result([("3",)], [(3,)], ordered=False)


def test_columns_are_permuted_together_not_per_row():
    # each row of the reply swapped differently: no single column order matches
    gold = [("a", "b"), ("c", "d")]
    assert not same_result(gold, [("a", "b"), ("d", "c")], ordered=False)


def test_empty_results():
    assert same_result([], [], ordered=False)
    assert not same_result([], [(None,)], ordered=False)
