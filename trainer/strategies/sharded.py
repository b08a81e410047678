"""One train worker's share of a sharded policy update: FSDP2 and DeepSpeed ZeRO.

Each class is a :class:`~trainer.strategies.torch_strategy.TorchStrategy` whose model is
sharded over the ``torch.distributed`` process group this worker belongs to (gloo on CPU,
NCCL on GPU); a :class:`~trainer.strategies.worker_group.TrainWorkerGroup` holds one per
worker, and :class:`~trainer.strategies.ray_strategy.RayStrategy` drives them.

Every worker trains on its own part of the batch, normalised by the *whole* batch's total
(``train_step(part, total=...)``), so the sum of the workers' gradients is the gradient one
process would compute. FSDP2 and DeepSpeed average gradients over the workers, so the loss
is multiplied by the world size first:

    grad = sum_w grad(loss_w)  =  mean_w grad(world * loss_w)

Every forward and backward gathers weights from all workers, so each worker runs the same
number of micro-batches (the longest count, the others padded with weightless fillers).
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator

import torch
import torch.distributed as dist
from torch import nn

from trainer.strategies.logprobs import SelectedLogits
from trainer.strategies.torch_strategy import TorchStrategy, read_model_folder


def _decoder_layers(model: nn.Module) -> list[nn.Module]:
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return list(base.get_decoder().layers)


def process_group_backend(device: str) -> str:
    """The ``torch.distributed`` backend of a train-worker group on ``device``.

    On CUDA, NCCL carries the tensors on the GPU and gloo the small ones a step keeps on the
    CPU (the micro-batch count the workers agree on, object collectives): NCCL alone refuses
    a CPU tensor ("No backend type associated with device type cpu"), which ended the first
    update of ``--strategy fsdp2`` on a GPU.

    Example:
        >>> process_group_backend("cuda"), process_group_backend("cpu")
        ('cpu:gloo,cuda:nccl', 'gloo')
    """
    return "cpu:gloo,cuda:nccl" if device == "cuda" else "gloo"


class ShardedStrategy(TorchStrategy):
    """A :class:`TorchStrategy` whose policy is split over the workers of one process group:
    the base of each train worker's policy (FSDP2, DeepSpeed ZeRO, Megatron-core). Its
    collectives need every worker to run the same number of micro-batches
    (:meth:`agreed_count`), and only worker 0 writes checkpoint files."""

    collective = True

    def __init__(self, model: nn.Module, **options):
        self.world = dist.get_world_size()
        self.rank = dist.get_rank()
        super().__init__(model, **options)

    def _scorer(self) -> nn.Module:
        return self.scorer

    def _writes_files(self) -> bool:
        return self.rank == 0

    def inference_state_dict(self) -> dict[str, torch.Tensor]:
        """The full policy weights, gathered from the shards (every worker must call it)."""
        return self.gather_weights(list(self.weight_sizes()))

    def _base(self) -> nn.Module:
        return self.model.get_base_model() if self.lora is not None else self.model

    def _source(
        self, name: str, tensors: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, nn.Module | None]:
        """The tensor behind a generator-facing weight name (among the base model's
        ``tensors``), and the LoRA layer whose delta merges into it (``None`` without one)."""
        if name in tensors:
            return tensors[name], None
        path, leaf = name.rsplit(".", 1)
        layer = self._base().get_submodule(path)
        return tensors[f"{path}.base_layer.{leaf}"], layer if leaf == "weight" else None

    def gather_weights(self, names: list[str]) -> dict[str, torch.Tensor]:
        """Full values of these policy weights, LoRA merged in (a collective: every worker
        calls it with the same names)."""
        gathered: dict[int, torch.Tensor] = {}

        def full(tensor: torch.Tensor) -> torch.Tensor:
            if id(tensor) not in gathered:  # tied weights are gathered once
                gathered[id(tensor)] = (
                    self._full_parameter(tensor)
                    if isinstance(tensor, nn.Parameter)
                    else tensor.detach().cpu()
                )
            return gathered[id(tensor)]

        tensors = self._base().state_dict(keep_vars=True)
        out = {}
        for name in names:
            tensor, lora_layer = self._source(name, tensors)
            value = full(tensor)
            if lora_layer is not None:  # W + scaling * B @ A
                adapter = lora_layer.active_adapters[0]
                a = self._full_parameter(lora_layer.lora_A[adapter].weight)
                b = self._full_parameter(lora_layer.lora_B[adapter].weight)
                value = value + lora_layer.scaling[adapter] * (b @ a)
            out[name] = value
        return out

    def weight_sizes(self) -> dict[str, int]:
        """Bytes of each full policy weight, by the name a generator knows it by."""
        sizes = {}
        for name, tensor in self._base().state_dict(keep_vars=True).items():
            if "lora_" in name:
                continue
            shape = getattr(tensor, "ds_shape", None) or tensor.shape  # ZeRO-3 keeps it aside
            name = name.replace(".base_layer.", ".")
            sizes[name] = int(torch.Size(shape).numel()) * tensor.element_size()
        return sizes

    def _load_model_folder(self, folder) -> None:
        weights = read_model_folder(folder)
        for name, parameter in self.model.named_parameters():
            if name not in weights:
                raise ValueError(f"checkpoint {folder} has no weight {name!r}")
            self._set_full_parameter(parameter, weights[name])

    def agreed_count(self, count: int) -> int:
        """The largest ``count`` over the workers (each runs that many micro-batches)."""
        value = torch.tensor([count], dtype=torch.long)
        dist.all_reduce(value, op=dist.ReduceOp.MAX)
        return int(value.item())


class FSDP2Strategy(ShardedStrategy):
    """``torch.distributed.fsdp.fully_shard`` over every decoder layer and the whole policy:
    parameters, gradients and optimizer state are split evenly across the workers.

    Args:
        model: the policy (sharded in place).
        mixed_precision: compute in bfloat16, keep float32 weights and gradient reduction.
        **options: as :class:`TorchStrategy` (``activation_checkpointing`` among them).
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        mixed_precision: bool = False,
        **options,
    ):
        self._mixed_precision = mixed_precision
        super().__init__(model, **options)

    def _prepare(self) -> None:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        shard_options = {}
        if self._mixed_precision:
            shard_options["mp_policy"] = MixedPrecisionPolicy(
                param_dtype=torch.bfloat16, reduce_dtype=torch.float32
            )
        for layer in _decoder_layers(self.model):
            fully_shard(layer, **shard_options)
        if self.value_head is not None:  # its own unit: it is called outside the policy's forward
            fully_shard(self.value_head)
        self.scorer = fully_shard(SelectedLogits(self.model), **shard_options)

    def _backward(self, loss: torch.Tensor, *, last: bool) -> None:
        (loss * self.world).backward()

    def _optimizer_step(self) -> float:
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        max_norm = self.grad_clip if self.grad_clip is not None else float("inf")
        grad_norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
        self.optimizer.step()
        return float(_full(grad_norm))

    def _full_parameter(self, parameter: nn.Parameter) -> torch.Tensor:
        return _full(parameter.detach()).cpu().clone()

    def _set_full_parameter(self, parameter: nn.Parameter, value: torch.Tensor) -> None:
        with torch.no_grad():
            _local(parameter).copy_(_shard_like(value.to(parameter.dtype), parameter))

    def _full_optimizer_state(self, parameter: nn.Parameter) -> dict[str, torch.Tensor]:
        state = self.optimizer.state.get(parameter, {})
        return {k: _full(v).cpu().clone() for k, v in state.items()}

    def _set_full_optimizer_state(
        self, parameter: nn.Parameter, state: dict[str, torch.Tensor]
    ) -> None:
        from torch.distributed.tensor import DTensor

        own = {}
        for key, value in state.items():
            if key == "step" or not isinstance(parameter, DTensor):
                own[key] = value.clone()
            else:
                local = _shard_like(value.to(parameter.dtype), parameter)
                own[key] = DTensor.from_local(
                    local.to(parameter.device),
                    parameter.device_mesh,
                    parameter.placements,
                    shape=parameter.shape,
                    stride=parameter.stride(),
                )
        self.optimizer.state[parameter] = own

    def _held(self, tensor: torch.Tensor) -> torch.Tensor:
        return _local(tensor)


def _full(tensor: torch.Tensor) -> torch.Tensor:
    from torch.distributed.tensor import DTensor

    return tensor.full_tensor() if isinstance(tensor, DTensor) else tensor


def _local(tensor: torch.Tensor) -> torch.Tensor:
    from torch.distributed.tensor import DTensor

    return tensor.to_local() if isinstance(tensor, DTensor) else tensor


def _shard_like(value: torch.Tensor, parameter: torch.Tensor) -> torch.Tensor:
    """This worker's shard of a full ``value`` laid out as the DTensor ``parameter``."""
    from torch.distributed.tensor import DTensor, distribute_tensor

    if not isinstance(parameter, DTensor):
        return value
    return distribute_tensor(
        value.to(parameter.device), parameter.device_mesh, parameter.placements
    ).to_local()


class DeepSpeedStrategy(ShardedStrategy):
    """DeepSpeed ZeRO stage 1 (optimizer state sharded), 2 (and gradients) or 3 (and
    parameters), around this project's own AdamW (no fused-Adam build on CPU).

    Args:
        model: the policy.
        zero_stage: 1, 2 or 3.
        offload_optimizer: keep the optimizer state in CPU memory (GPU runs).
        offload_params: keep the parameters in CPU memory (stage 3, GPU runs).
        **options: as :class:`TorchStrategy`.
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        zero_stage: int = 2,
        offload_optimizer: bool = False,
        offload_params: bool = False,
        **options,
    ):
        if zero_stage not in (1, 2, 3):
            raise ValueError(f"train.deepspeed.zero_stage must be 1, 2 or 3, got {zero_stage}")
        self.zero_stage = zero_stage
        self._offload_optimizer = offload_optimizer
        self._offload_params = offload_params
        self._gradient_buffer: _GradientBuffer | None = None
        super().__init__(model, **options)

    def _prepare(self) -> None:
        self.scorer = SelectedLogits(self.model, self.value_head)

    def _make_optimizer(self, optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
        import deepspeed

        # DeepSpeed's defaults (buckets of 500M values, up to 1G parameters gathered and kept
        # for reuse) hold a small model's gradients twice over and, at ZeRO-3, its whole weights
        # through the forward pass. 5M-value buckets (20 MB in float32) and at most 20M values
        # gathered, released after use, took about 500 MB off a SmolLM2-135M ZeRO-3 worker's
        # peak at --workers 2; its speed against torch x1 stayed within the runs' spread
        # (README, "At scale")
        bucket = int(5e6)
        zero: dict = {
            "stage": self.zero_stage,
            "reduce_bucket_size": bucket,
            "allgather_bucket_size": bucket,
        }
        if self.zero_stage == 3:
            zero.update(
                stage3_prefetch_bucket_size=bucket,
                stage3_max_live_parameters=4 * bucket,
                stage3_max_reuse_distance=0,
            )
        if self._offload_optimizer:
            zero["offload_optimizer"] = {"device": "cpu"}
        if self._offload_params:
            zero["offload_param"] = {"device": "cpu"}
        config = {
            "train_micro_batch_size_per_gpu": 1,  # batches are cut by tokens, not by this
            "gradient_accumulation_steps": 1,
            "gradient_clipping": self.grad_clip or 0.0,
            "zero_optimization": zero,
            "zero_allow_untested_optimizer": True,  # torch's AdamW, on purpose
            "steps_per_print": 2**31 - 1,
        }
        with _without_shared_memory_kernel():
            self.engine, wrapped, _, _ = deepspeed.initialize(
                model=self.scorer, optimizer=optimizer, config=config
            )
        if not (self._offload_optimizer or self._offload_params):
            _share_master_partitions(wrapped, self.zero_stage)
        if self.zero_stage == 3 and not (self._offload_optimizer or self._offload_params):
            self._gradient_buffer = _GradientBuffer.of(wrapped)
        return wrapped

    def _scorer(self) -> nn.Module:
        return self.engine

    def _backward(self, loss: torch.Tensor, *, last: bool) -> None:
        if self._gradient_buffer is not None:
            self._gradient_buffer.restore()
        self.engine.set_gradient_accumulation_boundary(last)
        self.engine.backward(loss * self.world)

    def _optimizer_step(self) -> float:
        self.engine.step()
        if self._gradient_buffer is not None:
            self._gradient_buffer.release()
        return float(self.engine.get_global_grad_norm() or 0.0)

    def _flat_partitions(self) -> list[torch.Tensor]:
        """The float32 partitions this worker's inner AdamW steps (its state's keys)."""
        if self.zero_stage == 3:
            return list(self.optimizer.fp32_partitioned_groups_flat)
        return list(self.optimizer.single_partition_of_fp32_groups)

    def _inner_state(self) -> dict:
        return self.optimizer.optimizer.state

    def _full_parameter(self, parameter: nn.Parameter) -> torch.Tensor:
        import deepspeed
        from deepspeed.utils import safe_get_full_fp32_param

        if parameter.requires_grad:  # the optimizer's float32 master copy
            return safe_get_full_fp32_param(parameter).detach().cpu().clone()
        if self.zero_stage == 3:  # frozen (LoRA's base): partitioned, not in the optimizer
            with deepspeed.zero.GatheredParameters([parameter]):
                return parameter.detach().cpu().clone()
        return parameter.detach().cpu().clone()

    def _set_full_parameter(self, parameter: nn.Parameter, value: torch.Tensor) -> None:
        import deepspeed
        from deepspeed.utils import safe_set_full_fp32_param

        value = value.to(torch.float32)
        with torch.no_grad():
            if self.zero_stage == 3:  # the working copy, re-partitioned on leaving
                with deepspeed.zero.GatheredParameters([parameter], modifier_rank=0):
                    if self.rank == 0:
                        parameter.copy_(value.to(parameter.dtype))
            else:
                parameter.copy_(value.to(parameter.dtype))
        safe_set_full_fp32_param(parameter, value)  # the optimizer's float32 master copy

    def _full_optimizer_state(self, parameter: nn.Parameter) -> dict[str, torch.Tensor]:
        from deepspeed.utils import safe_get_full_optimizer_state

        state = self._inner_state()
        if not state:  # no step taken yet
            return {}
        step = next(iter(state.values()))["step"]
        full = {"step": torch.as_tensor(step, dtype=torch.float32).clone()}
        for key in ("exp_avg", "exp_avg_sq"):
            full[key] = safe_get_full_optimizer_state(parameter, key).detach().cpu().clone()
        return full

    def _set_full_optimizer_state(
        self, parameter: nn.Parameter, state: dict[str, torch.Tensor]
    ) -> None:
        from deepspeed.utils import safe_set_full_optimizer_state

        inner = self._inner_state()
        fresh = not inner  # no step taken: AdamW's state is made here, then linked to params
        for flat in self._flat_partitions():
            slot = inner.setdefault(flat, {})
            slot["step"] = state["step"].clone()
            for key in ("exp_avg", "exp_avg_sq"):
                slot.setdefault(key, torch.zeros_like(flat))
        if fresh and self.zero_stage < 3:  # stage 3 reads its state directly
            self.optimizer._hp_optimizer_states_linked = False
            self.optimizer._lazy_init_hp_params_optimizer_state()
        for key in ("exp_avg", "exp_avg_sq"):
            safe_set_full_optimizer_state(parameter, state[key].to(torch.float32), key)

    def local_bytes(self) -> dict[str, int]:
        if self.zero_stage == 3:
            parameters = sum(
                p.ds_tensor.numel() * p.ds_tensor.element_size() for p in self.scorer.parameters()
            )
        else:
            parameters = sum(p.numel() * p.element_size() for p in self.scorer.parameters())
        optimizer = sum(
            v.numel() * v.element_size()
            for state in self._inner_state().values()
            for k, v in state.items()
            if k != "step"
        )
        master_copy = sum(
            master.numel() * master.element_size()
            for master, own in _master_and_own_partitions(self.optimizer, self.zero_stage)
            if master.untyped_storage().data_ptr() != own.untyped_storage().data_ptr()
        )
        held = {"parameters": parameters, "optimizer": optimizer, "master_copy": master_copy}
        if self.zero_stage == 3:  # the gradient partition's buffer, released between updates
            buffer = self.optimizer.grad_partitions_flat_buffer
            held["gradient_buffer"] = buffer.numel() * buffer.element_size()
        return held


@contextlib.contextmanager
def _without_shared_memory_kernel() -> Iterator[None]:
    """Starts DeepSpeed's communication backend without its shared-memory C++ kernel.

    On a CPU, DeepSpeed's backend builds ``deepspeed_shm_comm`` when it starts: a C++ compile
    of 2 minutes on this 2-core machine, on each machine's first run, for a kernel that only
    its ``inference_all_reduce`` calls. Training reduces through the workers' gloo process
    group, so the backend is started without the kernel.
    """
    # the submodule itself: ``deepspeed.comm.torch`` names the torch package it imports
    backend = importlib.import_module("deepspeed.comm.torch")
    build = backend.build_shm_op
    backend.build_shm_op = lambda: None
    try:
        yield
    finally:
        backend.build_shm_op = build


class _GradientBuffer:
    """Holds ZeRO-3's buffer of this worker's gradient partition only from the first backward
    pass of an update to its optimizer step.

    DeepSpeed allocates it once and keeps it (257 MB of SmolLM2-135M's at ``--workers 2``), so it
    is resident through each forward pass, beside the activations, where FSDP2 has no gradients
    yet. After each step it is released; before the next backward pass it is made again as
    lazily zeroed memory (numpy's ``calloc``), whose pages become resident only as the backward
    pass writes them, while the activations are freed. DeepSpeed's own ``offload_states`` /
    ``reload_states`` drop and rebuild its views of the buffer.
    """

    def __init__(self, optimizer) -> None:
        self.optimizer = optimizer
        self.numel = optimizer.grad_partitions_flat_buffer.numel()
        self.released = False

    @classmethod
    def of(cls, optimizer) -> _GradientBuffer | None:
        """The holder of ``optimizer``'s buffer; ``None`` (DeepSpeed keeps it) unless it is
        float32, the dtype numpy's zeros make it again in."""
        if optimizer.grad_partitions_flat_buffer.dtype != torch.float32:
            return None
        return cls(optimizer)

    def release(self) -> None:
        """Frees the buffer (after an optimizer step: its gradients are spent)."""
        if self.released:
            return
        from deepspeed.runtime.zero.offload_config import OffloadStateTypeEnum

        self.optimizer.offload_states(include=[OffloadStateTypeEnum.lp_grads], pin_memory=False)
        self.optimizer.grad_partitions_flat_buffer.data = torch.empty(0)
        self.released = True

    def restore(self) -> None:
        """Makes the buffer again, zeroed, before a backward pass writes into it."""
        if not self.released:
            return
        import numpy as np

        zeros = torch.from_numpy(np.zeros(self.numel, dtype=np.float32))
        self.optimizer.grad_partitions_flat_buffer.data = zeros
        self.optimizer.reload_states()
        self.released = False


def _master_and_own_partitions(
    optimizer, zero_stage: int
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Each parameter group's (master partition, model partition) pair of this worker."""
    if zero_stage == 3:
        return list(
            zip(
                optimizer.fp32_partitioned_groups_flat,
                optimizer.fp16_partitioned_groups_flat,
                strict=True,
            )
        )
    return [
        (master, partitions[dist.get_rank(group=optimizer.real_dp_process_group[i])])
        for i, (master, partitions) in enumerate(
            zip(
                optimizer.single_partition_of_fp32_groups,
                optimizer.parallel_partitioned_bit16_groups,
                strict=True,
            )
        )
    ]


def _share_master_partitions(optimizer, zero_stage: int) -> None:
    """Makes DeepSpeed's float32 master copy of this worker's partition the partition itself,
    where the two have the same dtype (a float32 policy): one copy of the weights, not two.

    DeepSpeed's AdamW steps a "master" partition, then copies it into the model's partition.
    Trained in float32 the two hold the same numbers, but ZeRO-1/2 clone it, and ZeRO-3's test
    for sharing it compares a ``torch.device`` with a string (never equal in DeepSpeed 0.19.8),
    so each worker kept a second copy of its share of the weights (257 MB of SmolLM2-135M's at
    ``--workers 2``). Shared, the step's copy back is a copy onto itself.
    """
    pairs = _master_and_own_partitions(optimizer, zero_stage)
    if any((m.dtype, m.shape, m.device) != (o.dtype, o.shape, o.device) for m, o in pairs):
        return
    for master, own in pairs:
        master.data = own.data  # the same tensor object: AdamW's param groups and state keep it
    optimizer._link_all_hp_params()  # DeepSpeed's views into the master copy, made anew
