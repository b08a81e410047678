"""Hugging Face Llama / Qwen2 weights <-> Megatron-core ``GPTModel`` weights, split for parallelism.

The ``megatron`` training strategy holds the policy as a Megatron-core ``GPTModel`` whose layers are
sharded over ``tensor_parallel`` ranks (and, across pipeline stages, over ``pipeline_parallel``
stages). This module maps a Hugging Face state dict to one Megatron state dict per tensor-parallel
rank (:func:`hf_to_megatron`), back again (:func:`megatron_to_hf`), and between one whole-model
state dict and its pipeline stages (:func:`split_pipeline_stages`, :func:`merge_pipeline_stages`).
It is pure tensor bookkeeping: no Megatron import, no GPU, no change of dtype, so a round trip is
bit-exact. Supported: :data:`SUPPORTED_ARCHITECTURES` (RMSNorm, rotary embeddings, SwiGLU MLP,
grouped-query attention, optionally tied input/output embeddings; Qwen2's q/k/v biases).

Key names (layer ``i``; ``local`` is ``get_gpt_layer_local_spec``, ``te`` is
``get_gpt_layer_with_transformer_engine_spec``, where the norms are fused into the next linear)::

    Hugging Face                            Megatron-core
    model.embed_tokens.weight               embedding.word_embeddings.weight
    model.layers.i.input_layernorm.weight   local: decoder.layers.i.input_layernorm.weight
                                            te:    decoder.layers.i.self_attention.linear_qkv
                                                   .layer_norm_weight
    ...self_attn.{q,k,v}_proj.{weight,bias} decoder.layers.i.self_attention.linear_qkv.{weight,bias}
    ...self_attn.o_proj.weight              decoder.layers.i.self_attention.linear_proj.weight
    ...post_attention_layernorm.weight      local: decoder.layers.i.pre_mlp_layernorm.weight
                                            te:    decoder.layers.i.mlp.linear_fc1.layer_norm_weight
    ...mlp.{gate,up}_proj.weight            decoder.layers.i.mlp.linear_fc1.weight
    ...mlp.down_proj.weight                 decoder.layers.i.mlp.linear_fc2.weight
    model.norm.weight                       decoder.final_layernorm.weight
    lm_head.weight                          output_layer.weight  (absent when tied)

Fused QKV. Megatron computes q, k and v with one linear whose output rows are grouped by key/value
head ("query group"): each group holds its query heads, then its key head, then its value head,
``head_dim`` rows each. With 4 query heads sharing 2 key/value heads (2 query heads per group)::

    linear_qkv.weight rows                    Hugging Face rows
    group 0: q0 | q1 | k0 | v0                q_proj heads 0, 1; k_proj head 0; v_proj head 0
    group 1: q2 | q3 | k1 | v1                q_proj heads 2, 3; k_proj head 1; v_proj head 1

Qwen2's q/k/v biases are fused into ``linear_qkv.bias`` in the same order.

Fused fc1. SwiGLU's two input projections are one linear: the gate rows, then the up rows; Megatron
applies ``silu`` to the first half of the output and multiplies it by the second.

Tensor parallelism (``T`` ranks, rank ``r`` gets the ``r``-th of ``T`` equal contiguous slices)::

    column-parallel (dim 0)   linear_qkv    the fused rows above, sliced: whole query groups per
                                            rank, or, with fewer key/value heads than ranks,
                                            1/(T/kv) of one group (Megatron all-gathers the group)
                              linear_fc1    per rank [gate slice r; up slice r], not a slice of
                                            [gate; up], so each rank's halves still pair up
    row-parallel (dim 1)      linear_proj, linear_fc2
    vocab-parallel (dim 0)    word_embeddings, output_layer
    replicated                the norms

Pipeline parallelism. Stage ``p`` of ``P`` holds layers ``p * L/P`` to ``(p+1) * L/P - 1``
(:func:`layers_of_stage`) numbered from 0 within the stage, the word embeddings on the first stage,
and the final norm and output layer on the last; with tied embeddings and ``P > 1`` the last stage
holds its own copy of the word embeddings as ``output_layer.weight`` (Megatron keeps the two equal).

Megatron's ``model.state_dict()`` also has ``*._extra_state`` entries (``None`` for the local spec,
Transformer Engine's fp8 metadata for ``te``); :func:`megatron_to_hf` ignores them and
:func:`hf_to_megatron` makes none, so load its output with ``strict=False`` and check that only
``_extra_state`` keys were missing. :func:`transformer_config_kwargs` and :func:`gpt_model_kwargs`
give the Megatron model matching a Hugging Face config.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import Tensor

#: The Hugging Face architectures this module converts.
SUPPORTED_ARCHITECTURES = ("LlamaForCausalLM", "Qwen2ForCausalLM")

#: Megatron-core layer specs: ``get_gpt_layer_local_spec`` and the Transformer Engine spec.
LayerSpec = Literal["local", "te"]
LAYER_SPECS: tuple[str, ...] = ("local", "te")

_ARCHITECTURE_OF_MODEL_TYPE = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM"}
_LAYER_KEY = re.compile(r"decoder\.layers\.(\d+)\.(.+)")
_EXTRA_STATE = "._extra_state"
# Buffers some transformers versions keep in the state dict; recomputed from the config.
_HF_IGNORED_SUFFIXES = ("rotary_emb.inv_freq",)


@dataclass(frozen=True)
class _Shape:
    """The sizes a conversion needs, read from a Hugging Face config."""

    architecture: str
    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    ffn_hidden_size: int
    vocab_size: int
    tied: bool
    qkv_bias: bool

    @property
    def heads_per_group(self) -> int:
        return self.num_heads // self.num_kv_heads

    @property
    def qkv_rows(self) -> int:
        return (self.num_heads + 2 * self.num_kv_heads) * self.head_dim


@dataclass(frozen=True)
class _Names:
    """Megatron key names (within ``decoder.layers.i.``) that differ between the layer specs."""

    input_norm: str
    mlp_norm: str


_NAMES = {
    "local": _Names("input_layernorm.weight", "pre_mlp_layernorm.weight"),
    "te": _Names("self_attention.linear_qkv.layer_norm_weight", "mlp.linear_fc1.layer_norm_weight"),
}


def _architecture(hf_config: Any) -> str:
    architectures = getattr(hf_config, "architectures", None) or []
    model_type = getattr(hf_config, "model_type", None)
    name = architectures[0] if architectures else _ARCHITECTURE_OF_MODEL_TYPE.get(model_type)
    if name not in SUPPORTED_ARCHITECTURES:
        found = name or f"model_type {model_type!r}"
        raise ValueError(
            f"unsupported architecture {found}: the Megatron weight conversion supports "
            f"{', '.join(SUPPORTED_ARCHITECTURES)}"
        )
    return name


def _shape(hf_config: Any) -> _Shape:
    architecture = _architecture(hf_config)
    hidden = hf_config.hidden_size
    heads = hf_config.num_attention_heads
    kv_heads = getattr(hf_config, "num_key_value_heads", None) or heads
    head_dim = getattr(hf_config, "head_dim", None) or hidden // heads
    if heads % kv_heads:
        raise ValueError(
            f"num_attention_heads={heads} does not divide by num_key_value_heads={kv_heads}"
        )
    act = getattr(hf_config, "hidden_act", "silu")
    if act != "silu":
        raise ValueError(f"hidden_act={act!r}: the Megatron conversion expects SwiGLU ('silu')")
    if architecture == "LlamaForCausalLM":
        for flag in ("attention_bias", "mlp_bias"):
            if getattr(hf_config, flag, False):
                raise ValueError(
                    f"Llama with {flag}=True is not supported: Megatron's add_bias_linear would "
                    "put biases on every linear, which these weights lack"
                )
    return _Shape(
        architecture=architecture,
        num_layers=hf_config.num_hidden_layers,
        hidden_size=hidden,
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        ffn_hidden_size=hf_config.intermediate_size,
        vocab_size=hf_config.vocab_size,
        tied=bool(getattr(hf_config, "tie_word_embeddings", False)),
        qkv_bias=architecture == "Qwen2ForCausalLM",
    )


def _check_tensor_parallel(shape: _Shape, tensor_parallel: int) -> None:
    if not isinstance(tensor_parallel, int) or tensor_parallel < 1:
        raise ValueError(f"tensor_parallel must be a positive int, got {tensor_parallel!r}")
    t = tensor_parallel
    for name, size in (
        ("num_attention_heads", shape.num_heads),
        ("intermediate_size", shape.ffn_hidden_size),
        ("vocab_size", shape.vocab_size),
    ):
        if size % t:
            hint = " (pad the vocabulary first)" if name == "vocab_size" else ""
            raise ValueError(f"{name}={size} does not divide by tensor_parallel={t}{hint}")
    kv = shape.num_kv_heads
    if kv % t and t % kv:
        raise ValueError(
            f"num_key_value_heads={kv} and tensor_parallel={t}: one must divide the other "
            "(each rank gets whole key/value heads, or each head is spread over several ranks)"
        )
    if shape.qkv_rows % t:
        raise ValueError(
            f"the fused QKV's {shape.qkv_rows} rows do not divide by tensor_parallel={t}"
        )


def _layer_spec_names(layer_spec: str) -> _Names:
    if layer_spec not in _NAMES:
        raise ValueError(f"unknown layer_spec {layer_spec!r}; choose one of {', '.join(_NAMES)}")
    return _NAMES[layer_spec]


def _fuse_qkv(q: Tensor, k: Tensor, v: Tensor, shape: _Shape) -> Tensor:
    """Hugging Face q, k, v (weights or biases) -> Megatron's grouped fused rows."""
    rest = q.shape[1:]
    groups, n, hd = shape.num_kv_heads, shape.heads_per_group, shape.head_dim
    fused = torch.cat(
        (
            q.reshape(groups, n * hd, *rest),
            k.reshape(groups, hd, *rest),
            v.reshape(groups, hd, *rest),
        ),
        dim=1,
    )
    return fused.reshape(shape.qkv_rows, *rest)


def _split_qkv(fused: Tensor, shape: _Shape) -> tuple[Tensor, Tensor, Tensor]:
    """Megatron's grouped fused rows -> Hugging Face q, k, v."""
    rest = fused.shape[1:]
    groups, n, hd = shape.num_kv_heads, shape.heads_per_group, shape.head_dim
    q, k, v = fused.reshape(groups, (n + 2) * hd, *rest).split((n * hd, hd, hd), dim=1)
    return (
        q.reshape(shape.num_heads * hd, *rest),
        k.reshape(groups * hd, *rest),
        v.reshape(groups * hd, *rest),
    )


class _Source:
    """A Hugging Face state dict read key by key, with shapes checked and leftovers reported."""

    def __init__(self, state_dict: Mapping[str, Tensor]) -> None:
        self._state = state_dict
        self._unused = {k for k in state_dict if not k.endswith(_HF_IGNORED_SUFFIXES)}

    def take(self, key: str, shape: tuple[int, ...]) -> Tensor:
        if key not in self._state:
            raise KeyError(f"the Hugging Face state dict has no {key!r}")
        tensor = self._state[key]
        if tuple(tensor.shape) != shape:
            raise ValueError(f"{key} has shape {tuple(tensor.shape)}, the config implies {shape}")
        self._unused.discard(key)
        return tensor

    def skip(self, key: str) -> None:
        self._unused.discard(key)

    def finish(self) -> None:
        if self._unused:
            raise ValueError(
                "the Hugging Face state dict has weights the conversion does not know: "
                + ", ".join(sorted(self._unused))
            )


def hf_to_megatron(
    state_dict: Mapping[str, Tensor],
    hf_config: Any,
    *,
    tensor_parallel: int = 1,
    layer_spec: LayerSpec = "local",
) -> list[dict[str, Tensor]]:
    """Converts a Hugging Face Llama / Qwen2 state dict to Megatron-core ``GPTModel`` shards.

    Args:
        state_dict: the model's ``state_dict()`` (``lm_head.weight`` may be left out when the
            embeddings are tied; it is ignored then).
        hf_config: the model's Hugging Face config (``LlamaConfig``, ``Qwen2Config``).
        tensor_parallel: the number of tensor-parallel ranks to split the weights over.
        layer_spec: ``"local"`` (``get_gpt_layer_local_spec``) or ``"te"`` (the Transformer
            Engine spec, whose norms live in the following linear layer).

    Returns:
        One state dict per tensor-parallel rank, in rank order, holding the whole model (split it
        over pipeline stages with :func:`split_pipeline_stages`). Its tensors keep their dtype and
        may share memory with ``state_dict``'s; no ``_extra_state`` entries are made.

    Raises:
        ValueError: an unsupported architecture, sizes that do not divide by
            ``tensor_parallel``, a tensor whose shape disagrees with the config, or weights the
            conversion does not know.
        KeyError: a weight the config implies is missing.

    Example:
        >>> import torch
        >>> from transformers import LlamaConfig, LlamaForCausalLM
        >>> config = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=24,
        ...                      num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2)
        >>> hf = LlamaForCausalLM(config).state_dict()
        >>> shards = hf_to_megatron(hf, config, tensor_parallel=2)
        >>> shards[1]["decoder.layers.0.self_attention.linear_qkv.weight"].shape  # (4+2*2)*4/2
        torch.Size([16, 16])
        >>> shards[0]["decoder.layers.0.mlp.linear_fc1.weight"].shape  # gate and up, 12 rows each
        torch.Size([24, 16])
        >>> back = megatron_to_hf(shards, config)
        >>> all(torch.equal(back[k], v) for k, v in hf.items())
        True
    """
    shape = _shape(hf_config)
    _check_tensor_parallel(shape, tensor_parallel)
    names = _layer_spec_names(layer_spec)
    t = tensor_parallel
    source = _Source(state_dict)
    shards: list[dict[str, Tensor]] = [{} for _ in range(t)]

    def split(key: str, tensor: Tensor, dim: int) -> None:
        for shard, part in zip(shards, tensor.chunk(t, dim=dim), strict=True):
            shard[key] = part.contiguous()

    def replicate(key: str, tensor: Tensor) -> None:
        for shard in shards:
            shard[key] = tensor

    h, hd, ffn = shape.hidden_size, shape.head_dim, shape.ffn_hidden_size
    q_rows, kv_rows = shape.num_heads * hd, shape.num_kv_heads * hd
    split(
        "embedding.word_embeddings.weight",
        source.take("model.embed_tokens.weight", (shape.vocab_size, h)),
        0,
    )
    for i in range(shape.num_layers):
        hf, mg = f"model.layers.{i}.", f"decoder.layers.{i}."
        replicate(mg + names.input_norm, source.take(hf + "input_layernorm.weight", (h,)))
        attn = hf + "self_attn."
        qkv_shapes = (("weight", (q_rows, h), (kv_rows, h)),)
        if shape.qkv_bias:
            qkv_shapes += (("bias", (q_rows,), (kv_rows,)),)
        for kind, q_shape, kv_shape in qkv_shapes:
            q = source.take(f"{attn}q_proj.{kind}", q_shape)
            k = source.take(f"{attn}k_proj.{kind}", kv_shape)
            v = source.take(f"{attn}v_proj.{kind}", kv_shape)
            split(f"{mg}self_attention.linear_qkv.{kind}", _fuse_qkv(q, k, v, shape), 0)
        split(
            mg + "self_attention.linear_proj.weight",
            source.take(attn + "o_proj.weight", (h, q_rows)),
            1,
        )
        replicate(mg + names.mlp_norm, source.take(hf + "post_attention_layernorm.weight", (h,)))
        gates = source.take(hf + "mlp.gate_proj.weight", (ffn, h)).chunk(t, dim=0)
        ups = source.take(hf + "mlp.up_proj.weight", (ffn, h)).chunk(t, dim=0)
        for shard, gate, up in zip(shards, gates, ups, strict=True):
            shard[mg + "mlp.linear_fc1.weight"] = torch.cat((gate, up), dim=0)
        split(mg + "mlp.linear_fc2.weight", source.take(hf + "mlp.down_proj.weight", (h, ffn)), 1)
    replicate("decoder.final_layernorm.weight", source.take("model.norm.weight", (h,)))
    if shape.tied:
        source.skip("lm_head.weight")
    else:
        split("output_layer.weight", source.take("lm_head.weight", (shape.vocab_size, h)), 0)
    source.finish()
    return shards


def _megatron_keys(shape: _Shape, names: _Names) -> list[str]:
    keys = ["embedding.word_embeddings.weight"]
    for i in range(shape.num_layers):
        mg = f"decoder.layers.{i}."
        keys += [mg + names.input_norm, mg + "self_attention.linear_qkv.weight"]
        if shape.qkv_bias:
            keys.append(mg + "self_attention.linear_qkv.bias")
        keys += [
            mg + "self_attention.linear_proj.weight",
            mg + names.mlp_norm,
            mg + "mlp.linear_fc1.weight",
            mg + "mlp.linear_fc2.weight",
        ]
    keys.append("decoder.final_layernorm.weight")
    if not shape.tied:
        keys.append("output_layer.weight")
    return keys


def megatron_to_hf(
    shards: Sequence[Mapping[str, Tensor]],
    hf_config: Any,
    *,
    layer_spec: LayerSpec = "local",
) -> dict[str, Tensor]:
    """Converts Megatron-core ``GPTModel`` tensor-parallel shards back to a Hugging Face state dict.

    The inverse of :func:`hf_to_megatron`: bit-exact, in the key order of the Hugging Face
    model's ``state_dict()``.

    Args:
        shards: one whole-model state dict per tensor-parallel rank, in rank order (merge
            pipeline stages first with :func:`merge_pipeline_stages`); ``*._extra_state``
            entries are ignored, so a Megatron ``model.state_dict()`` can be passed as is.
        hf_config: the Hugging Face config of the model the weights are for.
        layer_spec: the layer spec the shards come from, ``"local"`` or ``"te"``.

    Returns:
        The Hugging Face state dict. With tied embeddings ``lm_head.weight`` is the same tensor as
        ``model.embed_tokens.weight``, as in the model's own ``state_dict()``.

    Raises:
        ValueError: an unsupported architecture, a number of shards the sizes do not divide by,
            unknown keys, replicated weights that differ between ranks, or shapes that disagree
            with the config.
        KeyError: a weight the config implies is missing from a shard.
    """
    shape = _shape(hf_config)
    names = _layer_spec_names(layer_spec)
    if not shards:
        raise ValueError("megatron_to_hf needs at least one shard")
    t = len(shards)
    _check_tensor_parallel(shape, t)
    expected = _megatron_keys(shape, names)
    for rank, shard in enumerate(shards):
        present = {k for k in shard if not k.endswith(_EXTRA_STATE)}
        missing = [k for k in expected if k not in present]
        if missing:
            raise KeyError(f"Megatron shard {rank} has no {', '.join(missing)}")
        unknown = present.difference(expected)
        if unknown:
            hint = " (the embeddings are tied: no output_layer.weight)" if shape.tied else ""
            raise ValueError(
                f"Megatron shard {rank} has weights the conversion does not know{hint}: "
                + ", ".join(sorted(unknown))
            )

    def gather(key: str, dim: int) -> Tensor:
        if t == 1:  # the tensor itself, not a copy
            return shards[0][key]
        return torch.cat([shard[key] for shard in shards], dim=dim)

    def replicated(key: str) -> Tensor:
        first = shards[0][key]
        for rank, shard in enumerate(shards[1:], start=1):
            if not torch.equal(shard[key], first):
                raise ValueError(f"{key} differs between tensor-parallel ranks 0 and {rank}")
        return first

    def checked(key: str, tensor: Tensor, expected_shape: tuple[int, ...]) -> Tensor:
        if tuple(tensor.shape) != expected_shape:
            raise ValueError(
                f"{key} gathered over {t} ranks has shape {tuple(tensor.shape)}, "
                f"the config implies {expected_shape}"
            )
        return tensor

    h, hd, ffn = shape.hidden_size, shape.head_dim, shape.ffn_hidden_size
    out: dict[str, Tensor] = {}
    key = "embedding.word_embeddings.weight"
    out["model.embed_tokens.weight"] = checked(key, gather(key, 0), (shape.vocab_size, h))
    for i in range(shape.num_layers):
        hf, mg = f"model.layers.{i}.", f"decoder.layers.{i}."
        kinds = (("weight", (shape.qkv_rows, h)),)
        if shape.qkv_bias:
            kinds += (("bias", (shape.qkv_rows,)),)
        fused = {}
        for kind, fused_shape in kinds:
            key = f"{mg}self_attention.linear_qkv.{kind}"
            fused[kind] = _split_qkv(checked(key, gather(key, 0), fused_shape), shape)
        for index, proj in enumerate(("q_proj", "k_proj", "v_proj")):
            for kind in fused:
                out[f"{hf}self_attn.{proj}.{kind}"] = fused[kind][index]
        key = mg + "self_attention.linear_proj.weight"
        out[hf + "self_attn.o_proj.weight"] = checked(
            key, gather(key, 1), (h, shape.num_heads * hd)
        )
        key = mg + "mlp.linear_fc1.weight"
        halves = [shard[key].chunk(2, dim=0) for shard in shards]
        out[hf + "mlp.gate_proj.weight"] = checked(
            key, torch.cat([gate for gate, _ in halves], dim=0), (ffn, h)
        )
        out[hf + "mlp.up_proj.weight"] = checked(
            key, torch.cat([up for _, up in halves], dim=0), (ffn, h)
        )
        key = mg + "mlp.linear_fc2.weight"
        out[hf + "mlp.down_proj.weight"] = checked(key, gather(key, 1), (h, ffn))
        for hf_name, mg_name in (
            ("input_layernorm.weight", names.input_norm),
            ("post_attention_layernorm.weight", names.mlp_norm),
        ):
            out[hf + hf_name] = checked(mg + mg_name, replicated(mg + mg_name), (h,))
    key = "decoder.final_layernorm.weight"
    out["model.norm.weight"] = checked(key, replicated(key), (h,))
    if shape.tied:
        out["lm_head.weight"] = out["model.embed_tokens.weight"]
    else:
        key = "output_layer.weight"
        out["lm_head.weight"] = checked(key, gather(key, 0), (shape.vocab_size, h))
    return out


def layers_of_stage(num_layers: int, pipeline_parallel: int, stage: int) -> range:
    """The (global) indices of the transformer layers pipeline stage ``stage`` holds.

    Megatron's even split: every stage holds ``num_layers / pipeline_parallel`` consecutive
    layers (uneven first/last stages and virtual pipeline stages are not modelled).

    Args:
        num_layers: the model's number of transformer layers.
        pipeline_parallel: the number of pipeline stages.
        stage: the stage, from 0.

    Returns:
        The layer indices, in order; stage-local index ``j`` is global index ``range[j]``.

    Raises:
        ValueError: ``num_layers`` does not divide by ``pipeline_parallel``, or no such stage.

    Example:
        >>> list(layers_of_stage(8, 4, 1))
        [2, 3]
    """
    if not isinstance(pipeline_parallel, int) or pipeline_parallel < 1:
        raise ValueError(f"pipeline_parallel must be a positive int, got {pipeline_parallel!r}")
    if num_layers % pipeline_parallel:
        raise ValueError(
            f"num_layers={num_layers} does not divide by pipeline_parallel={pipeline_parallel}"
        )
    if not 0 <= stage < pipeline_parallel:
        raise ValueError(f"stage {stage} is not one of the {pipeline_parallel} pipeline stages")
    per_stage = num_layers // pipeline_parallel
    return range(stage * per_stage, (stage + 1) * per_stage)


def split_pipeline_stages(
    shard: Mapping[str, Tensor], hf_config: Any, *, pipeline_parallel: int
) -> list[dict[str, Tensor]]:
    """Splits one tensor-parallel rank's whole-model state dict into its pipeline stages.

    Layer keys are renumbered from 0 within each stage, as Megatron numbers them. With tied
    embeddings and more than one stage, the last stage gets ``output_layer.weight``, a copy (the
    same tensor) of the word embeddings.

    Args:
        shard: one rank's state dict from :func:`hf_to_megatron`.
        hf_config: the model's Hugging Face config (for the layer count and the tying).
        pipeline_parallel: the number of pipeline stages.

    Returns:
        One state dict per stage, in stage order.

    Raises:
        ValueError: the layers do not divide by ``pipeline_parallel``, or an unknown key.

    Example:
        >>> from transformers import LlamaConfig
        >>> config = LlamaConfig(num_hidden_layers=4, tie_word_embeddings=False)
        >>> stages = split_pipeline_stages(
        ...     {"decoder.layers.3.mlp.linear_fc2.weight": 0, "output_layer.weight": 1},
        ...     config, pipeline_parallel=2)
        >>> stages
        [{}, {'decoder.layers.1.mlp.linear_fc2.weight': 0, 'output_layer.weight': 1}]
    """
    shape = _shape(hf_config)
    stages: list[dict[str, Tensor]] = [{} for _ in range(pipeline_parallel)]
    ranges = [layers_of_stage(shape.num_layers, pipeline_parallel, p) for p in range(len(stages))]
    per_stage = len(ranges[0])
    for key, tensor in shard.items():
        match = _LAYER_KEY.fullmatch(key)
        if match:
            index = int(match[1])
            if index >= shape.num_layers:
                raise ValueError(f"{key}: the model has {shape.num_layers} layers")
            stage = index // per_stage
            stages[stage][f"decoder.layers.{index - ranges[stage].start}.{match[2]}"] = tensor
        elif key.startswith("embedding."):
            stages[0][key] = tensor
        elif key.startswith(("decoder.final_layernorm.", "output_layer.")):
            stages[-1][key] = tensor
        else:
            raise ValueError(f"unknown Megatron key {key!r}")
    embedding = "embedding.word_embeddings.weight"
    if shape.tied and pipeline_parallel > 1 and embedding in shard:
        stages[-1]["output_layer.weight"] = shard[embedding]
    return stages


def merge_pipeline_stages(
    stages: Sequence[Mapping[str, Tensor]], hf_config: Any
) -> dict[str, Tensor]:
    """Joins one tensor-parallel rank's pipeline stages into a whole-model state dict.

    The inverse of :func:`split_pipeline_stages`: layer keys are renumbered globally, and with
    tied embeddings the last stage's copy of the word embeddings (``output_layer.weight``) is
    dropped.

    Args:
        stages: the rank's state dict of every pipeline stage, in stage order.
        hf_config: the model's Hugging Face config.

    Returns:
        The rank's whole-model state dict, ready for :func:`megatron_to_hf`.

    Raises:
        ValueError: the layers do not divide by the number of stages, a stage holds a layer it
            should not, or a key appears in two stages.
    """
    shape = _shape(hf_config)
    pipeline_parallel = len(stages)
    merged: dict[str, Tensor] = {}
    for stage, state in enumerate(stages):
        layers = layers_of_stage(shape.num_layers, pipeline_parallel, stage)
        last = stage == pipeline_parallel - 1
        for key, tensor in state.items():
            match = _LAYER_KEY.fullmatch(key)
            if match:
                local = int(match[1])
                if local >= len(layers):
                    raise ValueError(f"stage {stage} holds {len(layers)} layers but has {key!r}")
                key = f"decoder.layers.{layers[local]}.{match[2]}"
            elif shape.tied and last and pipeline_parallel > 1 and key.startswith("output_layer."):
                continue
            if key in merged:
                raise ValueError(f"{key!r} appears in more than one pipeline stage")
            merged[key] = tensor
    return merged


def _rope_theta(hf_config: Any) -> float:
    params = getattr(hf_config, "rope_parameters", None) or {}
    scaling = getattr(hf_config, "rope_scaling", None) or {}
    rope_type = params.get("rope_type", scaling.get("rope_type", scaling.get("type", "default")))
    if rope_type != "default":
        raise ValueError(
            f"rope_type {rope_type!r} is not supported: Megatron's GPTModel is built here with "
            "plain rotary embeddings"
        )
    return float(params.get("rope_theta", getattr(hf_config, "rope_theta", 10000.0)))


def transformer_config_kwargs(hf_config: Any) -> dict[str, Any]:
    """Keyword arguments for Megatron-core's ``TransformerConfig`` describing ``hf_config``'s model.

    Only the architecture; parallel sizes, precision and fusions are the caller's to add.

    Args:
        hf_config: a Llama or Qwen2 Hugging Face config.

    Returns:
        ``num_layers``, ``hidden_size``, ``num_attention_heads``, ``num_query_groups``,
        ``kv_channels``, ``ffn_hidden_size``, ``normalization``, ``layernorm_epsilon``,
        ``gated_linear_unit``, ``activation_func``, ``add_bias_linear``, ``add_qkv_bias``,
        ``hidden_dropout`` and ``attention_dropout``.

    Example:
        >>> from transformers import Qwen2Config
        >>> kwargs = transformer_config_kwargs(Qwen2Config(num_key_value_heads=4))
        >>> kwargs["num_query_groups"], kwargs["add_qkv_bias"], kwargs["normalization"]
        (4, True, 'RMSNorm')
    """
    shape = _shape(hf_config)
    return {
        "num_layers": shape.num_layers,
        "hidden_size": shape.hidden_size,
        "num_attention_heads": shape.num_heads,
        "num_query_groups": shape.num_kv_heads,
        "kv_channels": shape.head_dim,
        "ffn_hidden_size": shape.ffn_hidden_size,
        "normalization": "RMSNorm",
        "layernorm_epsilon": hf_config.rms_norm_eps,
        "gated_linear_unit": True,
        "activation_func": torch.nn.functional.silu,
        "add_bias_linear": False,
        "add_qkv_bias": shape.qkv_bias,
        "hidden_dropout": 0.0,
        "attention_dropout": float(getattr(hf_config, "attention_dropout", 0.0)),
    }


def gpt_model_kwargs(hf_config: Any) -> dict[str, Any]:
    """Keyword arguments for Megatron-core's ``GPTModel`` (besides its config and layer spec).

    Args:
        hf_config: a Llama or Qwen2 Hugging Face config (plain rotary embeddings only).

    Returns:
        ``vocab_size``, ``max_sequence_length``, ``position_embedding_type``, ``rotary_base``
        and ``share_embeddings_and_output_weights``.

    Raises:
        ValueError: an unsupported architecture or rotary-embedding scaling.
    """
    shape = _shape(hf_config)
    return {
        "vocab_size": shape.vocab_size,
        "max_sequence_length": hf_config.max_position_embeddings,
        "position_embedding_type": "rope",
        "rotary_base": _rope_theta(hf_config),
        "share_embeddings_and_output_weights": shape.tied,
    }
