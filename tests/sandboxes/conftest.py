"""Shared fixtures: the bwrap backend, or a skip that says why there is none."""

from __future__ import annotations

import shutil

import pytest


@pytest.fixture(scope="session")
def bwrap():
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (apt-get install -y bubblewrap)")
    from sandboxes.bwrap import BwrapBackend

    return BwrapBackend()
