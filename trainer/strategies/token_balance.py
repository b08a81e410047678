"""Splitting a batch across train workers so each gets about the same number of tokens.

A worker's update time grows with its tokens, not its sequences: an even split by count
leaves the worker with the long episodes last. Longest first, each sequence goes to the
worker with the fewest tokens so far (greedy LPT, within 4/3 of the best split).

With tensor parallelism, the consecutive workers of a group share one part
(:func:`split_for_workers`).

Example:
    >>> split_by_tokens([100, 10, 10, 10, 60, 30], parts=2)
    [[0, 2], [4, 5, 1, 3]]
    >>> split_for_workers([100, 10, 10, 10, 60, 30], workers=4, tensor_parallel=2)
    [[0, 2], [0, 2], [4, 5, 1, 3], [4, 5, 1, 3]]
"""

from __future__ import annotations

import heapq

__all__ = ["split_by_tokens", "split_for_workers"]


def split_by_tokens(lengths: list[int], parts: int) -> list[list[int]]:
    """Indices of ``lengths`` in ``parts`` groups of nearly equal total length.

    Args:
        lengths: tokens of each sequence.
        parts: number of groups (workers); a group may be empty when sequences are fewer.

    Returns:
        ``parts`` lists of indices; each list keeps its sequences longest first.
    """
    if parts < 1:
        raise ValueError(f"parts must be at least 1, got {parts}")
    loads = [(0, worker) for worker in range(parts)]
    groups: list[list[int]] = [[] for _ in range(parts)]
    for index in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        load, worker = heapq.heappop(loads)
        groups[worker].append(index)
        heapq.heappush(loads, (load + lengths[index], worker))
    return groups


def split_for_workers(
    lengths: list[int], workers: int, tensor_parallel: int = 1
) -> list[list[int]]:
    """Each worker's sequences: ``workers // tensor_parallel`` parts of nearly equal tokens,
    each given to the ``tensor_parallel`` consecutive workers of one group.

    Raises:
        ValueError: ``workers`` is not a multiple of ``tensor_parallel``.
    """
    if tensor_parallel < 1 or workers % tensor_parallel:
        raise ValueError(f"{workers} workers do not divide by tensor_parallel={tensor_parallel}")
    parts = split_by_tokens(lengths, workers // tensor_parallel)
    return [part for part in parts for _ in range(tensor_parallel)]
