"""Sequence packing: several sequences in one row, no padding, no attention across them.

A micro-batch of sequences is normally padded into ``rows x longest`` tokens; packed, it is one
row of ``sum(lengths)`` tokens, so no time or memory goes to padding. Two things keep each
sequence's results identical to running it alone:

* ``position_ids`` restart at 0 at the start of every sequence (rotary embeddings see the same
  positions as unpacked);
* attention is causal *within* each sequence only. Transformers builds that for packed
  ``position_ids`` as a dense ``T x T`` block mask, which makes SDPA on the CPU cost
  ``O(T^2)`` for the whole row. Instead, while packed, the model's attention implementation is
  switched to :func:`packed_sdpa_attention`, which runs transformers' own SDPA attention with
  ``is_causal`` on each sequence's slice of the row: ``O(sum of L_i^2)``, as unpacked.

Sequences that begin with the same tokens (the instruction every turn's prompt repeats) can
share them: the row holds that **prefix once**, then each sequence's remainder, and each
remainder attends to the prefix and, causally, to itself. Positions in a remainder continue
from the prefix's end, so every sequence sees exactly what it would alone, while the prefix's
tokens go through the model once for the micro-batch instead of once per sequence
(:func:`shared_prefix_length` says where that applies).

Packing is used only for model families where this is checked (:data:`PACKABLE_MODEL_TYPES`,
see ``tests/trainer/strategies/test_packing.py``), with SDPA or eager attention and no sliding
window; anything else is padded as before (:func:`supports_packing`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass

import torch
from torch import nn

#: Model types whose attention goes through transformers' attention interface with the
#: ``position_ids``-driven rotary embeddings this relies on (packed == unpacked is tested).
PACKABLE_MODEL_TYPES = frozenset({"llama", "qwen2", "qwen3"})

#: The name :func:`packed_sdpa_attention` is registered under in transformers'
#: ``AttentionInterface``. It is deliberately absent from the mask interface, so transformers
#: builds no attention mask while it is selected.
ATTENTION_NAME = "rollenv_packed_sdpa"


#: A shared prefix shorter than this is not worth the per-sequence attention it adds.
MIN_SHARED_PREFIX = 16


@dataclass
class _Packed:
    lengths: list[int]  # the row's segments: the shared prefix first (if any), then each rest
    config: object  # the model's Hugging Face config, whose attention is switched while packed
    prefix: int = 0  # the first segment's length, when every later segment continues it
    calls: int = 0


_ACTIVE: ContextVar[_Packed | None] = ContextVar("rollenv_packed_sequences", default=None)


def base_config(model: nn.Module):
    """The Hugging Face config of a causal LM, or of the model a peft model wraps."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model  # LoRA (peft)
    return base.config


def supports_packing(model: nn.Module) -> bool:
    """Whether ``model`` can run packed rows with results identical to padded ones."""
    config = base_config(model)
    if getattr(config, "model_type", None) not in PACKABLE_MODEL_TYPES:
        return False
    if config._attn_implementation not in ("sdpa", "eager"):
        return False
    if getattr(config, "sliding_window", None) and getattr(config, "use_sliding_window", True):
        return False
    layer_types = getattr(config, "layer_types", None) or []
    return all(kind == "full_attention" for kind in layer_types)


def packed_sdpa_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """Causal SDPA attention on each packed sequence's slice of the row, concatenated.

    ``query``/``key``/``value`` are ``(1, heads, T, head_dim)`` with ``T = sum(lengths)``;
    returns ``(1, T, heads, head_dim)`` as transformers' attention functions do.
    """
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    packed = _ACTIVE.get()
    if packed is None or attention_mask is not None or query.shape[0] != 1:
        raise RuntimeError(
            f"{ATTENTION_NAME} attention runs only inside packed_attention() on one packed row"
        )
    packed.calls += 1
    kwargs.pop("is_causal", None)
    # split, not slices: the backward of a split is one concatenation, while each slice's
    # backward would write its gradient into a zero-filled tensor of the whole row
    queries, keys, values = (t.split(packed.lengths, dim=2) for t in (query, key, value))
    if not packed.prefix:
        outputs = [
            sdpa_attention_forward(module, q, k, v, None, is_causal=True, **kwargs)[0]
            for q, k, v in zip(queries, keys, values, strict=True)
        ]
        return torch.cat(outputs, dim=1), None
    # the prefix attends causally to itself; each rest to the whole prefix, then causally to
    # itself, through the prefix's keys and values computed once
    prefix_key, prefix_value = keys[0], values[0]
    outputs = [
        sdpa_attention_forward(
            module, queries[0], prefix_key, prefix_value, None, is_causal=True, **kwargs
        )[0]
    ]
    for q, k, v in zip(queries[1:], keys[1:], values[1:], strict=True):
        visible = _after_prefix_mask(packed.prefix, q.shape[2], q.device)
        key_rows = torch.cat([prefix_key, k], dim=2)
        value_rows = torch.cat([prefix_value, v], dim=2)
        outputs.append(
            sdpa_attention_forward(
                module, q, key_rows, value_rows, visible, is_causal=False, **kwargs
            )[0]
        )
    return torch.cat(outputs, dim=1), None


def _after_prefix_mask(prefix: int, length: int, device: torch.device) -> torch.Tensor:
    """``(1, 1, length, prefix + length)``: True where a rest's token may attend (the whole
    prefix, then its own tokens up to itself)."""
    visible = torch.ones(length, prefix + length, dtype=torch.bool, device=device)
    visible[:, prefix:] = torch.ones(length, length, dtype=torch.bool, device=device).tril()
    return visible[None, None]


def _register() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(ATTENTION_NAME, packed_sdpa_attention)


@contextmanager
def packed_attention(model: nn.Module, lengths: list[int], prefix: int = 0) -> Iterator[None]:
    """Within the block, ``model``'s forward treats its one row as the packed ``lengths``.

    ``prefix``: the row is :func:`pack_sharing_prefix`'s, a prefix of this many tokens that
    every sequence (of the full ``lengths``) begins with, held once, then their rests.

    Raises ``RuntimeError`` on leaving if the model never called the packed attention (its
    attention would have crossed sequences).
    """
    _register()
    state = _Packed(row_segments(lengths, prefix), base_config(model), prefix)
    with _packed(state):
        yield
    if state.calls == 0:
        raise RuntimeError(
            f"{type(model).__name__} did not use the attention interface; it cannot be packed"
        )


@contextmanager
def _packed(state: _Packed) -> Iterator[None]:
    previous = state.config._attn_implementation
    token = _ACTIVE.set(state)
    state.config._attn_implementation = ATTENTION_NAME
    try:
        yield
    finally:
        state.config._attn_implementation = previous
        _ACTIVE.reset(token)


def recompute_contexts() -> tuple[AbstractContextManager, AbstractContextManager]:
    """``context_fn`` for ``torch.utils.checkpoint``: a checkpointed layer is recomputed in
    the backward pass, after :func:`packed_attention` has been left, so its recomputation is
    run in the packed state its forward saw (without this, the recomputed attention would
    cross sequences, and torch stops with ``CheckpointError``: other tensors were saved).

    Example:
        >>> forward, recompute = recompute_contexts()  # outside packing: nothing to restore
        >>> with forward, recompute:
        ...     pass
    """
    state = _ACTIVE.get()
    return nullcontext(), (_packed(state) if state is not None else nullcontext())


def checkpoint_layers(model: nn.Module) -> None:
    """Turns on ``model``'s activation checkpointing (Hugging Face's, non-reentrant) so that a
    layer run packed is recomputed packed (:func:`recompute_contexts`)."""
    model.gradient_checkpointing_enable(
        gradient_checkpointing_kwargs={"use_reentrant": False, "context_fn": recompute_contexts}
    )


def pack(sequences: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Concatenates token ids into one row; returns ``(input_ids, position_ids)``, ``(1, T)``.

    Positions restart at 0 at the start of every sequence.

    Example:
        >>> pack([[5, 6, 7], [8, 9]])
        (tensor([[5, 6, 7, 8, 9]]), tensor([[0, 1, 2, 0, 1]]))
    """
    ids = torch.tensor([token for sequence in sequences for token in sequence], dtype=torch.long)
    return ids[None], packed_positions([len(sequence) for sequence in sequences])


def packed_positions(
    lengths: list[int], device: torch.device | str = "cpu", *, prefix: int = 0
) -> torch.Tensor:
    """Position ids of a packed row: they restart at 0 at the start of every sequence, or,
    with a shared ``prefix``, each rest continues from the prefix's end.

    Example:
        >>> packed_positions([3, 2])
        tensor([[0, 1, 2, 0, 1]])
        >>> packed_positions([4, 3], prefix=2)  # the prefix 0 1, then 2 3 and 2
        tensor([[0, 1, 2, 3, 2]])
    """
    if not prefix:
        return torch.cat([torch.arange(n, device=device) for n in lengths])[None]
    rests = [torch.arange(prefix, n, device=device) for n in lengths]
    return torch.cat([torch.arange(prefix, device=device), *rests])[None]


def row_segments(lengths: list[int], prefix: int = 0) -> list[int]:
    """The pieces of a packed row of sequences of ``lengths``: each sequence, or, with a shared
    ``prefix``, the prefix first, then each sequence's rest.

    Example:
        >>> row_segments([4, 3]), row_segments([4, 3], prefix=2)
        ([4, 3], [2, 2, 1])
    """
    return [prefix, *(n - prefix for n in lengths)] if prefix else list(lengths)


def pack_sharing_prefix(sequences: list[list[int]], prefix: int) -> torch.Tensor:
    """One row ``(1, prefix + sum(len - prefix))``: the ``prefix`` tokens every sequence
    begins with, once, then each sequence's rest.

    Example:
        >>> pack_sharing_prefix([[5, 6, 7, 8], [5, 6, 9]], prefix=2)
        tensor([[5, 6, 7, 8, 9]])
    """
    ids = list(sequences[0][:prefix])
    for sequence in sequences:
        ids.extend(sequence[prefix:])
    return torch.tensor(ids, dtype=torch.long)[None]


def shared_prefix_length(
    sequences: list[list[int]],
    select: list[torch.Tensor],
    minimum: int = MIN_SHARED_PREFIX,
) -> int:
    """How many leading tokens all ``sequences`` can share in one packed row (0: none).

    The longest common prefix, cut so that every sequence keeps at least one token of its
    own and no selected (scored) token, nor the token that predicts it, lies in the prefix:
    what is scored is then computed per sequence. Below ``minimum`` tokens, or for a single
    sequence, nothing is shared.

    Example:
        >>> import torch
        >>> select = [torch.tensor([0, 0, 0, 1.0]), torch.tensor([0, 0, 0, 1.0, 1.0])]
        >>> shared_prefix_length([[5, 6, 7, 8], [5, 6, 7, 9, 4]], select, minimum=1)
        2
    """
    if len(sequences) < 2:
        return 0
    common = len(os.path.commonprefix(sequences))  # works on any sequences, lists of ids too
    length = min(common, min(len(sequence) for sequence in sequences) - 1)
    for mask in select:
        scored = torch.nonzero(torch.as_tensor(mask) > 0)
        if len(scored):
            length = min(length, int(scored[0, 0]) - 1)
    return length if length >= minimum else 0
