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

__all__ = ["check_trainable_layers", "decoder_layers", "freeze_all_but_last_layers"]


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
        raise ValueError(_too_many_layers(count, type(model).__name__, len(layers)))
    model.requires_grad_(False)
    layers[len(layers) - count :].requires_grad_(True)
    norm = getattr(model.model, "norm", None)
    if isinstance(norm, nn.Module):
        norm.requires_grad_(True)


def check_trainable_layers(model_name: str, count: int | None) -> None:
    """Refuses ``model.trainable_layers`` above the model's layer count from its config alone,
    before the weights load (and before a warm start's minutes of SFT). Where the config cannot
    be read without the weights, :func:`freeze_all_but_last_layers` checks it at load time.

    Raises:
        ConfigError: ``count`` is more than the model's decoder layers.

    Example:
        >>> check_trainable_layers("tiny-random", 2)  # fits
        >>> check_trainable_layers("tiny-random", 3)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        trainer.config.ConfigError: model.trainable_layers=3, but tiny-random has 2 decoder ...
    """
    if count is None:
        return
    from trainer.config import ConfigError
    from trainer.models import model_config

    hf_config = model_config(model_name)
    layers = getattr(hf_config, "num_hidden_layers", None)
    if isinstance(layers, int) and count > layers:
        raise ConfigError(_too_many_layers(count, model_name, layers))


def _too_many_layers(count: int, model: str, layers: int) -> str:
    return (
        f"model.trainable_layers={count}, but {model} has {layers} decoder layers: choose 1 to "
        f"{layers}, or null to train them all"
    )
