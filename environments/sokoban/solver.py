"""Breadth-first Sokoban solver: the fewest player moves that put every box on a target.

States are ``(player, sorted boxes)``. Pushing a box onto a dead cell (see
``puzzle.live_cells``) is never tried: no solution passes through one, so the plan found is
still optimal. ``max_moves`` bounds the search depth.

Example:
    >>> from environments.sokoban.generator import generate_puzzle
    >>> import random
    >>> puzzle = generate_puzzle(random.Random(0), (6, 6), num_boxes=1).puzzle
    >>> plan = solve(puzzle)
    >>> apply_plan(puzzle, plan).solved
    True
"""

from __future__ import annotations

from dataclasses import replace

from environments.sokoban.puzzle import Puzzle, live_cells, move, offsets

State = tuple[int, tuple[int, ...]]


def solve(puzzle: Puzzle, max_moves: int | None = None) -> list[int] | None:
    """Returns an optimal plan (action indices into ``ACTION_NAMES``), or ``None``.

    ``None`` means no solution of at most ``max_moves`` moves exists (or none at all).
    """
    goal = puzzle.targets
    if puzzle.boxes == goal:
        return []
    walls = puzzle.walls
    live = live_cells(walls, goal, puzzle.width)
    moves = tuple(enumerate(offsets(puzzle.width)))
    start: State = (puzzle.player, puzzle.boxes)
    parent: dict[State, tuple[State, int] | None] = {start: None}
    frontier = [start]
    depth = 0
    while frontier and (max_moves is None or depth < max_moves):
        depth += 1
        next_frontier = []
        for state in frontier:
            player, boxes = state
            for action, d in moves:
                moved = move(walls, boxes, player, d)
                if moved is None:
                    continue
                to, box_to = moved
                if box_to >= 0:
                    if not live[box_to]:  # a box pushed onto a dead cell never reaches a target
                        continue
                    new_boxes = tuple(sorted([box_to if b == to else b for b in boxes]))
                    child = (to, new_boxes)
                    if child in parent:
                        continue
                    parent[child] = (state, action)
                    if new_boxes == goal:
                        return _plan_to(child, parent)
                else:
                    child = (to, boxes)
                    if child in parent:
                        continue
                    parent[child] = (state, action)
                next_frontier.append(child)
        frontier = next_frontier
    return None


def _plan_to(state: State, parent: dict[State, tuple[State, int] | None]) -> list[int]:
    plan = []
    link = parent[state]
    while link is not None:
        state, action = link
        plan.append(action)
        link = parent[state]
    plan.reverse()
    return plan


def apply_plan(puzzle: Puzzle, plan: list[int]) -> Puzzle:
    """Plays ``plan`` from ``puzzle`` (blocked moves are no-ops) and returns the position."""
    player, boxes = puzzle.player, list(puzzle.boxes)
    deltas = offsets(puzzle.width)
    for action in plan:
        moved = move(puzzle.walls, boxes, player, deltas[action])
        if moved is None:
            continue
        player, box_to = moved
        if box_to >= 0:
            boxes[boxes.index(player)] = box_to
    return replace(puzzle, player=player, boxes=tuple(sorted(boxes)))
