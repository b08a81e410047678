"""``MegatronStrategy``: the policy trained as Megatron-core's ``GPTModel``.

A worker loads the Hugging Face model, converts its weights into a local-spec ``GPTModel``
(:func:`~trainer.strategies.megatron_weights.hf_to_megatron`) and trains that. Everything that
leaves the worker is converted back to Hugging Face names
(:func:`~trainer.strategies.megatron_weights.megatron_to_hf`): the generators' weights, the
checkpoint's ``model/`` folder and its AdamW moments (a moment has its weight's shape, so it
converts the same way). So a checkpoint moves between ``megatron``, ``torch``, ``fsdp2`` and
``deepspeed``.

Tensor and pipeline parallel sizes are 1: every worker holds the whole model. The workers
split each batch (data parallel) and add their gradients with one all-reduce a step. Each
worker's loss is already normalised by the whole batch's total (``train_step(part,
total=...)``), so the sum is the gradient one process would compute:

    grad = sum_w grad(loss_w)

Megatron-core's forward is written for CUDA (it asks ``torch.cuda.current_device()`` for
buffers and its RNG tracker holds CUDA generator states), so the strategy runs on GPUs; the
CPU tests run it with those two spots patched (``tests/trainer/test_megatron_strategy.py``).
Sequences are padded, not packed: the local layer spec has no variable-length attention.

Example:
    >>> import torch.distributed as dist  # doctest: +SKIP
    >>> dist.init_process_group("nccl", ...)  # doctest: +SKIP
    >>> strategy = MegatronStrategy(hf_model.cuda(), pad_id=0)  # doctest: +SKIP
    >>> strategy.train_step(batch)["grad_norm"]  # doctest: +SKIP
"""

from __future__ import annotations

import copy
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

from trainer.strategies.logprobs import SelectedLogits
from trainer.strategies.megatron_weights import (
    gpt_model_kwargs,
    hf_to_megatron,
    megatron_to_hf,
    transformer_config_kwargs,
)
from trainer.strategies.sharded import _ShardedStrategy
from trainer.strategies.torch_strategy import read_model_folder

#: AdamW's per-weight moments, converted between layouts like the weights themselves.
_MOMENTS = ("exp_avg", "exp_avg_sq")


def build_gpt_model(
    hf_config,
    *,
    dtype: torch.dtype = torch.float32,
    seed: int = 0,
    activation_checkpointing: bool = False,
    cuda: bool = False,
) -> nn.Module:
    """A local-spec Megatron-core ``GPTModel`` for ``hf_config``'s model, made on the CPU
    (move it with ``.to``). Starts Megatron's parallel state (sizes 1) if none is.
    ``activation_checkpointing``: Megatron's full recompute of every layer. ``cuda``: it will
    run on a GPU (Megatron's CUDA RNG tracker is seeded with ``seed``)."""
    from megatron.core import parallel_state
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed
    from megatron.core.transformer.transformer_config import TransformerConfig

    if not parallel_state.model_parallel_is_initialized():
        parallel_state.initialize_model_parallel(1, 1)
    if cuda:
        model_parallel_cuda_manual_seed(seed)  # the RNG state attention dropout forks
    config = TransformerConfig(
        **transformer_config_kwargs(hf_config),
        use_cpu_initialization=True,
        params_dtype=dtype,
        # the fused kernels need Apex or Transformer Engine, which rollenv does not install
        bias_dropout_fusion=False,
        apply_rope_fusion=False,
        masked_softmax_fusion=False,
        persist_layer_norm=False,
        gradient_accumulation_fusion=False,
        **(
            {
                "recompute_granularity": "full",
                "recompute_method": "uniform",
                "recompute_num_layers": 1,
            }
            if activation_checkpointing
            else {}
        ),
    )
    spec = get_gpt_layer_local_spec(normalization="RMSNorm")
    return GPTModel(config, spec, **gpt_model_kwargs(hf_config))


class MegatronPolicy(SelectedLogits):
    """A ``GPTModel`` behind :class:`SelectedLogits`' call: the decoder over every position,
    the output layer only where a token is selected.

    Args:
        gpt: the Megatron-core ``GPTModel``.
        hf_config: the Hugging Face config it was built from (``hidden_size`` for a value head).
    """

    def __init__(self, gpt: nn.Module, hf_config):
        nn.Module.__init__(self)
        self.model = gpt
        self.value_head = None
        self.config = hf_config

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None,
        position_ids: torch.Tensor | None,
        rows: torch.Tensor,
        cols: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(hidden states (batch, length, hidden), logits at (rows, cols))``.

        Rows are right-padded, so the causal mask alone keeps every real token from seeing
        padding; ``attention_mask`` and ``position_ids`` are not needed.
        """
        gpt = self.model
        length = input_ids.shape[1]
        positions = torch.arange(length, device=input_ids.device)[None].expand_as(input_ids)
        embedded = gpt.embedding(input_ids=input_ids, position_ids=positions)  # (length, b, h)
        causal = torch.ones(length, length, dtype=torch.bool, device=input_ids.device)
        hidden = gpt.decoder(
            hidden_states=embedded,
            attention_mask=causal.triu(diagonal=1)[None, None],  # True: not attended
            rotary_pos_emb=gpt.rotary_pos_emb(length),
        ).transpose(0, 1)
        weight = (
            gpt.shared_embedding_or_output_weight()
            if gpt.share_embeddings_and_output_weights
            else None
        )
        logits, _ = gpt.output_layer(hidden[rows, cols], weight=weight)
        return hidden, logits


class MegatronStrategy(_ShardedStrategy):
    """Trains a Hugging Face Llama / Qwen2 policy as a Megatron-core ``GPTModel``.

    Needs ``torch.distributed`` initialised (one rank a worker). LoRA is refused (Megatron-core
    has no peft integration here), and so are tensor or pipeline parallel sizes above 1.

    Args:
        model: the Hugging Face causal LM to start from, on the device to train on. Its
            weights are copied into the ``GPTModel``; it is then moved to the meta device and
            kept only to write ``model/`` folders.
        tensor_parallel, pipeline_parallel: Megatron's parallel sizes (1 only, for now).
        seed: Megatron's CUDA RNG seed.
        activation_checkpointing: recompute each layer's activations in the backward pass
            (Megatron's full, uniform recompute).
        **options: as :class:`~trainer.strategies.torch_strategy.TorchStrategy`.
    """

    collective = False  # data parallel: one all-reduce a step, none a micro-batch

    def __init__(
        self,
        model: nn.Module,
        *,
        tensor_parallel: int = 1,
        pipeline_parallel: int = 1,
        seed: int = 0,
        activation_checkpointing: bool = False,
        reference: bool = False,
        lora=None,
        **options,
    ):
        if lora is not None:
            raise ValueError("train.strategy=megatron does not train LoRA adapters; use fsdp2")
        if tensor_parallel != 1 or pipeline_parallel != 1:
            raise ValueError(
                f"train.strategy=megatron trains with tensor_parallel=1 and pipeline_parallel=1 "
                f"for now (got {tensor_parallel} and {pipeline_parallel}); the weight conversion "
                "supports both (megatron_weights.py), the training loop does not yet"
            )
        options.pop("packing", None)
        self.hf_config = model.config
        first = next(model.parameters())
        device, self._dtype = first.device, first.dtype
        gpt = build_gpt_model(
            self.hf_config,
            dtype=self._dtype,
            seed=seed,
            activation_checkpointing=activation_checkpointing,
            cuda=device.type == "cuda",
        )
        _load_hf_weights(gpt, model.state_dict(), self.hf_config)
        self._hf_names = [name for name, _ in model.named_parameters()]  # tied: once
        self._skeleton = model.to("meta")  # its config and save_pretrained, no weights
        policy = MegatronPolicy(gpt.to(device), self.hf_config)
        super().__init__(policy, packing=False, reference=False, **options)
        if reference:  # a second GPTModel (a deep copy would copy Megatron's process groups)
            frozen = build_gpt_model(
                self.hf_config, dtype=self._dtype, seed=seed, cuda=device.type == "cuda"
            )
            frozen.load_state_dict(gpt.state_dict())
            self._reference = MegatronPolicy(frozen.to(device), self.hf_config)
            self._reference.eval().requires_grad_(False)

    # ------------------------------------------------------------------ training
    def _scorer(self) -> nn.Module:
        return self.model

    def _optimizer_step(self) -> float:
        if self.world > 1:
            parameters = [p for _, p in self.trainable_parameters()]
            for p in parameters:  # a worker with no sequences this step adds zeros
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
            _all_reduce_sum([p.grad for p in parameters])
        return super()._optimizer_step()

    # ------------------------------------------------------------------ weights
    def _megatron_names(self) -> dict[str, nn.Parameter]:
        return dict(self.model.model.named_parameters())

    def _megatron_state(self) -> dict[str, torch.Tensor]:
        return {
            k: v.detach()
            for k, v in self.model.model.state_dict().items()
            if isinstance(v, torch.Tensor)  # not Megatron's _extra_state entries
        }

    def inference_state_dict(self) -> dict[str, torch.Tensor]:
        """The policy's weights under Hugging Face names (on the CPU)."""
        weights = megatron_to_hf([self._megatron_state()], self.hf_config)
        copied: dict[int, torch.Tensor] = {}  # tied weights stay one tensor
        return {k: copied.setdefault(id(v), v.cpu()) for k, v in weights.items()}

    def weight_sizes(self) -> dict[str, int]:
        """Bytes of each weight, by its Hugging Face name (read from the weightless model)."""
        return {k: v.numel() * v.element_size() for k, v in self._skeleton.state_dict().items()}

    def gather_weights(self, names: list[str]) -> dict[str, torch.Tensor]:
        """These weights under Hugging Face names, on the CPU. Only the decoder layers they
        belong to are converted, so a weight sync by buckets converts each layer once."""
        layers = sorted({int(n.split(".")[2]) for n in names if n.startswith("model.layers.")})
        state = self._megatron_state()
        part = {k: v for k, v in state.items() if not k.startswith("decoder.layers.")}
        for new, old in enumerate(layers):
            prefix = f"decoder.layers.{old}."
            part.update(
                {
                    f"decoder.layers.{new}.{k.removeprefix(prefix)}": v
                    for k, v in state.items()
                    if k.startswith(prefix)
                }
            )
        config = copy.copy(self.hf_config)
        config.num_hidden_layers = len(layers)
        weights = {}
        for name, value in megatron_to_hf([part], config).items():
            if name.startswith("model.layers."):
                _, _, index, rest = name.split(".", 3)
                name = f"model.layers.{layers[int(index)]}.{rest}"
            if name in names:
                weights[name] = value.cpu()
        return weights

    def _hf_model(self) -> nn.Module:
        return self._skeleton

    def _load_model_folder(self, folder: Path) -> None:
        _load_hf_weights(self.model.model, read_model_folder(folder), self.hf_config)

    # ------------------------------------------------------------------ optimizer state
    def optimizer_state_by_name(self) -> dict[str, dict[str, torch.Tensor]]:
        """AdamW's state under Hugging Face names, as every other strategy saves it."""
        own = super().optimizer_state_by_name()  # Megatron names, "model." first
        policy = {k.removeprefix("model."): v for k, v in own.items() if k.startswith("model.")}
        out = {k: v for k, v in own.items() if not k.startswith("model.")}  # the value head
        hf_names = self._hf_names
        if not any(policy.values()):  # no step taken yet
            return {**dict.fromkeys(hf_names, {}), **out}
        step = next(state["step"] for state in policy.values())
        moments = {
            key: megatron_to_hf([{k: v[key] for k, v in policy.items()}], self.hf_config)
            for key in _MOMENTS
        }
        for name in hf_names:
            out[name] = {"step": step.clone(), **{key: moments[key][name] for key in _MOMENTS}}
        return out

    def _set_optimizer_state_by_name(self, saved: dict[str, dict], folder: Path) -> None:
        policy = {k: v for k, v in saved.items() if not k.startswith("value_head.")}
        converted = {k: v for k, v in saved.items() if k.startswith("value_head.")}
        if any(policy.values()):
            if self.hf_config.tie_word_embeddings:
                policy.pop("lm_head.weight", None)
            try:
                moments = {
                    key: hf_to_megatron({k: v[key] for k, v in policy.items()}, self.hf_config)[0]
                    for key in _MOMENTS
                }
            except (KeyError, ValueError) as error:
                raise ValueError(
                    f"{folder} holds the optimizer of other parameters: {error}"
                ) from None
            step = next(state["step"] for state in policy.values())
            for name in moments["exp_avg"]:
                converted[f"model.{name}"] = {
                    "step": step.clone(),
                    **{key: moments[key][name] for key in _MOMENTS},
                }
        super()._set_optimizer_state_by_name(converted, folder)

    def local_bytes(self) -> dict[str, int]:
        tensors = list(self.model.parameters())
        if self.value_head is not None:
            tensors += list(self.value_head.parameters())
        states = [v for state in self.optimizer.state.values() for v in state.values()]
        return {
            "parameters": sum(t.numel() * t.element_size() for t in tensors),
            "optimizer": sum(v.numel() * v.element_size() for v in states if v.dim() > 0),
        }


def _load_hf_weights(gpt: nn.Module, weights: dict[str, torch.Tensor], hf_config) -> None:
    """Copies Hugging Face weights into ``gpt`` (in place; its device and dtype kept)."""
    (state,) = hf_to_megatron(weights, hf_config)
    result = gpt.load_state_dict(state, strict=False)
    missing = [k for k in result.missing_keys if not k.endswith("._extra_state")]
    if missing or result.unexpected_keys:
        raise ValueError(
            f"Megatron GPTModel does not match the converted weights: missing {missing}, "
            f"unexpected {result.unexpected_keys}"
        )


def _all_reduce_sum(tensors: list[torch.Tensor], bucket_values: int = 2**25) -> None:
    """Sums ``tensors`` over the process group in place, a flat bucket at a time."""
    bucket: list[torch.Tensor] = []
    held = 0
    for tensor in [*tensors, None]:
        if tensor is not None:
            bucket.append(tensor)
            held += tensor.numel()
        if bucket and (tensor is None or held >= bucket_values):
            flat = torch.cat([t.reshape(-1) for t in bucket])
            dist.all_reduce(flat)
            for t, part in zip(bucket, flat.split([t.numel() for t in bucket]), strict=True):
                t.copy_(part.view_as(t))
            bucket, held = [], 0
