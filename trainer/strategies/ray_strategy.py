"""``RayStrategy``: the :class:`~trainer.strategies.base.Strategy` of a Ray group of train
workers (FSDP2, DeepSpeed ZeRO or Megatron-core), driven by the pipeline as its single
controller.

Each call splits the sequences across the data-parallel groups by tokens
(:func:`~trainer.strategies.token_balance.split_for_workers`), sends each worker its group's
part with the whole batch's normaliser, and puts the results back in the batch's order. A
group is one worker, or, with Megatron's tensor parallelism, ``tensor_parallel`` consecutive
workers that get the same part (the first one's results are used). Metrics come back
weighted by each part's share of the batch, so their sum over the groups is the batch's
value; the gradient norm is the same on every worker (it is computed over the gathered
gradient).

The builders at the end of this module are the registry's (``trainer.strategy_registry``)
for the strategies with train workers.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from trainer.strategies.base import StrategyRequest
from trainer.strategies.batch import TokenBatch
from trainer.strategies.from_config import resolve_device, worker_gpus
from trainer.strategies.token_balance import split_for_workers
from trainer.strategies.worker_group import TrainWorkerGroup, WorkerSpec
from trainer.strategy_registry import strategy_spec

#: Metrics that are the same on every worker, not shares to add up.
_SHARED_METRICS = ("grad_norm", "sft/grad_norm")


class RayStrategy:
    """Policy updates on a :class:`TrainWorkerGroup`.

    Args:
        spec: what each worker builds (strategy, model, options).
        workers: the group's size.
        cpus, gpus, resources: Ray resources of each worker.
        per_sequence: the loss is normalised by sequences (``seq-mean-*``), not tokens.
        tensor_parallel: consecutive workers that share each part of a batch (Megatron).
        bucket_mb: the most weight bytes gathered at once for a weight sync.
        stop_ray_on_close: :meth:`close` also stops Ray (the caller started it for this).
    """

    def __init__(
        self,
        spec: WorkerSpec,
        *,
        workers: int,
        cpus: float = 1.0,
        gpus: float = 0.0,
        resources: dict[str, float] | None = None,
        per_sequence: bool = False,
        tensor_parallel: int = 1,
        bucket_mb: float = 64.0,
        stop_ray_on_close: bool = False,
    ):
        self.spec = spec
        self.per_sequence = per_sequence
        if workers % tensor_parallel:
            raise ValueError(
                f"{workers} workers do not divide by tensor_parallel={tensor_parallel}"
            )
        self.tensor_parallel = tensor_parallel
        self.bucket_bytes = int(bucket_mb * 2**20)
        self.stop_ray_on_close = stop_ray_on_close
        self.group = TrainWorkerGroup(
            spec, workers=workers, cpus=cpus, gpus=gpus, resources=resources
        )

    @property
    def workers(self) -> int:
        return len(self.group)

    # ------------------------------------------------------------------ log-probs
    def sequence_logprobs(
        self, sequences: list[list[int]], masks: list[torch.Tensor], *, with_values: bool = False
    ) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
        logprobs, values = self._scores(sequences, masks, with_values, reference=False)
        return logprobs, values if with_values else None

    def reference_logprobs(
        self, sequences: list[list[int]], masks: list[torch.Tensor]
    ) -> list[torch.Tensor]:
        return self._scores(sequences, masks, False, reference=True)[0]

    def _call(self, method: str, parts: list[list[int]], args) -> tuple[list, list]:
        """Calls ``method`` on every worker with ``args(its part)``; returns each data-parallel
        group's part and result (its first worker's)."""
        results = self.group.call(method, [args(part) for part in parts])
        step = self.tensor_parallel
        return parts[::step], results[::step]

    def _scores(self, sequences, masks, with_values: bool, *, reference: bool):
        parts, results = self._call(
            "sequence_logprobs",
            split_for_workers([len(s) for s in sequences], self.workers, self.tensor_parallel),
            lambda part: (
                [sequences[i] for i in part],
                [masks[i] for i in part],
                with_values,
                reference,
            ),
        )
        logprobs: list = [None] * len(sequences)
        values: list = [None] * len(sequences)
        for part, result in zip(parts, results, strict=True):
            part_logprobs, part_values = result if not reference else (result, None)
            for row, index in enumerate(part):
                logprobs[index] = part_logprobs[row]
                if part_values is not None:
                    values[index] = part_values[row]
        return logprobs, values

    # ------------------------------------------------------------------ training
    def train_step(self, batch: TokenBatch) -> dict[str, float]:
        return self._update("rl", batch, len(batch) if self.per_sequence else batch.valid_tokens)

    def supervised_step(self, batch: TokenBatch) -> dict[str, float]:
        return self._update("sft", batch, batch.valid_tokens)

    def _update(self, kind: str, batch: TokenBatch, total: float) -> dict[str, float]:
        _, results = self._call(
            "update",
            split_for_workers(
                [len(s) for s in batch.token_ids], self.workers, self.tensor_parallel
            ),
            lambda part: (kind, batch.select(part), total),
        )
        metrics: dict[str, float] = {}
        for result in results:
            for name, value in result.items():
                if name in _SHARED_METRICS:
                    metrics[name] = value
                else:
                    metrics[name] = metrics.get(name, 0.0) + value
        return metrics

    # ------------------------------------------------------------------ weights
    def weight_buckets(self) -> Iterator[dict[str, torch.Tensor]]:
        """The full policy weights, gathered from the shards ``bucket_mb`` at a time."""
        sizes = self.group.run("weight_sizes")[0]
        bucket: list[str] = []
        held = 0
        for name, size in sizes.items():
            if bucket and held + size > self.bucket_bytes:
                yield self._gather(bucket)
                bucket, held = [], 0
            bucket.append(name)
            held += size
        if bucket:
            yield self._gather(bucket)

    def _gather(self, names: list[str]) -> dict[str, torch.Tensor]:
        return self.group.call("gather_weights", [(names,)] * self.workers)[0]

    def inference_state_dict(self) -> dict[str, torch.Tensor]:
        """Full weights for a generator, assembled bucket by bucket."""
        weights: dict[str, torch.Tensor] = {}
        for bucket in self.weight_buckets():
            weights.update(bucket)
        return weights

    def local_bytes(self) -> list[dict[str, int]]:
        """Each worker's bytes of parameters and optimizer state."""
        return self.group.run("local_bytes")

    def save(self, folder: Path) -> None:
        """The same files as :class:`TorchStrategy` (written by worker 0: the folder must be
        on storage every node reaches, as a Ray cluster's shared storage is)."""
        self.group.run("save", Path(folder))

    def load(self, folder: Path) -> None:
        self.group.run("load", Path(folder))

    def load_optimizer_moments(self, folder: Path) -> None:
        self.group.run("load_optimizer_moments", Path(folder))

    def close(self) -> None:
        """Stops the workers (and Ray, with ``stop_ray_on_close``)."""
        import ray

        if self.group.actors:
            self.group.shutdown()
        if self.stop_ray_on_close and ray.is_initialized():
            ray.shutdown()


def build_worker_group(
    request: StrategyRequest, *, workers_per_part: int = 1, **own_options: Any
) -> RayStrategy:
    """A :class:`RayStrategy` of ``train.workers`` workers, each building the registered
    ``worker_policy`` of ``train.strategy`` with the request's options and ``own_options``.

    Args:
        request: what :func:`~trainer.strategies.from_config.build_strategy` asks for.
        workers_per_part: consecutive workers that share each part of a batch (tensor
            parallelism's group).
        own_options: the worker policy's own keyword arguments.

    Returns:
        The strategy, its workers started.
    """
    config, train = request.config, request.config.train
    cuda = resolve_device(train.device).type == "cuda"
    spec = WorkerSpec(
        strategy=train.strategy,
        model_name=request.model_name,
        seed=train.seed,
        device="cuda" if cuda else "cpu",
        options={**request.options, **own_options},
        return_freed_memory=train.return_freed_memory,
        allocator=train.allocator,
        worker_policy=strategy_spec(train.strategy).worker_policy,
    )
    return RayStrategy(
        spec,
        workers=train.workers,
        cpus=train.worker_cpus,
        gpus=worker_gpus(config, cuda),
        resources=dict(train.worker_resources),
        per_sequence=config.algorithm.aggregation != "token-mean",
        tensor_parallel=workers_per_part,
        bucket_mb=config.rollout.weight_bucket_mb,
        stop_ray_on_close=request.started_ray,
    )


def build_fsdp2_group(request: StrategyRequest) -> RayStrategy:
    """Train workers sharding the update with FSDP2 (``train.mixed_precision`` honoured)."""
    return build_worker_group(request, mixed_precision=request.config.train.mixed_precision)


def build_deepspeed_group(request: StrategyRequest) -> RayStrategy:
    """Train workers sharding the update with DeepSpeed ZeRO (``train.deepspeed``)."""
    options = request.config.train.deepspeed
    return build_worker_group(
        request,
        zero_stage=options.zero_stage,
        offload_optimizer=options.offload_optimizer,
        offload_params=options.offload_params,
    )


def build_megatron_group(request: StrategyRequest) -> RayStrategy:
    """Train workers in groups of ``train.megatron.tensor_parallel`` (Megatron-core, CUDA
    GPUs)."""
    train = request.config.train
    return build_worker_group(
        request,
        workers_per_part=train.megatron.tensor_parallel,
        seed=train.seed,
        tensor_parallel=train.megatron.tensor_parallel,
    )
