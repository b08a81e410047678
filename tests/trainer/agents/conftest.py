"""The tiny random model and a gateway serving it, shared by a test module's agents."""

from __future__ import annotations

import pytest

from trainer.agents.gateway import Gateway
from trainer.generation.continuous import ContinuousGenerator
from trainer.models import load_model
from trainer.serving.engine import ServingEngine


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny-random", seed=0)


@pytest.fixture(scope="module")
def gateway(tiny):
    """A gateway on its own engine thread (the tests' agents run while pytest's thread waits)."""
    model, tokenizer = tiny
    engine = ServingEngine(ContinuousGenerator(model, tokenizer, max_batch_size=8))
    with Gateway(engine) as served:
        yield served
    engine.close()
