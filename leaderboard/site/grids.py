"""Boards inside observations: Sokoban and FrozenLake draw their state as lines of symbols;
the episode viewer shows those lines as a grid of coloured squares and any other line as text.

A board is two or more consecutive lines of equal length (at least two symbols each) made only
of the symbols of the env family's palette. The palette also names each symbol (``wall``,
``box``, ``hole``, ...), which becomes the square's CSS class: the same letter means different
things in different families (``O`` is a Sokoban target and a FrozenLake hole).

Example:
    >>> parts = segments("FrozenLake-v0", "You slipped.\\nP_\\nOG")
    >>> [type(part).__name__ for part in parts]
    ['Text', 'Grid']
    >>> [[cell.name for cell in row] for row in parts[1].rows]
    [['player', 'ice'], ['hole', 'goal']]
    >>> segments("WebShop-v0", "__\\n__")[0].text
    '__\\n__'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["PALETTES", "Cell", "Grid", "Text", "family_of", "palette_for", "segments", "split"]

#: symbol -> the square's name (its CSS class), per env family
PALETTES: Mapping[str, Mapping[str, str]] = {
    "sokoban": {
        "#": "wall",
        "_": "floor",
        "O": "target",
        "X": "box",
        "√": "box-on-target",
        "P": "player",
        "S": "player-on-target",
    },
    "frozenlake": {
        "_": "ice",
        "O": "hole",
        "G": "goal",
        "P": "player",
        "X": "player-in-hole",
        "√": "player-on-goal",
    },
}


@dataclass(frozen=True)
class Cell:
    """One square of a board: its symbol and the symbol's name."""

    symbol: str
    name: str


@dataclass(frozen=True)
class Grid:
    """A board: rows of cells, all rows of one length."""

    rows: tuple[tuple[Cell, ...], ...]
    family: str

    @property
    def text(self) -> str:
        return "\n".join("".join(cell.symbol for cell in row) for row in self.rows)


@dataclass(frozen=True)
class Text:
    """Lines that are not a board."""

    text: str


def family_of(env_id: str) -> str:
    """The family an env id belongs to, for how its transcript is shown: ``sokoban``,
    ``frozenlake``, ``code``, ``webshop`` or ``text``.

    Example:
        >>> family_of("LargerSokoban-v0"), family_of("CodeSandbox-v0"), family_of("MathVerify-v0")
        ('sokoban', 'code', 'text')
    """
    name = env_id.rsplit("/", 1)[-1].lower()
    for family in ("sokoban", "frozenlake", "webshop"):
        if family in name:
            return family
    return "code" if name.startswith("code") else "text"


def palette_for(env_id: str) -> Mapping[str, str] | None:
    """The board palette of the env's family, or ``None`` when its observations have no board."""
    return PALETTES.get(family_of(env_id))


def segments(env_id: str, text: str) -> list[Grid | Text]:
    """``text`` cut into boards and text, with the palette of ``env_id``'s family."""
    family = family_of(env_id)
    palette = PALETTES.get(family)
    if palette is None:
        return [Text(text.strip("\n"))] if text.strip() else []
    return split(text, palette, family)


def split(text: str, palette: Mapping[str, str], family: str = "") -> list[Grid | Text]:
    """``text`` cut into runs of board lines (``Grid``) and everything between (``Text``)."""
    parts: list[Grid | Text] = []
    loose: list[str] = []
    lines = text.split("\n")
    start = 0
    while start < len(lines):
        end = start
        width = len(lines[start])
        while end < len(lines) and len(lines[end]) == width and _is_board_line(lines[end], palette):
            end += 1
        if end - start >= 2:
            _flush(loose, parts)
            rows = tuple(
                tuple(Cell(symbol, palette[symbol]) for symbol in line) for line in lines[start:end]
            )
            parts.append(Grid(rows, family))
            start = end
        else:
            loose.append(lines[start])
            start += 1
    _flush(loose, parts)
    return parts


def _is_board_line(line: str, palette: Mapping[str, str]) -> bool:
    return len(line) >= 2 and all(symbol in palette for symbol in line)


def _flush(loose: list[str], parts: list[Grid | Text]) -> None:
    text = "\n".join(loose).strip("\n")
    if text.strip():
        parts.append(Text(text))
    loose.clear()
