"""``MegatronStrategy``: the policy trained as Megatron-core's ``GPTModel``.

A worker loads the Hugging Face model, converts its weights into a local-spec ``GPTModel``
(:func:`~trainer.strategies.megatron_weights.hf_to_megatron`) and trains that. Everything that
leaves the worker is converted back to Hugging Face names
(:func:`~trainer.strategies.megatron_weights.megatron_to_hf`): the generators' weights, the
checkpoint's ``model/`` folder and its AdamW moments (a moment has its weight's shape, so it
converts the same way). So a checkpoint moves between ``megatron``, ``torch``, ``fsdp2`` and
``deepspeed``.

Workers form groups of ``tensor_parallel`` consecutive ranks: each holds 1/``tensor_parallel``
of every attention and MLP matrix and of the vocabulary (Megatron's tensor parallelism), and
all ranks of a group see the same sequences. The groups split each batch (data parallel) and
add their gradients with one all-reduce a step. Each group's loss is already normalised by the
whole batch's total (``train_step(part, total=...)``), so the sum is the gradient one process
would compute:

    grad = sum_g grad(loss_g)

The gradient norm for clipping counts each sharded matrix's shards once (summed over the
tensor-parallel group) and each replicated weight (the norms, a value head) once.

Megatron-core's forward is written for CUDA (it asks ``torch.cuda.current_device()`` for
buffers and its RNG tracker holds CUDA generator states), so the strategy runs on GPUs; the
CPU tests run it with those two spots patched
(``tests/trainer/strategies/test_megatron_strategy.py``).
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
from trainer.strategies.sharded import ShardedStrategy
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
    tensor_parallel: int = 1,
) -> nn.Module:
    """A local-spec Megatron-core ``GPTModel`` for ``hf_config``'s model (this rank's
    tensor-parallel shard), made on the CPU (move it with ``.to``). Starts Megatron's parallel
    state (``tensor_parallel``, pipeline size 1) if none is. ``activation_checkpointing``:
    Megatron's full recompute of every layer. ``cuda``: it will run on a GPU (Megatron's CUDA
    RNG tracker is seeded with ``seed``)."""
    from megatron.core import parallel_state
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed
    from megatron.core.transformer.transformer_config import TransformerConfig

    if not parallel_state.model_parallel_is_initialized():
        parallel_state.initialize_model_parallel(tensor_parallel, 1)
    started = parallel_state.get_tensor_model_parallel_world_size()
    if started != tensor_parallel:
        raise ValueError(
            f"Megatron's parallel state runs tensor_parallel={started}, not {tensor_parallel}"
        )
    if cuda:
        model_parallel_cuda_manual_seed(seed)  # the RNG state attention dropout forks
    config = TransformerConfig(
        **transformer_config_kwargs(hf_config),
        tensor_model_parallel_size=tensor_parallel,
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
        # tensor parallel: each rank computes its part of the vocabulary, then they are joined
        logits, _ = gpt.output_layer(hidden[rows, cols], weight=weight, runtime_gather_output=True)
        return hidden, logits


class MegatronStrategy(ShardedStrategy):
    """Trains a Hugging Face Llama / Qwen2 policy as a Megatron-core ``GPTModel``.

    Needs ``torch.distributed`` initialised (one rank a worker). LoRA is refused (Megatron-core
    has no peft integration here), and so is a pipeline parallel size above 1.

    Args:
        model: the Hugging Face causal LM to start from, on the device to train on. Its
            weights are copied into the ``GPTModel``; it is then moved to the meta device and
            kept only to write ``model/`` folders.
        tensor_parallel: ranks that split each matrix (the world size must be a multiple).
        pipeline_parallel: ranks that split the layers (1 only, for now).
        seed: Megatron's CUDA RNG seed.
        activation_checkpointing: recompute each layer's activations in the backward pass
            (Megatron's full, uniform recompute).
        **options: as :class:`~trainer.strategies.torch_strategy.TorchStrategy`.
    """

    # tensor-parallel ranks see the same micro-batches; the data-parallel groups meet once a
    # step (the gradient all-reduce), so no group runs filler micro-batches
    collective = False

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
        if pipeline_parallel != 1:
            raise ValueError(
                f"train.strategy=megatron trains with pipeline_parallel=1 for now (got "
                f"{pipeline_parallel}); the weight conversion splits pipeline stages "
                "(megatron_weights.py), the training loop does not yet"
            )
        if dist.get_world_size() % tensor_parallel:
            raise ValueError(
                f"{dist.get_world_size()} workers do not divide into tensor-parallel groups of "
                f"{tensor_parallel}"
            )
        options.pop("packing", None)
        self.hf_config = model.config
        first = next(model.parameters())
        device, self._dtype = first.device, first.dtype
        build = {
            "dtype": self._dtype,
            "seed": seed,
            "cuda": device.type == "cuda",
            "tensor_parallel": tensor_parallel,
        }
        gpt = build_gpt_model(
            self.hf_config, activation_checkpointing=activation_checkpointing, **build
        )
        from megatron.core import parallel_state

        self.tensor_parallel = tensor_parallel
        self._tp_rank = parallel_state.get_tensor_model_parallel_rank()
        self._tp_group = parallel_state.get_tensor_model_parallel_group()
        self._dp_group = parallel_state.get_data_parallel_group()
        self._dp_size = parallel_state.get_data_parallel_world_size()
        self._load_hf(gpt, model.state_dict())
        self._hf_names = [name for name, _ in model.named_parameters()]  # tied: once
        self._skeleton = model.to("meta")  # its config and save_pretrained, no weights
        policy = MegatronPolicy(gpt.to(device), self.hf_config)
        super().__init__(policy, packing=False, reference=False, **options)
        if reference:  # a second GPTModel (a deep copy would copy Megatron's process groups)
            frozen = build_gpt_model(self.hf_config, **build)
            frozen.load_state_dict(gpt.state_dict())
            self._reference = MegatronPolicy(frozen.to(device), self.hf_config)
            self._reference.eval().requires_grad_(False)

    # ------------------------------------------------------------------ training
    def _scorer(self) -> nn.Module:
        return self.model

    def _optimizer_step(self) -> float:
        """Adds the data-parallel groups' gradients, clips their global norm, steps AdamW."""
        parameters = [p for _, p in self.trainable_parameters()]
        for p in parameters:  # a group with no sequences this step adds zeros
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        if self._dp_size > 1:
            _all_reduce_sum([p.grad for p in parameters], group=self._dp_group)
        norm = self._gradient_norm(parameters)
        max_norm = self.grad_clip if self.grad_clip is not None else float("inf")
        scale = max_norm / (norm + 1e-6)  # as torch.nn.utils.clip_grad_norm_
        if scale < 1.0:
            for p in parameters:
                p.grad.mul_(scale)
        self.optimizer.step()
        return norm

    def _gradient_norm(self, parameters: list[nn.Parameter]) -> float:
        """||grad|| of the whole model: shards summed over the tensor-parallel group,
        replicated weights counted once."""
        device = parameters[0].grad.device
        squares = {True: torch.zeros((), device=device), False: torch.zeros((), device=device)}
        for p in parameters:
            sharded = bool(getattr(p, "tensor_model_parallel", False))
            squares[sharded] = squares[sharded] + p.grad.float().pow(2).sum()
        if self.tensor_parallel > 1:
            dist.all_reduce(squares[True], group=self._tp_group)
        return float((squares[True] + squares[False]).sqrt())

    # ------------------------------------------------------------------ weights
    def _megatron_state(self) -> dict[str, torch.Tensor]:
        return {
            k: v.detach()
            for k, v in self.model.model.state_dict().items()
            if isinstance(v, torch.Tensor)  # not Megatron's _extra_state entries
        }

    def _tensor_parallel_shards(self, state: dict[str, torch.Tensor]) -> list[dict]:
        """``state`` of every rank of this tensor-parallel group, in rank order (a collective
        over the group; with more than one rank, the tensors come back on the CPU)."""
        if self.tensor_parallel == 1:
            return [state]
        shards: list = [None] * self.tensor_parallel
        cpu = {k: v.cpu() for k, v in state.items()}
        dist.all_gather_object(shards, cpu, group=self._tp_group)
        return shards

    def _load_hf(self, gpt: nn.Module, weights: dict[str, torch.Tensor]) -> None:
        """Copies Hugging Face weights into this rank's shard ``gpt``."""
        state = hf_to_megatron(weights, self.hf_config, tensor_parallel=self.tensor_parallel)
        result = gpt.load_state_dict(state[self._tp_rank], strict=False)
        missing = [k for k in result.missing_keys if not k.endswith("._extra_state")]
        if missing or result.unexpected_keys:
            raise ValueError(
                f"Megatron GPTModel does not match the converted weights: missing {missing}, "
                f"unexpected {result.unexpected_keys}"
            )

    def inference_state_dict(self) -> dict[str, torch.Tensor]:
        """The policy's weights under Hugging Face names (on the CPU; with tensor
        parallelism, a collective: every rank must call it)."""
        shards = self._tensor_parallel_shards(self._megatron_state())
        weights = megatron_to_hf(shards, self.hf_config)
        copied: dict[int, torch.Tensor] = {}  # tied weights stay one tensor
        return {k: copied.setdefault(id(v), v.cpu()) for k, v in weights.items()}

    def weight_sizes(self) -> dict[str, int]:
        """Bytes of each weight, by its Hugging Face name (read from the weightless model)."""
        return {k: v.numel() * v.element_size() for k, v in self._skeleton.state_dict().items()}

    def gather_weights(self, names: list[str]) -> dict[str, torch.Tensor]:
        """These weights under Hugging Face names, on the CPU. Only the decoder layers they
        belong to are converted (and gathered over the tensor-parallel group), so a weight
        sync by buckets converts each layer once."""
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
        wanted = set(names)
        weights = {}
        for name, value in megatron_to_hf(self._tensor_parallel_shards(part), config).items():
            if name.startswith("model.layers."):
                _, _, index, rest = name.split(".", 3)
                name = f"model.layers.{layers[int(index)]}.{rest}"
            if name in wanted:
                weights[name] = value.cpu()
        return weights

    def _hf_model(self) -> nn.Module:
        return self._skeleton

    def _load_model_folder(self, folder: Path) -> None:
        self._load_hf(self.model.model, read_model_folder(folder))

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
            key: megatron_to_hf(
                self._tensor_parallel_shards({k: v[key] for k, v in policy.items()}),
                self.hf_config,
            )
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
                    key: hf_to_megatron(
                        {k: v[key] for k, v in policy.items()},
                        self.hf_config,
                        tensor_parallel=self.tensor_parallel,
                    )[self._tp_rank]
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


def _all_reduce_sum(tensors: list[torch.Tensor], group=None, bucket_values: int = 2**25) -> None:
    """Sums ``tensors`` over the process ``group`` in place, a flat bucket at a time."""
    bucket: list[torch.Tensor] = []
    held = 0
    for tensor in [*tensors, None]:
        if tensor is not None:
            bucket.append(tensor)
            held += tensor.numel()
        if bucket and (tensor is None or held >= bucket_values):
            flat = torch.cat([t.reshape(-1) for t in bucket])
            dist.all_reduce(flat, group=group)
            for t, part in zip(bucket, flat.split([t.numel() for t in bucket]), strict=True):
                t.copy_(part.view_as(t))
            bucket, held = [], 0
