"""Splitting a batch across train workers so each gets about the same number of tokens.

A worker's update time grows with its tokens, not its sequences: an even split by count
leaves the worker with the long episodes last. Longest first, each sequence goes to the
worker with the fewest tokens so far (greedy LPT, within 4/3 of the best split).

Example:
    >>> split_by_tokens([100, 10, 10, 10, 60, 30], parts=2)
    [[0, 2], [4, 5, 1, 3]]
"""

from __future__ import annotations

import heapq

__all__ = ["split_by_tokens"]


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
