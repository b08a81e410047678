"""Splitting a batch across train workers: by tokens, and shared within tensor-parallel groups."""

from __future__ import annotations

import pytest

from trainer.strategies.token_balance import split_by_tokens, split_for_workers

LENGTHS = [120, 7, 64, 64, 3, 90, 33, 12, 250, 40, 18]


@pytest.mark.parametrize("parts", [1, 2, 3, 4])
def test_every_sequence_goes_to_exactly_one_part_and_the_loads_are_close(parts):
    groups = split_by_tokens(LENGTHS, parts)
    assert sorted(i for group in groups for i in group) == list(range(len(LENGTHS)))
    loads = [sum(LENGTHS[i] for i in group) for group in groups]
    # greedy longest-first: no part exceeds the lightest by more than the longest sequence
    assert max(loads) - min(loads) <= max(LENGTHS)


@pytest.mark.parametrize(("workers", "tensor_parallel"), [(2, 2), (4, 2), (6, 3), (4, 1)])
def test_tensor_parallel_workers_of_a_group_share_one_part(workers, tensor_parallel):
    parts = split_for_workers(LENGTHS, workers, tensor_parallel)
    assert len(parts) == workers
    groups = [parts[g : g + tensor_parallel] for g in range(0, workers, tensor_parallel)]
    assert all(all(part == group[0] for part in group) for group in groups)
    assert [group[0] for group in groups] == split_by_tokens(LENGTHS, workers // tensor_parallel)


def test_workers_that_do_not_divide_into_groups_are_refused():
    with pytest.raises(ValueError, match="3 workers do not divide by tensor_parallel=2"):
        split_for_workers(LENGTHS, 3, 2)
