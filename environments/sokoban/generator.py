"""Seeded generator of solvable Sokoban puzzles of a chosen difficulty.

1. Carve a room: a random walk through a board of walls, widened here and there, until half
   the inside is floor.
2. Put every box on a target.
3. Search backwards, breadth first, from every solved position (boxes on targets, the player on
   any free cell): a backward step either walks the player or pulls the box behind it. Each
   backward step undoes one forward move, so a position found at depth ``k`` is solvable, and
   its optimal plan has exactly ``k`` moves.
4. Draw the difficulty ``k`` uniformly from ``[min_solution_length, max_solution_length]`` and
   pick a position at depth ``k`` with every box off the targets (the deepest such one if the
   room has none that deep).

Every random choice comes from the ``rng`` passed in, so a seed fixes the puzzle.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from environments.sokoban.puzzle import Puzzle, offsets

State = tuple[int, tuple[int, ...]]
_STEPS = ((-1, 0), (1, 0), (0, -1), (0, 1))


@dataclass(frozen=True)
class GeneratedPuzzle:
    """A puzzle, the length of its optimal plan, and how many rooms it took to find."""

    puzzle: Puzzle
    optimal_plan_length: int
    attempts: int


def carve_room(rng: random.Random, height: int, width: int, min_floor: int) -> bytearray:
    """A connected room of at least ``min_floor`` cells: ``walls[cell]`` is 0 on floor, 1 on wall.

    A random walk carves the floor, turning now and then and widening the corridor sideways.
    """
    walls = bytearray(b"\x01" * (height * width))
    row, col = rng.randrange(1, height - 1), rng.randrange(1, width - 1)
    dr, dc = rng.choice(_STEPS)
    walls[row * width + col] = 0
    floor = 1
    while floor < min_floor:
        if rng.random() < 0.35:
            dr, dc = rng.choice(_STEPS)
        row = min(max(row + dr, 1), height - 2)
        col = min(max(col + dc, 1), width - 2)
        cells = [row * width + col]
        if rng.random() < 0.5:  # widen the corridor sideways, so boxes have room to move
            side_row = min(max(row + dc, 1), height - 2)
            side_col = min(max(col + dr, 1), width - 2)
            cells.append(side_row * width + side_col)
        for cell in cells:
            if walls[cell]:
                walls[cell] = 0
                floor += 1
    return walls


def backward_levels(
    walls: bytes, width: int, targets: tuple[int, ...], depth: int
) -> list[list[State]]:
    """Positions grouped by their optimal distance to a solved position, up to ``depth``.

    ``levels[k]`` holds every position whose optimal plan has exactly ``k`` moves.
    """
    deltas = offsets(width)
    solved = [
        (cell, targets) for cell, wall in enumerate(walls) if not wall and cell not in targets
    ]
    seen = set(solved)
    levels = [solved]
    for _ in range(depth):
        found = []
        for player, boxes in levels[-1]:
            for d in deltas:
                to = player + d
                if walls[to] or to in boxes:
                    continue
                walked = (to, boxes)
                if walked not in seen:
                    seen.add(walked)
                    found.append(walked)
                pulled_from = player - d
                if pulled_from in boxes:
                    pulled = (to, tuple(sorted([player if b == pulled_from else b for b in boxes])))
                    if pulled not in seen:
                        seen.add(pulled)
                        found.append(pulled)
        if not found:
            break
        levels.append(found)
    return levels


def generate_puzzle(
    rng: random.Random,
    dim_room: tuple[int, int],
    num_boxes: int,
    *,
    min_solution_length: int = 1,
    max_solution_length: int = 10,
    max_attempts: int = 1000,
) -> GeneratedPuzzle:
    """Generates a puzzle whose optimal plan length lies in the given bounds.

    Args:
        rng: the source of every random choice.
        dim_room: ``(height, width)`` including the outer wall ring.
        num_boxes: boxes (and targets).
        min_solution_length: fewest moves the optimal plan may have (the difficulty knob).
        max_solution_length: most moves it may have.
        max_attempts: rooms to try before giving up.

    Raises:
        ValueError: the arguments cannot describe a puzzle.
        RuntimeError: no room of ``max_attempts`` had a position ``min_solution_length`` deep.
    """
    height, width = dim_room
    if num_boxes < 1:
        raise ValueError(f"num_boxes must be >= 1, got {num_boxes}")
    if height < 3 or width < 3 or (height - 2) * (width - 2) < num_boxes + 1:
        raise ValueError(f"dim_room={dim_room} has no room for {num_boxes} boxes and a player")
    if not 1 <= min_solution_length <= max_solution_length:
        raise ValueError(
            "need 1 <= min_solution_length <= max_solution_length, got "
            f"{min_solution_length} and {max_solution_length}"
        )
    # a room of a handful of cells makes a trivial corridor puzzle: carve half the board
    min_floor = max(num_boxes + 2, (height - 2) * (width - 2) // 2)
    for attempt in range(1, max_attempts + 1):
        walls = carve_room(rng, height, width, min_floor)
        floor = [cell for cell, wall in enumerate(walls) if not wall]
        targets = tuple(sorted(rng.sample(floor, num_boxes)))
        target_set = set(targets)
        wanted = rng.randint(min_solution_length, max_solution_length)
        levels = backward_levels(bytes(walls), width, targets, wanted)
        # every box must start off the targets, or a "2 box" level plays like a 1 box one
        for depth in range(len(levels) - 1, min_solution_length - 1, -1):
            candidates = [s for s in levels[depth] if not set(s[1]) & target_set]
            if candidates:
                player, boxes = rng.choice(candidates)
                puzzle = Puzzle(height, width, bytes(walls), targets, boxes, player)
                return GeneratedPuzzle(puzzle, depth, attempt)
    raise RuntimeError(
        f"no {dim_room} room with {num_boxes} boxes had a puzzle needing "
        f"{min_solution_length} moves in {max_attempts} attempts; lower min_solution_length"
    )
