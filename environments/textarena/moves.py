"""Candidate moves of a TextArena game, read off its messages or expanded from templates.

TextArena games take moves as bracketed tokens (``[4]``, ``[e2e4]``, ``[Bet 20]``). Many list the
moves open to the player (``Available Moves: '[0]', '[1]'``); their prompts show examples. The
candidates are every bracketed token of the latest messages, the moves of the game's templates
(``games.Game.moves``) and the examples of its prompt. They are only candidates: the env keeps
those the game accepts (``TextArenaEnv.action_words``), and the random opponent retries when the
game refuses one.

Example:
    >>> expand_template("[{0..2} {a|b}]")
    ['[0 a]', '[0 b]', '[1 a]', '[1 b]', '[2 a]', '[2 b]']
    >>> bracketed_tokens("Available Moves: '[0]', '[1]' and [col 3]")
    ['[0]', '[1]', '[col 3]']
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable

_BRACKETED = re.compile(r"\[[^\[\]\n]{1,60}\]")
_FIELD = re.compile(r"\{([^{}]*)\}")
_RANGE = re.compile(r"^(-?\d+)\.\.(-?\d+)$")
_LETTER_RANGE = re.compile(r"^([A-Za-z])\.\.([A-Za-z])$")
_FROM_TO = re.compile(r"^\[([a-h])([1-8]) ?([a-h])([1-8])\]$")
_RANK_LINE = re.compile(r"^\s*(\d{1,2}) ?\|(.*)$")
_OWN_PIECE = re.compile(r"\((\w)\)|pieces are '(\w)'|playing (White|Black)")
#: the most moves one template expands to
MAX_EXPANSION = 5000
#: how far a from-to board move may reach among the candidates (none of these games' random
#: moves needs more, and the full square of squares is mostly refused)
MAX_REACH = 2


def bracketed_tokens(text: str) -> list[str]:
    """Every ``[...]`` token of ``text`` (one line, at most 60 characters), in order, once."""
    return list(dict.fromkeys(_BRACKETED.findall(text)))


def _field_values(field: str) -> list[str]:
    numbers = _RANGE.match(field)
    if numbers:
        low, high = int(numbers.group(1)), int(numbers.group(2))
        return [str(n) for n in range(low, high + 1)]
    letters = _LETTER_RANGE.match(field)
    if letters:
        low, high = ord(letters.group(1)), ord(letters.group(2))
        return [chr(c) for c in range(low, high + 1)]
    if "|" not in field:  # not a field: braces the game wants (Tak's {(0,1): [F0]})
        return ["{" + field + "}"]
    return field.split("|")


def expand_template(template: str, limit: int = MAX_EXPANSION) -> list[str]:
    """The moves of a template (the first ``limit``): ``{a..b}`` is a range of numbers or
    letters, ``{x|y}`` a choice."""
    fields = [_field_values(f) for f in _FIELD.findall(template)]
    parts = _FIELD.split(template)[::2]  # the literal text around the fields
    moves = []
    for values in itertools.islice(itertools.product(*fields), limit):
        pieces = [parts[0]]
        for value, literal in zip(values, parts[1:], strict=True):
            pieces += [value, literal]
        moves.append("".join(pieces))
    return moves


def board_moves(board_text: str, prompt: str, reach: int, joiner: str = " ") -> list[str]:
    """``[a2 a3]``-style moves from the player's pieces on a ranked board, up to ``reach`` away.

    Reads boards drawn as ``<rank> | B B . W`` or ``<rank> | B | | W |`` (files a, b, ...); the
    player's piece letter comes from its prompt (``(W)``, ``pieces are 'O'``, ``playing White``).
    """
    own = _OWN_PIECE.search(prompt)
    letter = next((g for g in own.groups() if g), "")[:1] if own else ""
    squares = []
    for line in board_text.splitlines():
        match = _RANK_LINE.match(line)
        if match is None:
            continue
        rank, rest = match.groups()
        cells = [c.strip() for c in rest.split("|")] if rest.count("|") > 2 else rest.split()
        cells = [c for c in cells if not c.isdigit()]
        for file_index, cell in enumerate(cells):
            if cell and cell not in ".·_" and (not letter or cell == letter):
                squares.append((file_index, int(rank)))
    moves = []
    for file_index, rank in squares:
        for dx in range(-reach, reach + 1):
            for dy in range(-reach, reach + 1):
                to_file, to_rank = file_index + dx, rank + dy
                if (dx or dy) and 0 <= to_file < 26 and to_rank > 0:
                    to_square = f"{chr(97 + to_file)}{to_rank}"
                    moves.append(f"[{chr(97 + file_index)}{rank}{joiner}{to_square}]")
    return moves


def grid_marks(board_text: str) -> list[str]:
    """``[row column X|O]`` marks of logic-grid tables drawn with ``|`` (LogicPuzzle's boards).

    A line naming several cells is a table's header (its columns); a line naming only its first
    cell is a row.
    """
    rows, columns = [], []
    for line in board_text.splitlines():
        if "|" not in line:
            continue
        cells = [cell.strip() for cell in line.split("|")]
        named = [cell for cell in cells if cell]
        if len(named) > 1:
            columns += [name for cell in named for name in cell.split()]
        elif len(named) == 1 and cells[0]:
            rows.append(cells[0])
    rows, columns = list(dict.fromkeys(rows)), list(dict.fromkeys(columns))
    return [f"[{row} {column} {mark}]" for row in rows for column in columns for mark in "XO"]


def candidate_moves(recent_text: str, templates: Iterable[str], prompt: str) -> list[str]:
    """Candidates in order: tokens of the latest messages, the templates' moves, the prompt's.

    A template ``@board:<reach>`` stands for ``board_moves`` of the latest messages
    (``@board-joined:<reach>`` for moves written ``[a2a3]``); ``@grid`` for ``grid_marks``.
    """
    candidates = bracketed_tokens(recent_text)
    for template in templates:
        if template == "@grid":
            candidates += grid_marks(recent_text)
        elif template.startswith("@board"):
            joiner = "" if template.startswith("@board-joined") else " "
            reach = int(template.split(":")[1])
            candidates += board_moves(recent_text, prompt, reach, joiner)
        else:
            candidates += _template_moves(template)
    candidates += bracketed_tokens(prompt)
    return list(dict.fromkeys(candidates))


@functools.cache  # a game's templates are constants: expanded once a process, not every turn
def _template_moves(template: str) -> tuple[str, ...]:
    return tuple(move for move in expand_template(template) if _within_reach(move))


def _within_reach(move: str) -> bool:
    match = _FROM_TO.match(move)
    if match is None:
        return True
    file_a, rank_a, file_b, rank_b = match.groups()
    reach = max(abs(ord(file_a) - ord(file_b)), abs(int(rank_a) - int(rank_b)))
    return 0 < reach <= MAX_REACH
