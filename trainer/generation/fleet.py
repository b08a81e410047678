"""``GeneratorFleet``: replicas of :class:`~trainer.generation.actor.GeneratorActor` on Ray.

* **Replicas**: ``replicas`` generator actors, each with the whole model. Env manager actors
  are given every handle and send all turns of one episode to one replica (sticky routing), the
  one holding that episode's cached prefix; see :class:`~trainer.rollout.env_actor
  .EnvManagerActor`.
* **Weight pushes in buckets**: :meth:`GeneratorFleet.push_weights` cuts the state dict into
  buckets of about ``bucket_mb`` (:func:`weight_buckets`), puts each in Ray's object store once,
  and every replica loads them one bucket at a time, so a replica never holds a second whole
  copy of the weights while it loads.
* **Restart with the current weights**: the fleet keeps the newest buckets' references in a
  :class:`WeightStore` actor. A replica whose process dies is restarted by Ray
  (``max_restarts=-1``), reads the store when it starts, and serves the newest weights, not
  the ones it was first built with; the requests it was running are sent again
  (``max_task_retries=-1``).

Example:
    >>> fleet = GeneratorFleet("tiny-random", replicas=2)  # doctest: +SKIP
    >>> fleet.push_weights(policy.state_dict(), version=1)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainer.generation.actor import GeneratorActor

__all__ = ["GeneratorFleet", "WeightStore", "weight_buckets"]


def weight_buckets(state_dict: Mapping[str, Any], bucket_mb: float) -> list[dict[str, Any]]:
    """Cuts a state dict into consecutive buckets of at most ``bucket_mb`` each.

    A tensor larger than a bucket gets a bucket of its own. Every key lands in exactly one
    bucket, in the state dict's order.

    Example:
        >>> import torch
        >>> state = {"a": torch.zeros(256), "b": torch.zeros(256), "c": torch.zeros(1024)}
        >>> [list(b) for b in weight_buckets(state, bucket_mb=2048 / 2**20)]
        [['a', 'b'], ['c']]
    """
    limit = bucket_mb * 2**20
    buckets: list[dict[str, Any]] = []
    size = 0.0
    for name, tensor in state_dict.items():
        nbytes = tensor.numel() * tensor.element_size()
        if not buckets or (size + nbytes > limit and buckets[-1]):
            buckets.append({})
            size = 0.0
        buckets[-1][name] = tensor
        size += nbytes
    return buckets


class WeightStore:
    """Holds the object references of the newest weight buckets and their version.

    The references are kept inside a list, so Ray passes them on as references (the buckets
    stay in the object store while the store holds them) instead of fetching them.
    """

    def __init__(self) -> None:
        self._buckets: list[Any] = []
        self._version = 0

    def set(self, buckets: list[Any], version: int) -> None:
        """Remembers ``buckets`` (a list of object references) as ``version``."""
        self._buckets, self._version = list(buckets), version

    def latest(self) -> tuple[list[Any], int]:
        """The newest buckets' references and their version (``[]`` and 0 before any push)."""
        return self._buckets, self._version


class GeneratorFleet:
    """Starts ``replicas`` generator actors serving ``model``.

    Args:
        model: a name :func:`trainer.models.load_model` accepts (a preset or a model folder).
        replicas: generator actors to start.
        bucket_mb: size of the weight buckets :meth:`push_weights` sends.
        num_cpus: Ray CPUs each replica reserves.
        num_gpus: Ray GPUs each replica reserves; above 0 the replicas generate on CUDA.
        actor_options: more Ray actor options for the replicas (resources, placement).
        **generator_options: passed to :class:`GeneratorActor` (``backend``, ``seed``,
            ``torch_threads``, ``max_batch_size``, ``dtype``...).
    """

    def __init__(
        self,
        model: str,
        *,
        replicas: int = 1,
        bucket_mb: float = 64.0,
        num_cpus: float = 1.0,
        num_gpus: float = 0.0,
        actor_options: dict[str, Any] | None = None,
        **generator_options: Any,
    ) -> None:
        import ray

        if replicas < 1:
            raise ValueError(f"a generator fleet needs at least one replica, got {replicas}")
        if bucket_mb <= 0:
            raise ValueError(f"bucket_mb must be positive, got {bucket_mb}")
        self.bucket_mb = bucket_mb
        self.store = ray.remote(num_cpus=0)(WeightStore).remote()
        remote = ray.remote(
            num_cpus=num_cpus, num_gpus=num_gpus, max_restarts=-1, max_task_retries=-1
        )(GeneratorActor).options(**(actor_options or {}))
        device = "cuda" if num_gpus > 0 else "cpu"
        self.replicas = [
            remote.remote(model, weight_store=self.store, device=device, **generator_options)
            for _ in range(replicas)
        ]

    def push_weights(self, state_dict: Mapping[str, Any], version: int) -> int:
        """Sends new weights to every replica in buckets; returns the number of buckets.

        Returns once every replica serves ``version``.
        """
        import ray

        buckets = [ray.put(bucket) for bucket in weight_buckets(state_dict, self.bucket_mb)]
        ray.get(self.store.set.remote(buckets, version))
        ray.get([replica.update_weights.remote(buckets, version) for replica in self.replicas])
        return len(buckets)

    def pause(self) -> None:
        """Every replica stops starting batches (:meth:`GeneratorActor.pause`); returns once
        none is generating."""
        import ray

        ray.get([replica.pause.remote() for replica in self.replicas])

    def resume(self) -> None:
        """Every replica starts batches again (:meth:`GeneratorActor.resume`)."""
        import ray

        ray.get([replica.resume.remote() for replica in self.replicas])

    def stats(self) -> list[dict[str, int]]:
        """Each replica's :meth:`GeneratorActor.get_stats`."""
        import ray

        return ray.get([replica.get_stats.remote() for replica in self.replicas])

    def shutdown(self) -> None:
        """Stops the replicas and the weight store."""
        import ray

        for actor in [*self.replicas, self.store]:
            ray.kill(actor, no_restart=True)
