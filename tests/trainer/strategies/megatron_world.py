"""A one-process world for Megatron-core tests, and the patches its forward needs on a CPU.

Megatron-core's ``GPTModel`` is written for CUDA. On a CPU its forward fails in two places
that do not change the maths, which :func:`cpu_forward_patches` replaces while it is active:

* ``torch.cuda.current_device()`` is asked for the device of the rotary table, the attention
  scores' buffer and the tensor-parallel gathers: it answers ``"cpu"``;
* attention dropout forks the CUDA RNG tracker, whose state only
  ``model_parallel_cuda_manual_seed`` (CUDA) adds: the fork does nothing (the models here have
  no attention dropout).

On a GPU nothing is patched.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

import torch

from trainer.strategies.sharded import process_group_backend


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def megatron_world(
    rank: int = 0,
    world: int = 1,
    port: int | None = None,
    backend: str | None = None,
    tensor_parallel: int = 1,
) -> Iterator[None]:
    """torch.distributed (``backend``; by default a train-worker group's: NCCL and gloo where
    there is a GPU, else gloo) and
    Megatron's parallel state with ``tensor_parallel`` and a pipeline parallel size of 1.
    torch.distributed is not started again if a world of that size exists."""
    import torch.distributed as dist
    from megatron.core import parallel_state

    started = not dist.is_initialized()
    if started:
        backend = backend or process_group_backend("cuda" if torch.cuda.is_available() else "cpu")
        port = port or free_port()
        dist.init_process_group(
            backend, init_method=f"tcp://127.0.0.1:{port}", world_size=world, rank=rank
        )
    elif dist.get_world_size() != world:
        raise RuntimeError(f"torch.distributed already runs a world of {dist.get_world_size()}")
    parallel_state.initialize_model_parallel(tensor_parallel, 1)
    try:
        yield
    finally:
        parallel_state.destroy_model_parallel()
        if started:
            dist.destroy_process_group()


@contextlib.contextmanager
def cpu_forward_patches() -> Iterator[None]:
    """Lets Megatron-core's local-spec ``GPTModel`` run on the CPU (see the module's text)."""
    from megatron.core import parallel_state, tensor_parallel

    def new_buffer() -> None:
        # Megatron's global memory buffer keeps the attention scores' tensor, made on the
        # device of the forward that asked first: a forward on another device must not get it
        parallel_state.destroy_global_memory_buffer()
        parallel_state._set_global_memory_buffer()

    tracker = tensor_parallel.get_cuda_rng_tracker()
    saved = torch.cuda.current_device, tracker.fork
    torch.cuda.current_device = lambda: "cpu"
    tracker.fork = lambda *args, **kwargs: contextlib.nullcontext()
    new_buffer()
    try:
        yield
    finally:
        torch.cuda.current_device, tracker.fork = saved
        new_buffer()
