"""The Sokoban board: walls, targets, boxes and player on a flat grid of ``height * width`` cells.

Cells are numbered ``row * width + col``; moving is adding an offset (``-width`` is up). The
outer ring of cells is always wall, so a neighbour of a non-wall cell is always on the board.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

ACTION_NAMES = ("Up", "Down", "Left", "Right")
#: symbols in the order wall, floor, target, box on target, box, player, player on target
DEFAULT_SYMBOLS = "#_O√XPS"
SYMBOL_MEANINGS = ("wall", "floor", "target", "box on target", "box", "player", "player on target")


def offsets(width: int) -> tuple[int, int, int, int]:
    """Cell offsets of the actions Up, Down, Left, Right."""
    return (-width, width, -1, 1)


def move(walls: bytes, boxes: Sequence[int], player: int, delta: int) -> tuple[int, int] | None:
    """Sokoban's one rule: the player steps by ``delta``, pushing the box there one cell on.

    The env, the solver and :func:`~environments.sokoban.solver.apply_plan` all move by it.

    Args:
        walls: ``walls[cell]`` is 1 for a wall.
        boxes: the boxes' cells.
        player: the player's cell.
        delta: the move's offset (one of :func:`offsets`).

    Returns:
        ``(to, box_to)``: the player's new cell and, if a box was pushed from ``to``, its new
        cell (``-1``: nothing pushed); ``None`` when the move is blocked (a wall, or a box
        against a wall or another box).

    Example:
        >>> walls = bytes([1, 1, 1, 1, 1,  1, 0, 0, 0, 1,  1, 1, 1, 1, 1])  # one row of 3
        >>> move(walls, boxes=[7], player=6, delta=1)  # push the box from 7 to 8
        (7, 8)
        >>> move(walls, boxes=[8], player=7, delta=1) is None  # the box is against the wall
        True
        >>> move(walls, boxes=[8], player=6, delta=1)  # a plain step
        (7, -1)
    """
    to = player + delta
    if walls[to]:
        return None
    if to in boxes:
        box_to = to + delta
        if walls[box_to] or box_to in boxes:
            return None
        return to, box_to
    return to, -1


@dataclass(frozen=True)
class Puzzle:
    """One Sokoban position.

    Attributes:
        height, width: board size, outer wall ring included.
        walls: ``walls[cell]`` is 1 for a wall, 0 for floor.
        targets: target cells, sorted.
        boxes: box cells, sorted.
        player: the player's cell.
    """

    height: int
    width: int
    walls: bytes
    targets: tuple[int, ...]
    boxes: tuple[int, ...]
    player: int

    @classmethod
    def from_text(cls, text: str, symbols: str = DEFAULT_SYMBOLS) -> Puzzle:
        """Reads a board drawn with ``symbols`` (the inverse of ``render``).

        Raises:
            ValueError: ragged rows, an unknown symbol, an open outer ring, no single player,
                or a box count that differs from the target count.
        """
        wall, floor, target, box_on_target, box, player, player_on_target = symbols
        rows = text.strip("\n").split("\n")
        height, width = len(rows), len(rows[0])
        if any(len(row) != width for row in rows):
            raise ValueError("Sokoban board rows must all have the same length")
        walls, targets, boxes, players = bytearray(), [], [], []
        for cell, char in enumerate("".join(rows)):
            if char not in symbols:
                raise ValueError(f"unknown Sokoban symbol {char!r}; expected one of {symbols!r}")
            walls.append(char == wall)
            if char in (target, box_on_target, player_on_target):
                targets.append(cell)
            if char in (box, box_on_target):
                boxes.append(cell)
            if char in (player, player_on_target):
                players.append(cell)
        ring = [
            r * width + c
            for r in range(height)
            for c in range(width)
            if r in (0, height - 1) or c in (0, width - 1)
        ]
        if not all(walls[cell] for cell in ring):
            raise ValueError("a Sokoban board must be enclosed by walls")
        if len(players) != 1:
            raise ValueError(f"a Sokoban board needs exactly one player, found {len(players)}")
        if not boxes or len(boxes) != len(targets):
            raise ValueError(
                f"a Sokoban board needs as many boxes as targets, found "
                f"{len(boxes)} boxes and {len(targets)} targets"
            )
        return cls(height, width, bytes(walls), tuple(targets), tuple(boxes), players[0])

    @property
    def solved(self) -> bool:
        return self.boxes == self.targets

    def render(self, symbols: str = DEFAULT_SYMBOLS) -> str:
        """The board as text, one line per row."""
        wall, floor, target, box_on_target, box, player, player_on_target = symbols
        width = self.width
        cells = [wall if w else floor for w in self.walls]
        for t in self.targets:
            cells[t] = target
        for b in self.boxes:
            cells[b] = box_on_target if cells[b] == target else box
        cells[self.player] = player_on_target if cells[self.player] == target else player
        return "\n".join("".join(cells[r * width : (r + 1) * width]) for r in range(self.height))


def pull_distances(walls: bytes, targets: tuple[int, ...], width: int) -> list[int | None]:
    """Fewest pushes that bring a lone box from each cell onto some target; ``None`` where no
    target can be reached (a dead cell: a corner, or a wall with no target along it).

    Found by pulling a box backwards from every target, breadth first: a box at ``cell`` came
    from ``cell - d``, pushed by a player standing at ``cell - 2d``.
    """
    distance: list[int | None] = [None] * len(walls)
    queue = deque(targets)
    for t in targets:
        distance[t] = 0
    while queue:
        cell = queue.popleft()
        for d in offsets(width):
            box_from = cell - d  # a box here, pushed by d, lands on `cell`
            pusher = box_from - d
            if distance[box_from] is None and not walls[box_from] and not walls[pusher]:
                distance[box_from] = distance[cell] + 1
                queue.append(box_from)
    return distance


def live_cells(walls: bytes, targets: tuple[int, ...], width: int) -> bytearray:
    """Cells from which a lone box can still be pushed onto some target.

    A box on any other cell is dead (stuck in a corner or against a wall away from targets),
    so the solver never pushes one there.
    """
    return bytearray(d is not None for d in pull_distances(walls, targets, width))
