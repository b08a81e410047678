"""Drawing a Sudoku grid as text, with row and column numbers and box borders.

Example:
    >>> from environments.sudoku.solver import Shape
    >>> print(render_grid(Shape(2, 2), [1, 0, 3, 4, 3, 4, 0, 2, 2, 1, 4, 3, 4, 3, 2, 0]))
        1 2   3 4
      +-----+-----+
    1 | 1 . | 3 4 |
    2 | 3 4 | . 2 |
      +-----+-----+
    3 | 2 1 | 4 3 |
    4 | 4 3 | 2 . |
      +-----+-----+
"""

from __future__ import annotations

from collections.abc import Sequence

from environments.sudoku.solver import Shape

EMPTY = "."


def render_grid(shape: Shape, grid: Sequence[int]) -> str:
    """The grid as text: ``.`` for an empty cell, numbered rows and columns, boxes bordered."""
    side, height, width = shape.side, shape.box_height, shape.box_width
    boxes_across = side // width
    border = "  +" + "+".join(["-" * (2 * width + 1)] * boxes_across) + "+"
    header = "   " + "  ".join(
        " " + " ".join(str(c + 1) for c in range(start, start + width))
        for start in range(0, side, width)
    )
    lines = [header.rstrip(), border]
    for r in range(side):
        cells = [str(grid[r * side + c]) if grid[r * side + c] else EMPTY for c in range(side)]
        groups = [" ".join(cells[start : start + width]) for start in range(0, side, width)]
        lines.append(f"{r + 1} | " + " | ".join(groups) + " |")
        if (r + 1) % height == 0:
            lines.append(border)
    return "\n".join(lines)
