"""Shared for the GEM adapter's tests: the ids, split by how long one reset takes."""

from __future__ import annotations

import pytest

import rollenv
from environments.gem import INSTALL_HINT
from environments.gem.catalog import CATALOG

pytest.importorskip("gem", reason=INSTALL_HINT)

# a reset (or a GEM construction) of these takes from 0.1 s to 10 s (measured here: Sokoban's
# rooms, 9x9 Sudoku with unique solutions, reasoning-gym's search-based generators)
SLOW_GEM_IDS = frozenset(
    {
        "gem/SokobanHard-v0",
        "gem/SokobanRandom-v0",
        "gem/SudokuHard-v0",
        "gem/SudokuRandom-v0",
        "gem/Futoshiki-v0",
        "gem/KnightSwap-v0",
        "gem/Puzzle24-v0",
        "gem/ZebraPuzzles-v0",
        "gem/IntermediateIntegration-v0",
        "gem/QuantumLock-v0",
        "gem/Sudoku-v0",
        "gem/ComplexArithmetic-v0",
    }
)
REGISTERED = [e for e in CATALOG if e.env_id in rollenv.registry]


def param(entry) -> object:
    """``entry`` as a pytest parameter, marked slow where its reset is."""
    marks = [pytest.mark.slow] if entry.env_id in SLOW_GEM_IDS else []
    return pytest.param(entry, id=entry.env_id, marks=marks)
