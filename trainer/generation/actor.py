"""``GeneratorActor``: one generation backend serving single-prompt requests from many callers.

Env manager actors play their episodes independently, so their requests arrive one prompt at a
time. The actor queues them and runs whatever has gathered as one batched ``generate`` call
(request batching); the next batch starts as soon as the last one ends. A request whose caller
gave up (a straggler the scheduler aborted, through ``ray.cancel``) leaves the queue without
being run.

It is a plain class: ``ray.remote(GeneratorActor)`` makes it an actor (its methods are async,
so Ray runs it as an async actor and keeps taking requests while a batch runs in a thread), and
tests can also drive it in-process with ``asyncio``.

Example:
    >>> import asyncio
    >>> from trainer.generation import SamplingParams
    >>> server = GeneratorActor("tiny-random")
    >>> out = asyncio.run(server.generate([1, 2, 3], SamplingParams(max_new_tokens=2, seed=0)))
    >>> len(out.token_ids)
    2
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from trainer.generation import make_generator
from trainer.generation.base import GenerationOutput, SamplingParams
from trainer.generation.in_flight_weights import (
    IN_FLIGHT_MODES,
    InFlightMode,
    PendingWeights,
    decode_with_updates,
)

__all__ = ["GeneratorActor"]


@dataclass
class _Request:
    prompt: list[int]
    params: SamplingParams
    future: asyncio.Future[GenerationOutput]


class GeneratorActor:
    """Loads ``model`` and serves :meth:`generate` requests in batches.

    Args:
        model: a name :func:`trainer.models.load_model` accepts.
        backend: a :data:`trainer.generation.BACKENDS` name.
        seed: seeds the model's initialisation (``tiny-random``) and the batches' sampling.
        batch_wait_s: how long the first request of a batch waits for others to join it.
        torch_threads: torch's intra-op threads in this process (Ray gives an actor 1 unless
            told otherwise).
        weight_store: a :class:`~trainer.generation.fleet.WeightStore` actor: on start (a
            restart too) the actor loads the newest weights it holds.
        device: ``"cpu"``, or ``"cuda"`` for an actor Ray gave a GPU (a clear error if torch
            sees none there).
        in_flight_weights: when weights pushed during a batch load: ``next_turn`` (once the
            batch ends), ``keep_cache`` or ``recompute_prefix`` (between two of its decode
            steps; the continuous backend only). See
            :mod:`~trainer.generation.in_flight_weights`.
        **backend_kwargs: passed to the backend (``max_batch_size``, ``dtype``, ...).
    """

    def __init__(
        self,
        model: str,
        *,
        backend: str = "continuous",
        seed: int = 0,
        batch_wait_s: float = 0.002,
        torch_threads: int | None = None,
        weight_store: Any = None,
        device: str = "cpu",
        in_flight_weights: InFlightMode = "next_turn",
        **backend_kwargs: Any,
    ) -> None:
        import torch

        from trainer.models import load_model

        if torch_threads is not None:
            torch.set_num_threads(torch_threads)
        if device == "cuda" and not torch.cuda.is_available():
            visible = os.environ.get("CUDA_VISIBLE_DEVICES", "unset")
            raise RuntimeError(
                "rollout.generator_gpus > 0, but torch in this generator actor sees no CUDA GPU "
                f"(CUDA_VISIBLE_DEVICES={visible}, torch {torch.__version__}); install a CUDA "
                "build of torch on the GPU nodes, or set rollout.generator_gpus=0"
            )

        if in_flight_weights not in IN_FLIGHT_MODES:
            raise ValueError(
                f"in_flight_weights={in_flight_weights!r}; choose one of {list(IN_FLIGHT_MODES)}"
            )
        if in_flight_weights != "next_turn" and backend != "continuous":
            raise ValueError(
                f"in_flight_weights={in_flight_weights} loads weights between decode steps, "
                f"which only the continuous backend offers (backend={backend!r}); use "
                "in_flight_weights=next_turn"
            )
        policy, self.tokenizer = load_model(model, seed=seed)
        policy.to(device)
        self.generator = make_generator(
            backend, policy, self.tokenizer, device=torch.device(device), **backend_kwargs
        )
        self.in_flight_weights = in_flight_weights
        self._pending = PendingWeights()  # pushed weights a running batch has not loaded yet
        self._loaders: set[asyncio.Task[None]] = set()
        self.batch_wait_s = batch_wait_s
        self.version = 0
        self._seed = seed
        self._queue: list[_Request] = []
        self._arrived: asyncio.Event | None = None
        self._server: asyncio.Task[None] | None = None
        self._busy: asyncio.Lock | None = None
        self._running: asyncio.Event | None = None  # cleared while paused
        self.stats = {"requests": 0, "batches": 0, "cancelled": 0, "largest_batch": 0}
        if weight_store is not None:
            import ray

            buckets, version = ray.get(weight_store.latest.remote())
            for bucket in ray.get(buckets):
                self.generator.update_weights(bucket, strict=False)
            self.version = version

    async def generate(self, prompt: list[int], params: SamplingParams) -> GenerationOutput:
        """One reply to ``prompt``, sampled in a batch with the requests queued alongside."""
        self._start_serving()
        assert self._arrived is not None
        future: asyncio.Future[GenerationOutput] = asyncio.get_running_loop().create_future()
        request = _Request(list(prompt), params, future)
        self._queue.append(request)
        self.stats["requests"] += 1
        self._arrived.set()
        try:
            return await future
        except asyncio.CancelledError:
            if request in self._queue:  # not started: it never runs
                self._queue.remove(request)
            self.stats["cancelled"] += 1
            raise

    async def update_weights(self, weights: Mapping[str, Any] | list[Any], version: int) -> int:
        """Loads new weights; returns the version now served.

        With ``in_flight_weights="next_turn"`` they load between two batches, bucket by bucket.
        Otherwise every bucket is fetched first, and the weights load between two decode steps
        of the batch under way (or at once, when none runs).

        Args:
            weights: a whole state dict, or a list of Ray object references to buckets of one
                (:func:`~trainer.generation.fleet.weight_buckets`).
            version: the version number they become.
        """
        self._start_serving()
        assert self._busy is not None
        if self.in_flight_weights != "next_turn":
            return await self._load_in_flight(weights, version)
        async with self._busy:
            if isinstance(weights, Mapping):
                await asyncio.to_thread(self.generator.update_weights, weights)
            else:
                for reference in weights:
                    bucket = await reference
                    await asyncio.to_thread(self.generator.update_weights, bucket, strict=False)
            self.version = version
        return self.version

    async def _load_in_flight(self, weights: Mapping[str, Any] | list[Any], version: int) -> int:
        """Queues the weights for the running batch's thread, which loads them between two
        decode steps; if no batch runs, loads them here once none can start."""
        assert self._busy is not None
        if isinstance(weights, Mapping):
            parts = [(weights, True)]
        else:
            parts = [(await reference, False) for reference in weights]
        loop = asyncio.get_running_loop()
        loaded: asyncio.Future[int] = loop.create_future()

        def done(served: int) -> None:
            loop.call_soon_threadsafe(lambda: loaded.done() or loaded.set_result(served))

        self._pending.put(parts, version, done)

        async def load_between_batches() -> None:
            assert self._busy is not None
            async with self._busy:  # no batch runs: load what none has loaded
                await asyncio.to_thread(self._load_pending)

        task = loop.create_task(load_between_batches())
        self._loaders.add(task)
        task.add_done_callback(self._loaders.discard)
        return await loaded

    def _load_pending(self) -> bool:
        return self._pending.apply(self.generator, self._set_version)

    def _set_version(self, version: int) -> None:
        self.version = version

    def _decode(self, prompts: list[list[int]], params: SamplingParams) -> list[GenerationOutput]:
        """One batch, in a worker thread: whole under one version (``next_turn``), or with
        the weights that arrive loaded between its decode steps."""
        if self.in_flight_weights == "next_turn":
            outputs = self.generator.generate(prompts, params)
            # weights load only between batches: this version sampled every token
            for output in outputs:
                output.weight_versions = [self.version] * len(output.token_ids)
            return outputs
        return decode_with_updates(
            self.generator,
            prompts,
            params,
            version=lambda: self.version,
            load_pending=self._load_pending,
            mode=self.in_flight_weights,
        )

    async def pause(self) -> int:
        """Stops starting batches; returns once the running batch (if any) has ended, with the
        number of requests left waiting. Requests keep queueing until :meth:`resume`.

        An evaluation that measures the policy on its own generator pauses the training fleet,
        so episodes started ahead (``rollout.async_generation_ratio``) do not play on, for
        free, while the run's clock is stopped.
        """
        self._start_serving()
        assert self._busy is not None and self._running is not None
        self._running.clear()
        async with self._busy:  # the batch under way ends first
            pass
        return len(self._queue)

    async def resume(self) -> None:
        """Starts batches again after :meth:`pause` (the queued requests first)."""
        self._start_serving()
        assert self._running is not None
        self._running.set()

    async def get_stats(self) -> dict[str, int]:
        """Requests served, batches run, requests cancelled, the largest batch."""
        return {**self.stats, "version": self.version}

    def _start_serving(self) -> None:
        # one server task per event loop (Ray keeps one; each asyncio.run in a test is new)
        loop = asyncio.get_running_loop()
        if self._server is None or self._server.get_loop() is not loop:
            self._queue.clear()
            self._arrived, self._busy = asyncio.Event(), asyncio.Lock()
            self._running = asyncio.Event()
            self._running.set()
            self._server = loop.create_task(self._serve())

    async def _serve(self) -> None:
        assert self._arrived is not None and self._busy is not None
        assert self._running is not None
        while True:
            await self._arrived.wait()
            await asyncio.sleep(self.batch_wait_s)  # let the requests sent together gather
            self._arrived.clear()
            batch = [r for r in self._queue if not r.future.done()]
            self._queue.clear()
            # one generate call per set of sampling parameters (the seed aside)
            by_params: dict[SamplingParams, list[_Request]] = {}
            for request in batch:
                by_params.setdefault(replace(request.params, seed=None), []).append(request)
            for params, requests in by_params.items():
                await self._running.wait()
                async with self._busy:
                    self._seed += 1
                    seeded = replace(params, seed=self._seed) if params.temperature > 0 else params
                    try:
                        outputs = await asyncio.to_thread(
                            self._decode, [r.prompt for r in requests], seeded
                        )
                    except Exception as error:  # every waiting caller gets it
                        for request in requests:
                            if not request.future.done():
                                request.future.set_exception(error)
                        continue
                self.stats["batches"] += 1
                self.stats["largest_batch"] = max(self.stats["largest_batch"], len(requests))
                for request, output in zip(requests, outputs, strict=True):
                    if not request.future.done():
                        request.future.set_result(output)
