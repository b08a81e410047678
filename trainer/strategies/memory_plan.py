r"""A memory plan per train worker, from the model's config, before anything loads.

A config that cannot fit fails in a second with one line naming the numbers and the knob to
turn, not after minutes of loading. Parameters are counted on the meta device (no weights);
then, per worker, with ``P`` parameters, ``T`` of them trained, ``b`` bytes per value of the
training dtype (4: float32) and ``N`` tokens per micro-batch:

* parameters = P*b, plus P*2 with ``mixed_precision`` (the bfloat16 compute copy);
  gradients = T*b; optimizer = 2*T*b (AdamW's exp_avg and exp_avg_sq).
* Sharding, as each strategy's registered ``MemoryLayout`` says: ``torch`` holds all three;
  ``fsdp2`` divides them by ``workers``; ``deepspeed`` ZeRO-1 divides the optimizer, ZeRO-2
  also the gradients, ZeRO-3 also the parameters; ``megatron`` divides all three by
  ``tensor_parallel * pipeline_parallel`` (the trainer runs one pipeline stage). Where
  parameters are sharded and gathered a layer at a time (fsdp2, ZeRO-3), the largest decoder
  layer is added unsharded: the all-gather buffer of the layer being computed.
* DeepSpeed offload: ``offload_optimizer`` moves the optimizer state to host memory,
  ``offload_params`` (ZeRO-3) the parameter partition; the bytes moved are ``offloaded``, in
  host memory, and not in ``total`` (the device's bytes). Only the device is checked.
* reference (``kl_coef > 0``, no LoRA): a frozen full copy, P*b, unsharded, on every worker.
  With LoRA the base model with adapters off is the reference: no copy.
* activations, see :func:`plan_memory`; a critic's value head (an estimator that
  ``needs_critic``) adds ``hidden_size + 1`` parameters.

Example:
    >>> import textwrap
    >>> from transformers import LlamaConfig
    >>> config = LlamaConfig(vocab_size=1000, hidden_size=64, intermediate_size=256,
    ...                      num_hidden_layers=2, num_attention_heads=4)
    >>> parameter_count(config)  # (total, trainable)
    (259392, 259392)
    >>> plan = plan_memory(config, strategy="deepspeed", workers=2, zero_stage=1,
    ...                    micro_batch_tokens=1024)
    >>> plan.optimizer == 2 * 4 * 259392 // 2 and plan.gradients == 4 * 259392
    True
    >>> plan.lines()[-1]
    '  total          24.78 MiB'
    >>> try:
    ...     check_fits(plan, available=8 * 2**20)
    ... except ConfigError as error:
    ...     print(textwrap.fill(str(error), 90))
    memory plan: deepspeed ×2 needs 24.78 MiB per worker (parameters 0.99 MiB, gradients 0.99
    MiB, optimizer 0.99 MiB, activations 21.81 MiB) but a worker has 8.00 MiB; lower
    optim.micro_batch_tokens (now 1024) or set train.activation_checkpointing=true
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from trainer.algorithms import ALGORITHMS
from trainer.config import ConfigError
from trainer.strategy_registry import (
    STRATEGIES,
    MemoryLayout,
    UnknownStrategyError,
    strategy_spec,
)

if TYPE_CHECKING:
    from trainer.config import Config, LoraConfig

__all__ = [
    "MemoryPlan",
    "available_memory_per_worker",
    "check_fits",
    "parameter_count",
    "plan_for_config",
    "plan_memory",
]

GIB = 2**30
MIB = 2**20
TERMS = ("parameters", "gradients", "optimizer", "activations", "reference")


def _human(n: int) -> str:
    return f"{n / GIB:.2f} GiB" if n >= GIB else f"{n / MIB:.2f} MiB"


@dataclass(frozen=True)
class MemoryPlan:
    """Bytes one train worker needs on its device, term by term (see the module docstring)."""

    strategy: str
    workers: int
    parameters: int
    gradients: int
    optimizer: int
    activations: int
    reference: int = 0
    offloaded: int = 0  # bytes moved to host memory (deepspeed offload), not in `total`
    # per term, the setting that shrinks it most (what check_fits names)
    advice: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def total(self) -> int:
        """Bytes on the device: the sum of the terms."""
        return sum(getattr(self, term) for term in TERMS)

    def lines(self) -> list[str]:
        """The plan as lines to print before a run starts."""
        rows = [f"memory plan per worker ({self.strategy} ×{self.workers}):"]
        rows += [f"  {term:<12} {_human(getattr(self, term)):>11}" for term in TERMS]
        host = f" (+ {_human(self.offloaded)} in host memory)" if self.offloaded else ""
        return [*rows, f"  {'total':<12} {_human(self.total):>11}{host}"]


def _counts(model_config: Any, lora: LoraConfig | None) -> tuple[int, int, int]:
    """(total, trainable, largest decoder layer) parameters of a meta-device instance."""
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(model_config)
    total = trainable = sum(p.numel() for p in model.parameters())
    if lora is not None:  # peft adds A (r×in) and B (out×r) to each targeted Linear
        targets = set(lora.target_modules)
        linears = [
            module
            for name, module in model.named_modules()
            if isinstance(module, nn.Linear) and name.rsplit(".", 1)[-1] in targets
        ]
        if not linears:
            raise ConfigError(
                f"model.lora.target_modules: no Linear layer of the model is named "
                f"{sorted(targets)}"
            )
        trainable = sum(lora.r * (m.in_features + m.out_features) for m in linears)
        total += trainable
    numel = lambda module: sum(p.numel() for p in module.parameters())  # noqa: E731
    stacks = [m for m in model.modules() if isinstance(m, nn.ModuleList)]
    layers = max(stacks, key=numel, default=nn.ModuleList())
    return total, trainable, max((numel(layer) for layer in layers), default=0)


def parameter_count(model_config: Any, lora: LoraConfig | None = None) -> tuple[int, int]:
    """(total, trainable) parameters of ``model_config``'s causal LM, loading no weights.

    With ``lora``, trainable are the adapters only: ``r * (in + out)`` per targeted Linear.

    Example:
        >>> from transformers import LlamaConfig
        >>> parameter_count(LlamaConfig(vocab_size=10, hidden_size=8, intermediate_size=16,
        ...                             num_hidden_layers=1, num_attention_heads=2))
        (824, 824)
    """
    total, trainable, _ = _counts(model_config, lora)
    return total, trainable


def plan_memory(
    model_config: Any,
    *,
    strategy: str = "torch",
    workers: int = 1,
    micro_batch_tokens: int = 4096,
    dtype: torch.dtype = torch.float32,
    lora: LoraConfig | None = None,
    zero_stage: int = 2,
    offload_optimizer: bool = False,
    offload_params: bool = False,
    mixed_precision: bool = False,
    activation_checkpointing: bool = False,
    tensor_parallel: int = 1,
    pipeline_parallel: int = 1,
    value_head: bool = False,
    reference: bool = False,
) -> MemoryPlan:
    """Bytes per worker to train ``model_config`` with these settings (rules: module docstring).

    Args:
        model_config: the model's Hugging Face config; no weights are loaded.
        strategy, workers, mixed_precision, activation_checkpointing: as ``train.*``.
        zero_stage, offload_optimizer, offload_params: as ``train.deepspeed.*``.
        tensor_parallel: as ``train.megatron.tensor_parallel``.
        pipeline_parallel: pipeline stages (the trainer runs one; the plan counts more).
        micro_batch_tokens: tokens per forward and backward (``optim.micro_batch_tokens``).
        dtype: the training dtype of weights, gradients and AdamW state.
        lora: train adapters only (``model.lora``).
        value_head: PPO's critic, ``nn.Linear(hidden_size, 1)``.
        reference: keep a frozen copy for the KL term (none with LoRA).

    Activations of ``N`` tokens, ``L`` layers of width ``h``, MLP width ``i``, vocabulary
    ``V``, ``a`` bytes per value of the compute dtype (2 with mixed_precision)::

        N * ((L * (10h + 4i) + 4h) * a + 2V * 4)   (divided by tensor_parallel, megatron)

    ``10h + 4i`` values per token per layer is what autograd saves in a Llama layer with SDPA
    (9.5h + 4i measured with saved-tensor hooks; a test re-measures it): about 20h at Llama's
    i = 8h/3, near Korthikanti et al. 2022's 17 values (34 bytes in fp16) for a GPT layer.
    ``4h``: embedding output and final norm. The float32 logits and their gradient count for
    every token: an upper bound (the trainer computes logits for trained tokens only). With
    ``activation_checkpointing`` a layer keeps only its input, one is recomputed at a time:
    ``L*h + 10h + 4i`` per token.

    Raises:
        ConfigError: an offload setting without deepspeed (ZeRO-3 for parameters), LoRA
            targets no Linear layer, or an unknown strategy.
    """
    layout = _memory_layout(strategy)
    if (offload_optimizer or offload_params) and not layout.offloads:
        offloading = [name for name, spec in STRATEGIES.items() if spec.memory.offloads]
        raise ConfigError(
            f"train.deepspeed.offload_optimizer and offload_params need {' or '.join(offloading)}"
        )
    if offload_params and zero_stage != 3:
        raise ConfigError("train.deepspeed.offload_params needs train.deepspeed.zero_stage=3")
    total, trainable, largest_layer = _counts(model_config, lora)
    h, n_layers = model_config.hidden_size, model_config.num_hidden_layers
    reference_bytes = total * dtype.itemsize if reference and lora is None else 0
    if value_head:  # nn.Linear(hidden_size, 1)
        total, trainable = total + h + 1, trainable + h + 1
    b, a = dtype.itemsize, 2 if mixed_precision else dtype.itemsize
    weights = total * b + (total * 2 if mixed_precision else 0)  # + the bfloat16 compute copy
    grads, optim = trainable * b, 2 * trainable * b  # AdamW: exp_avg + exp_avg_sq
    split = {
        "nothing": 1,
        "workers": workers,
        "model_parallel": tensor_parallel * pipeline_parallel,
    }[layout.splits_state_over]
    # without a ZeRO stage to choose, whatever is split is split like ZeRO-3: all of it
    zero = zero_stage if layout.zero_stage_setting else 3
    sharded_params = zero == 3 and layout.gathers_one_layer
    gather = largest_layer * a if sharded_params else 0  # one layer all-gathered at a time
    parameters = math.ceil(weights / (split if zero == 3 else 1))
    gradients = math.ceil(grads / (split if zero >= 2 else 1))
    optimizer = math.ceil(optim / split)
    offloaded = (optimizer if offload_optimizer else 0) + (parameters if offload_params else 0)
    optimizer = 0 if offload_optimizer else optimizer
    parameters = gather + (0 if offload_params else parameters)

    i = getattr(model_config, "intermediate_size", None) or 4 * h
    per_layer = 10 * h + 4 * i  # values autograd saves per token for a Llama layer (measured)
    kept = n_layers * h + per_layer if activation_checkpointing else n_layers * per_layer
    tp = tensor_parallel if layout.splits_state_over == "model_parallel" else 1
    logits = 2 * model_config.vocab_size * 4  # float32 logits and their gradient, every token
    activations = micro_batch_tokens * ((kept + 4 * h) * a + logits) // tp
    checkpointing_saves = micro_batch_tokens * ((n_layers - 1) * per_layer - n_layers * h) * a

    advice = _advice(
        layout,
        workers=workers,
        zero=zero,
        lora=lora,
        micro_batch_tokens=micro_batch_tokens,
        activation_checkpointing=activation_checkpointing,
        checkpointing_saves_more=checkpointing_saves // tp >= activations // 2,
    )
    return MemoryPlan(
        strategy=strategy,
        workers=workers,
        parameters=parameters,
        gradients=gradients,
        optimizer=optimizer,
        activations=activations,
        reference=reference_bytes,
        offloaded=offloaded,
        advice=advice,
    )


def _advice(
    layout: MemoryLayout,
    *,
    workers: int,
    zero: int,
    lora: LoraConfig | None,
    micro_batch_tokens: int,
    activation_checkpointing: bool,
    checkpointing_saves_more: bool,
) -> dict[str, str]:
    """What to change when each part of the plan does not fit, the cheapest knob first."""
    more = layout.scale_advice.format(workers=workers)
    lora_hint = " or set model.lora (train adapters only)" if lora is None else ""
    knobs = [f"lower optim.micro_batch_tokens (now {micro_batch_tokens})"]
    if not activation_checkpointing:  # first if it saves more than halving the micro-batch
        knobs.insert(
            0 if checkpointing_saves_more else 1, "set train.activation_checkpointing=true"
        )
    advice = {
        "parameters": more if zero == 3 else "use train.deepspeed.zero_stage=3",
        "gradients": (more if zero >= 2 else "use train.deepspeed.zero_stage=2") + lora_hint,
        "optimizer": more + lora_hint,
        "activations": " or ".join(knobs),
        "reference": "set model.lora (its base model is the reference) or algorithm.kl_coef=0",
    }
    if layout.offloads:
        advice["optimizer"] = "set train.deepspeed.offload_optimizer=true or " + advice["optimizer"]
        if zero == 3:
            advice["parameters"] = "set train.deepspeed.offload_params=true or " + more
    return advice


def _memory_layout(strategy: str) -> MemoryLayout:
    try:
        return strategy_spec(strategy).memory
    except UnknownStrategyError:
        raise ConfigError(f"train.strategy: no memory plan for {strategy!r}") from None


def plan_for_config(config: Config, model_config: Any) -> MemoryPlan:
    """:func:`plan_memory` with the settings of a training config (float32 training)."""
    train = config.train
    return plan_memory(
        model_config,
        strategy=train.strategy,
        workers=train.workers,
        micro_batch_tokens=config.optim.micro_batch_tokens,
        lora=config.model.lora,
        zero_stage=train.deepspeed.zero_stage,
        offload_optimizer=train.deepspeed.offload_optimizer,
        offload_params=train.deepspeed.offload_params,
        mixed_precision=train.mixed_precision and STRATEGIES[train.strategy].mixed_precision,
        activation_checkpointing=train.activation_checkpointing,
        tensor_parallel=train.megatron.tensor_parallel,
        value_head=ALGORITHMS[config.algorithm.name].needs_critic,
        reference=config.algorithm.kl_coef > 0,
    )


def _host_memory() -> int | None:
    """This machine's RAM, or its cgroup's memory limit where that is lower."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
    except OSError:
        return total
    return min(total, int(limit)) if limit.isdigit() else total


def available_memory_per_worker(config: Config) -> int:
    """Bytes a worker may use: ``train.worker_memory_gib``, else one GPU's memory (when
    training on a GPU), else this machine's RAM shared by ``train.workers``."""
    train = config.train
    if train.worker_memory_gib is not None:
        return int(train.worker_memory_gib * GIB)
    if train.device != "cpu" and torch.cuda.is_available():
        return torch.cuda.get_device_properties(0).total_memory
    host = _host_memory()
    if host is None:
        raise ConfigError("cannot read this machine's memory size: set train.worker_memory_gib")
    return host // train.workers


def check_fits(plan: MemoryPlan, available: int) -> None:
    """Raises ``ConfigError`` (one line: the numbers, and the knob for the biggest term) if
    ``plan`` needs more than ``available`` bytes per worker."""
    if plan.total <= available:
        return
    terms = [term for term in TERMS if getattr(plan, term)]
    parts = ", ".join(f"{term} {_human(getattr(plan, term))}" for term in terms)
    biggest = max(terms, key=lambda term: getattr(plan, term))
    raise ConfigError(
        f"memory plan: {plan.strategy} ×{plan.workers} needs {_human(plan.total)} per worker "
        f"({parts}) but a worker has {_human(available)}; {plan.advice.get(biggest, '')}"
    )
