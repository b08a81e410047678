"""The agent's view in MiniGrid, as text: what it sees, where, relative to itself.

MiniGrid's symbolic observation (``gen_obs()["image"]``, never pixels) is the agent's egocentric
view, ``view[x, y] = (object, colour, state)`` with the agent at the bottom middle looking up:
``x - centre`` is how far right a cell is, ``bottom - y`` how far forward. ``describe_view``
turns it into lines such as ``a red ball 2 steps forward and 1 step left``. Walls would flood
the text (a room's walls fill most of a view), so only the nearest wall straight ahead, left and
right is given: enough to know how far one can walk.

Example:
    >>> import numpy as np
    >>> view = np.zeros((7, 7, 3), dtype=np.uint8)
    >>> view[:, :] = (1, 0, 0)  # empty floor
    >>> view[:, 2] = (2, 5, 0)  # a wall across, four rows ahead
    >>> view[2, 4] = (6, 0, 0)  # a red ball two ahead, one to the left
    >>> print("\\n".join(describe_view(view)))
    a red ball 2 steps forward and 1 step left
    a wall 4 steps forward
"""

from __future__ import annotations

import numpy as np
from minigrid.core.constants import IDX_TO_COLOR, IDX_TO_OBJECT

_DOOR_STATES = {0: "open", 1: "closed", 2: "locked"}
_NOT_LISTED = {"unseen", "empty", "wall", "floor", "agent"}


def _steps(count: int, word: str) -> str:
    return f"{count} step{'' if count == 1 else 's'} {word}"


def relative_position(forward: int, right: int) -> str:
    """``2 steps forward and 1 step left``; ``right`` is negative to the left."""
    parts = []
    if forward:
        parts.append(_steps(forward, "forward"))
    if right:
        parts.append(_steps(abs(right), "right" if right > 0 else "left"))
    return " and ".join(parts) if parts else "here"


def name_of(cell: np.ndarray) -> str:
    """An encoded cell as words: ``a red ball``, ``a locked blue door``, ``a wall``."""
    kind = IDX_TO_OBJECT[int(cell[0])]
    colour = IDX_TO_COLOR[int(cell[1])]
    if kind == "door":
        return f"a {_DOOR_STATES[int(cell[2])]} {colour} door"
    if kind in ("wall", "empty", "unseen", "lava"):
        return {"empty": "nothing", "unseen": "something you cannot see"}.get(kind, f"a {kind}")
    return f"a {colour} {kind}"


def describe_view(view: np.ndarray) -> list[str]:
    """One line per object in view (nearest first), then the nearest walls ahead, left, right."""
    width, height = view.shape[0], view.shape[1]
    centre, bottom = width // 2, height - 1
    objects = []
    for x in range(width):
        for y in range(height):
            if (x, y) == (centre, bottom):
                continue  # the agent's own cell shows what it carries
            kind = IDX_TO_OBJECT[int(view[x, y, 0])]
            if kind not in _NOT_LISTED:
                forward, right = bottom - y, x - centre
                objects.append((forward + abs(right), forward, right, name_of(view[x, y])))
    lines = [f"{name} {relative_position(f, r)}" for _, f, r, name in sorted(objects)]
    lines += [
        f"a wall {relative_position(forward, right)}"
        for forward, right in _nearest_walls(view, centre, bottom)
    ]
    return lines


def _nearest_walls(view: np.ndarray, centre: int, bottom: int) -> list[tuple[int, int]]:
    found = []
    for dx, dy in ((0, -1), (-1, 0), (1, 0)):  # ahead, left, right
        x, y = centre + dx, bottom + dy
        while 0 <= x < view.shape[0] and 0 <= y < view.shape[1]:
            kind = IDX_TO_OBJECT[int(view[x, y, 0])]
            if kind == "wall":
                found.append((bottom - y, x - centre))
                break
            if kind == "unseen":
                break
            x, y = x + dx, y + dy
    return found
