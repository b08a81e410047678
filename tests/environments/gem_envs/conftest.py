"""Shared for the GEM adapter's tests: the ids, split by how long one reset takes."""

from __future__ import annotations

import pytest

import rollenv
from environments.gem import INSTALL_HINT
from environments.gem.catalog import CATALOG, SLOW_GEM_IDS

pytest.importorskip("gem", reason=INSTALL_HINT)

REGISTERED = [e for e in CATALOG if e.env_id in rollenv.registry]


def param(entry) -> object:
    """``entry`` as a pytest parameter, marked slow where its reset is."""
    marks = [pytest.mark.slow] if entry.env_id in SLOW_GEM_IDS else []
    return pytest.param(entry, id=entry.env_id, marks=marks)
