"""Generation backends behind one interface: token ids in, sampled token ids and log-probs out.

``make_generator`` builds a backend by name; every backend satisfies the :class:`Generator`
protocol of :mod:`trainer.generation.base`.

Example:
    >>> from trainer.generation import make_generator
    >>> make_generator("vllm-typo", None, None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown generation backend 'vllm-typo'; available: 'continuous', 'hf', ...
"""

from __future__ import annotations

import importlib
from typing import Any

from trainer.generation.base import GenerationOutput, Generator, SamplingParams

__all__ = [
    "BACKENDS",
    "ContinuousGenerator",
    "GenerationOutput",
    "Generator",
    "HFGenerator",
    "SamplingParams",
    "make_generator",
]

#: Backend name -> ``"module:Class"``, imported only when that backend is asked for (so a GPU
#: engine's heavy imports cost nothing to those who do not use it).
BACKENDS: dict[str, str] = {
    "continuous": "trainer.generation.continuous:ContinuousGenerator",
    "hf": "trainer.generation.hf:HFGenerator",
    "openai": "trainer.generation.openai_client:OpenAIGenerator",
    "vllm": "trainer.generation.vllm_engine:VLLMGenerator",
    "sglang": "trainer.generation.sglang_engine:SGLangGenerator",
}


def make_generator(backend: str, model: Any, tokenizer: Any, **kwargs: Any) -> Generator:
    """Builds the generation backend named ``backend``.

    Args:
        backend: one of :data:`BACKENDS` (``"continuous"``: the fast in-process engine, the
            default; ``"hf"``: the simple reference loop; ``"openai"``: a server's
            ``/v1/completions``, given ``base_url``; ``"vllm"``, ``"sglang"``: those engines
            on a GPU, given a model folder).
        model: the model the backend generates with (it takes ownership of it); for
            ``"openai"`` the model id the server serves.
        tokenizer: its tokenizer.
        **kwargs: passed to the backend's constructor (for ``"continuous"`` and ``"hf"``:
            ``device``, ``max_batch_size``).

    Returns:
        The backend, a :class:`Generator`.

    Raises:
        ValueError: ``backend`` is not a known backend; the message lists those there are.
    """
    target = BACKENDS.get(str(backend).strip().lower())
    if target is None:
        available = ", ".join(repr(name) for name in BACKENDS)
        raise ValueError(f"unknown generation backend {backend!r}; available: {available}")
    module_name, _, class_name = target.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    return cls(model, tokenizer, **kwargs)


def __getattr__(name: str) -> Any:
    # the engines import torch and transformers only when used: env manager actors import
    # trainer.generation.base and must stay light
    for backend in BACKENDS.values():
        module_name, _, class_name = backend.partition(":")
        if name == class_name:
            return getattr(importlib.import_module(module_name), class_name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
