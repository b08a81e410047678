"""A Sokoban position told in words, from the player's point of view.

``SokobanEnv(observation="relative")`` shows this instead of the board: what lies one step
in each direction, where each box off a target is from the player, and where the nearest free
target is from that box. It is the same position, drawn differently (nothing is planned or
searched: every figure is a difference of two coordinates), for agents that cannot yet read a
grid, as BabyAI and TextWorld describe a scene rather than draw it.

Example:
    >>> from environments.sokoban.puzzle import Puzzle
    >>> print(describe(Puzzle.from_text("######\\n#P_X_#\\n#___O#\\n######")))
    Up: wall. Down: floor. Left: wall. Right: floor.
    Box: 2 right.
    Target: 1 down, 1 right of the box.
"""

from __future__ import annotations

from environments.sokoban.puzzle import ACTION_NAMES, Puzzle, offsets


def describe(puzzle: Puzzle) -> str:
    """The position in three kinds of line: the player's four neighbours, then for each box
    still off a target, its offset from the player and the nearest free target's from it."""
    width = puzzle.width
    boxes, targets = set(puzzle.boxes), set(puzzle.targets)
    neighbours = []
    for name, delta in zip(ACTION_NAMES, offsets(width), strict=True):
        cell = puzzle.player + delta
        neighbours.append(f"{name}: {_cell_word(cell, puzzle.walls, boxes, targets)}.")
    lines = [" ".join(neighbours)]
    free_targets = sorted(targets - boxes)
    loose_boxes = sorted(boxes - targets)
    numbered = len(loose_boxes) > 1
    for number, box in enumerate(loose_boxes, start=1):
        label = f"Box {number}" if numbered else "Box"
        lines.append(f"{label}: {_offset(puzzle.player, box, width)}.")
        target = min(free_targets, key=lambda t: (_distance(box, t, width), t))
        lines.append(f"Target: {_offset(box, target, width)} of the {label.lower()}.")
    return "\n".join(lines)


def _cell_word(cell: int, walls: bytes, boxes: set[int], targets: set[int]) -> str:
    if walls[cell]:
        return "wall"
    if cell in boxes:
        return "box on target" if cell in targets else "box"
    return "target" if cell in targets else "floor"


def _offset(origin: int, cell: int, width: int) -> str:
    """``"2 down, 1 left"``: the steps from ``origin`` to ``cell``, rows first."""
    (from_row, from_col), (to_row, to_col) = divmod(origin, width), divmod(cell, width)
    rows, cols = to_row - from_row, to_col - from_col
    parts = []
    if rows:
        parts.append(f"{abs(rows)} {'down' if rows > 0 else 'up'}")
    if cols:
        parts.append(f"{abs(cols)} {'right' if cols > 0 else 'left'}")
    return ", ".join(parts) or "here"


def _distance(a: int, b: int, width: int) -> int:
    (ar, ac), (br, bc) = divmod(a, width), divmod(b, width)
    return abs(ar - br) + abs(ac - bc)
