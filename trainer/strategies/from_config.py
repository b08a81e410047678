"""The training strategy and device a config asks for.

``train.strategy`` names an entry of :data:`trainer.strategies.STRATEGIES`. A strategy that
trains in this process is checked and built at once; one with train workers (a Ray group of
``train.workers``, :class:`~trainer.strategies.ray_strategy.RayStrategy`) after the Ray
cluster's size and a memory plan have shown that the config fits them.

Example:
    >>> from trainer.strategies.from_config import resolve_device
    >>> resolve_device("cpu")
    device(type='cpu')
"""

from __future__ import annotations

import importlib.util
import warnings
from dataclasses import replace

import torch

from trainer.algorithms import ALGORITHMS
from trainer.cluster_gpus import check_gpus, generator_demand
from trainer.config import Config, ConfigError
from trainer.name_choices import listed
from trainer.strategies.allocator import (
    AllocatorError,
    allocator_env_vars,
    jemalloc_library,
    loaded_allocator,
)
from trainer.strategies.base import Strategy, StrategyRequest, missing_methods
from trainer.strategies.host_memory import return_freed_tensors_to_os
from trainer.strategies.torch_strategy import LossSettings
from trainer.strategy_registry import STRATEGIES, strategy_spec

__all__ = ["build_strategy", "check_strategy", "resolve_device", "worker_gpus"]


def resolve_device(setting: str) -> torch.device:
    """``auto`` is the GPU when there is one, else the CPU; ``cuda`` without a GPU is an error."""
    if setting == "cuda" and not torch.cuda.is_available():
        raise ConfigError("train.device=cuda but torch sees no GPU; use auto or cpu")
    if setting == "auto":
        setting = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(setting)


def strategy_options(config: Config, *, lr: float | None = None) -> dict:
    """:class:`TorchStrategy` keyword arguments (``lr`` overrides ``optim.lr``, as SFT does)."""
    algorithm = config.algorithm
    return {
        "loss": LossSettings(
            clip_low=algorithm.clip_low,
            clip_high=algorithm.clip_high,
            dual_clip=algorithm.dual_clip,
            aggregation=algorithm.aggregation,
            kl_coef=algorithm.kl_coef,
            kl_estimator=algorithm.kl_estimator,
            kl_in_loss=algorithm.kl_mode == "loss",
            entropy_coef=algorithm.entropy_coef,
            value_coef=algorithm.value_coef,
            temperature=max(config.sampling.temperature, 1e-6),
            importance_cap=(
                algorithm.importance_cap if algorithm.off_policy_correction == "tis" else None
            ),
        ),
        "lr": config.optim.lr if lr is None else lr,
        "weight_decay": config.optim.weight_decay,
        "grad_clip": config.optim.grad_clip,
        "micro_batch_tokens": config.optim.micro_batch_tokens,
        "lora": config.model.lora,
        "value_head": ALGORITHMS[algorithm.name].needs_critic,
        "reference": algorithm.kl_coef > 0,
        "activation_checkpointing": config.train.activation_checkpointing,
        "trainable_layers": config.model.trainable_layers,
    }


def check_strategy(config: Config) -> None:
    """Refuses, in one line each, a strategy this machine cannot run: not installed, its own
    refusals (GPU-only without a GPU, ...), more workers than the Ray cluster has CPUs or GPUs,
    or a memory plan that does not fit. Starts Ray if needed (it reads the cluster's size)."""
    train = config.train
    spec = strategy_spec(train.strategy)
    if spec.requires is not None and importlib.util.find_spec(spec.requires.module) is None:
        raise ConfigError(
            f"train.strategy={spec.name} needs {spec.requires.module}, which is not installed: "
            f"{spec.requires.install}"
        )
    if spec.in_process:
        _check_allocator_here(config)
    own_check = spec.check_function()
    if own_check is not None:
        own_check(config)
    if spec.in_process:
        return
    cuda = resolve_device(train.device).type == "cuda"
    try:
        allocator_env_vars(train.allocator)
    except AllocatorError as error:
        raise ConfigError(str(error)) from None
    _check_cluster(config, cuda)
    _check_memory(config)


def _check_allocator_here(config: Config) -> None:
    """A strategy that trains in this process uses the allocator this process started with."""
    if config.train.allocator == "default" or loaded_allocator() == "jemalloc":
        return
    try:
        allocator_env_vars("jemalloc")
    except AllocatorError as error:
        raise ConfigError(str(error)) from None
    grouped = [name for name, spec in STRATEGIES.items() if not spec.in_process]
    raise ConfigError(
        f"train.allocator=jemalloc: train.strategy={config.train.strategy} trains in this "
        f"process, which was started without it: start it with LD_PRELOAD={jemalloc_library()} "
        f"({listed(grouped, 'and')} start their train workers with it)"
    )


def check_megatron(config: Config) -> None:
    """The megatron strategy's need of CUDA GPUs, refused in one line (the megatron entry's
    ``check`` in the registry; what it does not train is refused by the config itself)."""
    if resolve_device(config.train.device).type != "cuda":
        raise ConfigError(
            "train.strategy=megatron needs CUDA GPUs (megatron-core asks torch.cuda for its "
            "buffers and RNG states); on this machine use train.strategy=fsdp2 or deepspeed"
        )


def _check_cluster(config: Config, cuda: bool) -> None:
    import ray

    if not ray.is_initialized():
        ray.init(address=config.rollout.ray_address, include_dashboard=False, log_to_driver=False)
    train = config.train
    total = ray.cluster_resources()
    cpus_needed = train.workers * train.worker_cpus
    if config.rollout.mode == "ray":
        rollout = config.rollout
        cpus_needed += rollout.generator_replicas * rollout.generator_cpus
        cpus_needed += rollout.env_managers * rollout.env_manager_cpus
    if cpus_needed > total.get("CPU", 0):
        raise ConfigError(
            f"train.workers={train.workers} × train.worker_cpus={train.worker_cpus:g}"
            + (" with the rollout actors" if config.rollout.mode == "ray" else "")
            + f" need {cpus_needed:g} CPUs but the Ray cluster has {total.get('CPU', 0):g}; "
            "lower train.workers or train.worker_cpus (0.5 shares a core), or add nodes"
        )
    gpus = worker_gpus(config, cuda)
    demands = [
        (f"train.workers={train.workers} × train.worker_gpus={gpus:g}", train.workers * gpus)
    ]
    if config.rollout.mode == "ray":
        demands.append(generator_demand(config.rollout))
    check_gpus(demands, total.get("GPU", 0))
    for name, amount in train.worker_resources.items():
        if train.workers * amount > total.get(name, 0):
            raise ConfigError(
                f"train.worker_resources: {train.workers} workers need {train.workers * amount:g}"
                f" of resource {name!r}, the Ray cluster has {total.get(name, 0):g}"
            )


def worker_gpus(config: Config, cuda: bool) -> float:
    """GPUs of each train worker: ``train.worker_gpus``, else one each when training on CUDA."""
    if config.train.worker_gpus is not None:
        return config.train.worker_gpus
    return 1.0 if cuda else 0.0


def _check_memory(config: Config) -> None:
    from trainer.models import model_config
    from trainer.strategies.memory_plan import (
        available_memory_per_worker,
        check_fits,
        plan_for_config,
    )

    hf_config = model_config(config.model.name, seed=config.train.seed)
    if hf_config is not None:
        check_fits(plan_for_config(config, hf_config), available_memory_per_worker(config))


def build_strategy(
    config: Config,
    model: torch.nn.Module | None,
    pad_id: int,
    *,
    lr: float | None = None,
    model_name: str | None = None,
    vocabulary: tuple[int, ...] | None = None,
) -> Strategy:
    """The strategy ``train.strategy`` names, checked (:func:`check_strategy`) and built by its
    registered builder: around ``model`` in this process, or as train workers that load
    ``model_name`` (default ``model.name``) themselves.

    Args:
        config: the run's config.
        model: the policy loaded in this process, if any.
        pad_id: the tokenizer's padding id.
        lr: the learning rate, in place of ``optim.lr`` (the warm start's).
        model_name: what train workers load, in place of ``model.name``.
        vocabulary: the token ids replies are scored among (``LossSettings.vocabulary``).

    Returns:
        The strategy.

    Raises:
        ConfigError: this machine cannot run the strategy (see :func:`check_strategy`).
        TypeError: the registered builder returned an object that is not a ``Strategy``.
    """
    options = {"pad_id": pad_id, **strategy_options(config, lr=lr)}
    if vocabulary is not None:
        options["loss"] = replace(options["loss"], vocabulary=tuple(vocabulary))
    spec = strategy_spec(config.train.strategy)
    request = StrategyRequest(config, model, options, model_name or config.model.name)
    if spec.in_process:
        check_strategy(config)
        if config.train.return_freed_memory and not return_freed_tensors_to_os():
            warnings.warn(
                "train.return_freed_memory does nothing here: it needs glibc's malloc (Linux)",
                stacklevel=2,
            )
    else:
        import ray

        started_ray = not ray.is_initialized()
        try:
            check_strategy(config)  # starts Ray to read the cluster's size
        except ConfigError:
            if started_ray and ray.is_initialized():
                ray.shutdown()
            raise
        request = replace(request, started_ray=started_ray)
    strategy = spec.builder()(request)
    missing = missing_methods(strategy)
    if missing:
        raise TypeError(
            f"train.strategy={spec.name}: its builder returned a {type(strategy).__name__}, "
            f"which lacks {', '.join(missing)} of the Strategy protocol "
            "(trainer.strategies.base.Strategy)"
        )
    return strategy
