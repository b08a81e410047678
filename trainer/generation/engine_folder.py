"""What the GPU engines (vLLM, SGLang) need before they start: a CUDA device and a model folder.

Both engines load a model from a folder, while the trainer hands a generator its policy as a
model object. :func:`engine_model_folder` writes such an object (and its tokenizer) to a
temporary folder; :func:`require_cuda_device` refuses a run whose device is not a GPU with one
line that says what to change.

Example:
    >>> require_cuda_device("cpu", "vllm")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: generation.backend=vllm generates on a CUDA GPU, and this run's device is cpu: ...
"""

from __future__ import annotations

import shutil
import tempfile
from typing import Any

__all__ = ["OwnsModelFolder", "engine_model_folder", "require_cuda_device"]


def require_cuda_device(device: Any, backend: str) -> None:
    """Raises ``ValueError`` unless ``device`` is ``None`` or a CUDA device."""
    if device is not None and str(device).split(":")[0] != "cuda":
        raise ValueError(
            f"generation.backend={backend} generates on a CUDA GPU, and this run's device is "
            f"{device}: set train.device=cuda on a GPU machine, or use generation.backend="
            "continuous"
        )


def engine_model_folder(model: Any, tokenizer: Any) -> tuple[str, str | None]:
    """The folder an engine loads ``model`` from.

    Args:
        model: a folder or hub id (returned as it is), or a Hugging Face model object.
        tokenizer: the model's tokenizer, written beside a model object.

    Returns:
        ``(folder, temporary)``: ``temporary`` is the folder this call created (the caller
        removes it when the engine is done), or ``None``.
    """
    if isinstance(model, str) or not hasattr(model, "save_pretrained"):
        return str(model), None
    folder = tempfile.mkdtemp(prefix="rollenv-engine-")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, folder


class OwnsModelFolder:
    """Mixin of an engine that may have written its model to ``self._folder`` (a temporary
    folder from :func:`engine_model_folder`, or ``None``): removed on :meth:`close`."""

    _folder: str | None = None  # also when __init__ failed before setting it

    def close(self) -> None:
        """Removes the temporary model folder, if this generator wrote one."""
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    def __del__(self) -> None:
        self.close()
