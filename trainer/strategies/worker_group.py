"""``TrainWorkerGroup``: N train-worker actors on Ray forming one ``torch.distributed`` group.

The group is started by the pipeline (the single controller) and only answers its calls: a
worker never calls back. Rendezvous goes through Ray: worker 0 picks a free port on its own
node and tells the others through the controller, so no port is set by hand and the workers
may sit on any node of the cluster. A worker that dies (killed, out of memory, its node
lost) ends the call with a :class:`TrainWorkerError` naming it, and the group is stopped:
the others would wait for it in their next collective forever.

Example:
    >>> import ray  # doctest: +SKIP
    >>> group = TrainWorkerGroup(spec, workers=2, cpus=1)  # doctest: +SKIP
    >>> group.call("agreed_count", [3, 5])  # doctest: +SKIP
    [5, 5]
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from typing import Any

import ray
import torch

from trainer.lazy_reference import load_reference
from trainer.strategies.allocator import allocator_env_vars, check_loaded, loaded_allocator
from trainer.strategies.sharded import process_group_backend
from trainer.strategies.train_worker_error import TrainWorkerError
from trainer.strategy_registry import strategy_spec

#: Minutes a collective may wait for a worker before failing (a lost worker otherwise
#: blocks the others forever).
COLLECTIVE_TIMEOUT_MINUTES = 10


@dataclass(frozen=True)
class WorkerSpec:
    """What every train worker builds: the policy and its sharded strategy.

    ``worker_policy`` is the class each worker builds (or a ``"module:Class"`` reference to
    it); ``None``: the registered ``worker_policy`` of ``strategy``, a name in
    :data:`trainer.strategies.STRATEGIES` (a worker's process holds the built-in
    registrations only, so the controller passes a strategy registered elsewhere this way).
    ``options`` are :class:`~trainer.strategies.torch_strategy.TorchStrategy` keyword
    arguments plus the strategy's own (``zero_stage``, ``mixed_precision``, ...);
    ``return_freed_memory`` is ``train.return_freed_memory`` (see
    :mod:`trainer.strategies.host_memory`), ``allocator`` is ``train.allocator`` (see
    :mod:`trainer.strategies.allocator`).
    """

    strategy: str
    model_name: str
    seed: int
    device: str
    options: dict[str, Any] = field(default_factory=dict)
    return_freed_memory: bool = False
    allocator: str = "default"
    worker_policy: type | str | None = None


class TrainWorker:
    """One member of the group (a Ray actor): its process group rank and its share of the
    policy. Its methods are called by :class:`TrainWorkerGroup` on every worker at once."""

    def identity(self) -> dict[str, Any]:
        return {
            "node_ip": ray.util.get_node_ip_address(),
            "node_id": ray.get_runtime_context().get_node_id(),
            "pid": os.getpid(),
            "allocator": loaded_allocator(),
        }

    def free_port(self) -> int:
        with socket.socket() as probe:
            probe.bind(("", 0))
            return probe.getsockname()[1]

    def setup(self, spec: WorkerSpec, rank: int, world: int, address: str, port: int) -> None:
        from datetime import timedelta

        import torch.distributed as dist

        from trainer.models import load_model
        from trainer.strategies.host_memory import return_freed_tensors_to_os

        node = ray.util.get_node_ip_address()
        check_loaded(spec.allocator, f"train worker {rank} (node {node})")
        if spec.return_freed_memory:
            return_freed_tensors_to_os()
        os.environ.update(
            RANK=str(rank),
            WORLD_SIZE=str(world),
            LOCAL_RANK="0",  # Ray gives each worker its own device(s): the first is its own
            MASTER_ADDR=address,
            MASTER_PORT=str(port),
        )
        cuda = spec.device == "cuda"
        if not cuda:
            os.environ.setdefault("DS_ACCELERATOR", "cpu")
        dist.init_process_group(
            process_group_backend(spec.device),
            init_method=f"tcp://{address}:{port}",
            rank=rank,
            world_size=world,
            timeout=timedelta(minutes=COLLECTIVE_TIMEOUT_MINUTES),
        )
        model, _ = load_model(spec.model_name, seed=spec.seed)
        if cuda:
            model.to("cuda")
        if spec.worker_policy is None:
            policy_class = strategy_spec(spec.strategy).worker_policy_class()
        elif isinstance(spec.worker_policy, str):
            policy_class = load_reference(spec.worker_policy)
        else:
            policy_class = spec.worker_policy
        # the same random state on every worker and in a one-process run of the same seed:
        # LoRA's adapters are drawn from it
        torch.manual_seed(spec.seed)
        self.policy = policy_class(model, **spec.options)

    def run(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.policy, method)(*args, **kwargs)

    def sequence_logprobs(self, sequences, masks, with_values: bool, reference: bool):
        count = self.policy.agreed_count(len(self.policy.micro_batch_groups(sequences)))
        if reference:
            return self.policy.reference_logprobs(sequences, masks, micro_batches_at_least=count)
        return self.policy.sequence_logprobs(
            sequences, masks, with_values=with_values, micro_batches_at_least=count
        )

    def update(self, kind: str, part, total: float) -> dict[str, float]:
        count = self.policy.agreed_count(len(self.policy.micro_batch_groups(part.token_ids)))
        step = self.policy.train_step if kind == "rl" else self.policy.supervised_step
        return step(part, total=total, micro_batches_at_least=count)

    def peak_memory(self, *, reset: bool = False) -> int:
        """This process's peak resident memory in bytes since the last reset (Linux's
        ``VmHWM``); ``reset`` starts a new peak from the current size."""
        return peak_rss(reset=reset)

    def gather_weights(self, names: list[str]) -> dict[str, torch.Tensor] | None:
        weights = self.policy.gather_weights(names)
        return weights if self.policy.rank == 0 else None


class TrainWorkerGroup:
    """Starts ``workers`` train workers with these Ray resources and joins them in one group.

    Args:
        spec: what each worker builds.
        workers: the group's size (the world size).
        cpus, gpus: Ray resources per worker.
        resources: custom Ray resources per worker (to place them on chosen nodes).
    """

    def __init__(
        self,
        spec: WorkerSpec,
        *,
        workers: int,
        cpus: float = 1.0,
        gpus: float = 0.0,
        resources: dict[str, float] | None = None,
    ):
        self.failure: str | None = None  # what stopped the group, once a worker failed
        actor = ray.remote(TrainWorker).options(
            num_cpus=cpus,
            num_gpus=gpus,
            resources=resources or {},
            runtime_env={
                "env_vars": {
                    "OMP_NUM_THREADS": str(max(int(cpus), 1)),
                    **allocator_env_vars(spec.allocator),
                }
            },
        )
        self.actors = [actor.remote() for _ in range(workers)]
        self.identities = self._get([a.identity.remote() for a in self.actors], "start")
        address = self.identities[0]["node_ip"]
        port = self._get([self.actors[0].free_port.remote()], "start")[0]
        self._get(
            [
                a.setup.remote(spec, rank, workers, address, port)
                for rank, a in enumerate(self.actors)
            ],
            "setup",
        )

    def __len__(self) -> int:
        return len(self.actors)

    def call(self, method: str, per_worker: list[tuple] | None = None, **kwargs: Any) -> list:
        """Calls ``method`` on every worker (with its own positional arguments, if given)."""
        per_worker = per_worker or [()] * len(self.actors)
        refs = [
            getattr(actor, method).remote(*args, **kwargs)
            for actor, args in zip(self.actors, per_worker, strict=True)
        ]
        return self._get(refs, method)

    def run(self, method: str, *args: Any, **kwargs: Any) -> list:
        """Calls the workers' strategy's ``method`` with the same arguments on every worker."""
        refs = [actor.run.remote(method, *args, **kwargs) for actor in self.actors]
        return self._get(refs, method)

    def _get(self, refs: list, what: str) -> list:
        """Results in order; the first failure stops the group and names its worker."""
        if self.failure is not None:
            raise TrainWorkerError(f"{self.failure}; nothing more can run on this group")
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            try:
                ray.get(done[0])
            except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as error:
                rank = refs.index(done[0])
                died = isinstance(error, ray.exceptions.RayActorError)
                if not died:
                    # a collective fails on every survivor when a peer dies, often before Ray
                    # reports the death: the dead peer is the cause to name
                    dead = _dead_peer(refs, pending)
                    if dead is not None:
                        rank, died = dead, True
                where = self._where(rank)
                self.shutdown()
                cause = "died" if died else f"failed ({_first_line(error)})"
                self.failure = f"train worker {rank}{where} {cause} during {what}"
                raise TrainWorkerError(
                    f"{self.failure}; the group is stopped and nothing of this step was saved"
                ) from None
        return ray.get(refs)

    def _where(self, rank: int) -> str:
        identities = getattr(self, "identities", None)
        if not identities:
            return ""
        who = identities[rank]
        return f" (node {who['node_ip']}, pid {who['pid']})"

    def shutdown(self) -> None:
        for actor in self.actors:
            ray.kill(actor, no_restart=True)
        self.actors = []


def _dead_peer(refs: list, pending: list, grace_s: float = 5.0) -> int | None:
    """The rank of a worker among ``pending`` whose actor died, waiting up to ``grace_s``."""
    if not pending:
        return None
    done, _ = ray.wait(pending, num_returns=len(pending), timeout=grace_s)
    for ref in done:
        try:
            ray.get(ref)
        except ray.exceptions.RayActorError:
            return refs.index(ref)
        except ray.exceptions.RayTaskError:
            continue
    return None


def _first_line(error: BaseException) -> str:
    cause = getattr(error, "cause", None) or error
    text = str(cause).strip().splitlines()
    return text[-1] if text else type(cause).__name__


def peak_rss(*, reset: bool = False) -> int:
    """Peak resident bytes of this process (``VmHWM`` of ``/proc/self/status``); ``reset``
    writes 5 to ``/proc/self/clear_refs``, which restarts the peak from the current size."""
    import gc

    if reset:
        gc.collect()
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")
