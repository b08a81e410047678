"""How far a Sokoban position is from solved, for ``SokobanEnv(progress_reward=...)``.

The potential of a position is minus the pushes its boxes still need (each box on its own) minus
the player's walk to the nearest box still off a target:

    Phi(s) = -( sum_b push_distance[b] + walk_to_box(s) )

and a move from ``s`` to ``s'`` earns ``progress_reward * (Phi(s') - Phi(s))`` on top of the
env's own reward. That is potential-based shaping (Ng, Harada and Russell, 1999): over an
episode the shaping adds up to ``Phi(last) - Phi(first)``, so it pays how much closer the episode
got, whatever path it took, and with no discount it changes no policy's ranking of complete
solutions. No plan is searched for: both distances are breadth-first searches over the board.

Example:
    >>> from environments.sokoban.puzzle import Puzzle
    >>> p = Puzzle.from_text("######\\n#P_XO#\\n######")
    >>> distances = push_distances(p.walls, p.targets, p.width)
    >>> distances[p.boxes[0]]  # one push from the target
    1
    >>> potential(p.walls, distances, p.targets, p.boxes, p.player, p.width)  # and one step to walk
    -2
"""

from __future__ import annotations

from environments.sokoban.puzzle import offsets, pull_distances


def push_distances(walls: bytes, targets: tuple[int, ...], width: int) -> list[int]:
    """Fewest pushes that bring a lone box from each cell onto some target
    (:func:`~environments.sokoban.puzzle.pull_distances`), with a dead cell given one more than
    the largest finite distance, so pushing a box there costs at least one step of progress.
    """
    distance = pull_distances(walls, targets, width)
    dead = max(d for d in distance if d is not None) + 1
    return [dead if d is None else d for d in distance]


def walk_to_box(
    walls: bytes,
    targets: frozenset[int] | tuple[int, ...],
    boxes: list[int] | tuple[int, ...],
    player: int,
    width: int,
) -> int:
    """Moves the player needs to stand next to the nearest box that is off a target.

    Boxes block the walk. 0 when every box is on a target, when the player already stands next
    to such a box, or when none can be reached.
    """
    wanted = {b for b in boxes if b not in targets}
    if not wanted:
        return 0
    blocked = set(boxes)
    seen = {player}
    frontier = [player]
    steps = 0
    while frontier:
        following = []
        for cell in frontier:
            for d in offsets(width):
                near = cell + d
                if near in wanted:
                    return steps
                if near not in seen and not walls[near] and near not in blocked:
                    seen.add(near)
                    following.append(near)
        frontier = following
        steps += 1
    return 0


def potential(
    walls: bytes,
    push_distance: list[int],
    targets: frozenset[int] | tuple[int, ...],
    boxes: list[int] | tuple[int, ...],
    player: int,
    width: int,
) -> int:
    """``Phi(s)``: minus the boxes' push distances and the player's walk to a box (see above)."""
    pushes = sum(push_distance[b] for b in boxes)
    return -(pushes + walk_to_box(walls, targets, boxes, player, width))
