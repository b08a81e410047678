"""Train only the top of a causal LM: ``model.trainable_layers``.

With every weight below the first trained layer frozen, autograd records nothing for the
frozen layers: their forward pass keeps no activations, and the backward pass stops at the
first trained layer. A backward pass costs about twice a forward pass, so training the last
``n`` of ``L`` layers costs about ``1 + 2n/L`` forward passes instead of 3
(``benchmarks/trainable_layers.py`` measures it).

Example:
    >>> from trainer.models import load_model  # doctest: +SKIP
    >>> model, _ = load_model("tiny-random")  # doctest: +SKIP
    >>> freeze_all_but_last_layers(model, 1)  # doctest: +SKIP
    >>> [n for n, p in model.named_parameters() if p.requires_grad][0]  # doctest: +SKIP
    'model.layers.1.self_attn.q_proj.weight'
"""

from __future__ import annotations

from torch import nn

__all__ = ["decoder_layers", "freeze_all_but_last_layers"]


def decoder_layers(model: nn.Module) -> nn.ModuleList:
    """The decoder layers of a Hugging Face causal LM (``model.model.layers``: Llama, Qwen2,
    Mistral and most others)."""
    layers = getattr(getattr(model, "model", None), "layers", None)
    if not isinstance(layers, nn.ModuleList):
        raise ValueError(
            f"model.trainable_layers needs a model with its decoder layers at model.layers "
            f"(Llama, Qwen2, Mistral); {type(model).__name__} has none there"
        )
    return layers


def freeze_all_but_last_layers(model: nn.Module, count: int) -> None:
    """Freezes every parameter but those of the last ``count`` decoder layers and of the final
    norm (``model.model.norm``, which sits between them and the LM head).

    Raises:
        ValueError: the model has no decoder layers where expected, or fewer than ``count``.
    """
    layers = decoder_layers(model)
    if not 0 < count <= len(layers):
        raise ValueError(
            f"model.trainable_layers={count}, but {type(model).__name__} has {len(layers)} "
            f"decoder layers: choose 1 to {len(layers)}, or null to train them all"
        )
    model.requires_grad_(False)
    layers[len(layers) - count :].requires_grad_(True)
    norm = getattr(model.model, "norm", None)
    if isinstance(norm, nn.Module):
        norm.requires_grad_(True)
