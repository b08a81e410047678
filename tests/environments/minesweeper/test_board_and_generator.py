"""Minesweeper's field (counts, flood, flags) and its layouts (a safe, non-winning opening)."""

from __future__ import annotations

import random

import pytest

from environments.minesweeper.board import Minefield
from environments.minesweeper.generator import generate_layout
from environments.minesweeper.oracle import opening, planned_reveals

# 4x4, mines at (0, 2) and (2, 2); the counts (a mine's own count is of its neighbours too):
#   0 1 * 1      cells  0  1  2  3
#   0 2 2 2             4  5  6  7
#   0 1 * 1             8  9 10 11
#   0 1 1 1            12 13 14 15
MINES = frozenset({2, 10})


def test_counts_are_the_mines_among_the_eight_neighbours():
    field = Minefield(4, 4, MINES)
    assert field.counts == (0, 1, 0, 1, 0, 2, 2, 2, 0, 1, 0, 1, 0, 1, 1, 1)


def test_a_zero_floods_to_the_numbers_around_it():
    field = Minefield(4, 4, MINES)
    assert field.reveal(0) == 8
    assert field.render() == "  1 2 3 4\n1 0 1 ? ?\n2 0 2 ? ?\n3 0 1 ? ?\n4 0 1 ? ?"
    assert not field.cleared() and field.safe_left == 6


def test_a_number_opens_only_itself():
    field = Minefield(4, 4, MINES)
    assert field.reveal(13) == 1 and field.safe_left == 13


def test_revealing_a_mine_explodes_and_shows_every_mine():
    field = Minefield(4, 4, MINES)
    field.reveal(2)
    assert field.exploded and not field.cleared()
    assert field.render() == "  1 2 3 4\n1 ? ? * ?\n2 ? ? ? ?\n3 ? ? * ?\n4 ? ? ? ?"


def test_flags_toggle_and_block_reveals_and_a_flood_clears_them():
    field = Minefield(4, 4, MINES)
    assert field.toggle_flag(13) and 13 in field.flagged
    assert field.reveal(13) == 0
    assert field.toggle_flag(13) and 13 not in field.flagged
    field.flagged.add(4)  # a wrong flag inside the zero region
    field.reveal(0)
    assert 4 not in field.flagged
    assert field.toggle_flag(0) is False, "an open cell takes no flag"


def test_revealing_every_safe_cell_clears_the_field():
    field = Minefield(4, 4, MINES)
    for cell in range(16):
        if cell not in MINES:
            field.reveal(cell)
    assert field.cleared()


@pytest.mark.parametrize(
    ("rows", "cols", "mines"), [(5, 5, 3), (8, 8, 10), (10, 10, 20), (3, 4, 3)]
)
def test_the_opening_is_safe_and_never_wins_at_once(rows, cols, mines):
    for seed in range(200):
        layout = generate_layout(random.Random(seed), rows, cols, mines)
        field = layout.field()
        assert len(layout.mines) == mines
        assert layout.start not in layout.mines
        assert not set(field.neighbours[layout.start]) & layout.mines
        assert not field.exploded and not field.cleared()


def test_layouts_are_deterministic_per_seed_and_vary():
    layouts = [generate_layout(random.Random(s), 8, 8, 10) for s in range(20)]
    assert layouts == [generate_layout(random.Random(s), 8, 8, 10) for s in range(20)]
    assert len({(lay.mines, lay.start) for lay in layouts}) == 20


@pytest.mark.parametrize(
    ("rows", "cols", "mines", "message"),
    [(1, 5, 1, "rows and cols"), (5, 5, 17, r"mines must be in 1\.\.16"), (5, 5, 0, "mines")],
)
def test_bad_settings_name_the_field(rows, cols, mines, message):
    with pytest.raises(ValueError, match=message):
        generate_layout(random.Random(0), rows, cols, mines)


def test_the_oracle_plans_the_largest_opening_first_and_covers_every_safe_cell():
    field = Minefield(4, 4, MINES)
    assert opening(field, 0) == {0, 1, 4, 5, 8, 9, 12, 13}
    assert opening(field, 5) == {5}
    assert planned_reveals(field, 10) == [0, 3, 6, 7, 11, 14, 15]
    assert planned_reveals(field, 2) == [0, 3]
