"""The registry of training strategies: ``train.strategy`` -> how to build it and what it needs.

It is :data:`trainer.strategies.STRATEGIES` (that package re-exports everything here), kept in a
module of its own beside the package: the config checks ``train.strategy`` against it, and the
strategies' modules read the config, so the registry imports neither.

Everything that depends on the strategy reads its :class:`StrategySpec` here: the config's
allowed names and rules, the ``--strategy`` choices, the checks before a run
(:func:`~trainer.strategies.from_config.check_strategy`: what must be installed, its own
refusals), :func:`~trainer.strategies.from_config.build_strategy`, the memory plan (how the
training state is split over workers), the train workers (which policy each one builds) and
the pipeline (whether the policy is trained in this process). This module imports neither
torch nor Ray, so the CLI can list the names first; a built-in's functions are named by
``"module:function"`` references and imported on first use.

Adding a strategy
-----------------

Write one module with a builder and register it; nothing else changes. The builder gets a
:class:`~trainer.strategies.base.StrategyRequest` (the config, the policy loaded in this
process, the keyword arguments of :class:`~trainer.strategies.torch_strategy.TorchStrategy`
that the config asks for) and returns an object with every method of the
:class:`~trainer.strategies.base.Strategy` protocol (``build_strategy`` refuses one that lacks
any)::

    from trainer.strategies import StrategySpec, register_strategy
    from trainer.strategies.torch_strategy import TorchStrategy


    class LoggedStrategy(TorchStrategy):
        def train_step(self, batch, **kwargs):
            metrics = super().train_step(batch, **kwargs)
            print(metrics["grad_norm"])
            return metrics


    register_strategy(
        StrategySpec(
            name="logged",
            build=lambda request: LoggedStrategy(request.model, **request.options),
            description="this process, printing each step's gradient norm",
        )
    )

Import that module before the config is built (``train.strategy=logged`` is then allowed).
A strategy that trains in Ray workers sets ``in_process=False`` (the pipeline then loads no
policy for it unless a generator in this process needs one), names the policy each worker
builds in ``worker_policy`` (a class taking the policy and the same keyword arguments, like
:class:`~trainer.strategies.sharded.FSDP2Strategy`; the workers get it with their spec, so they
need not see the registration), and says in ``memory`` how it splits the training state.
``tests/trainer/strategies/test_strategy_registry.py`` trains a step with each kind of such a
strategy. ``docs/extending/algorithm-and-strategy.md`` says what the trainer does with each field.

Example:
    >>> from trainer.strategies import STRATEGIES, strategy_spec
    >>> list(STRATEGIES)
    ['torch', 'fsdp2', 'deepspeed', 'megatron']
    >>> [name for name, spec in STRATEGIES.items() if spec.in_process]
    ['torch']
    >>> strategy_spec("fsdp3")
    Traceback (most recent call last):
    ...
    trainer.strategy_registry.UnknownStrategyError: Input should be 'torch', 'fsdp2', \
'deepspeed' or 'megatron' (got 'fsdp3'; did you mean 'fsdp2'?)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from trainer.lazy_reference import load_reference
from trainer.named_registry import NamedRegistry


class UnknownStrategyError(ValueError):
    """No strategy of that name is registered; the message lists those that are."""


@dataclass(frozen=True)
class Requirement:
    """An optional package a strategy imports, and the command that installs it."""

    module: str
    install: str


@dataclass(frozen=True)
class MemoryLayout:
    """How a strategy splits each worker's training state, for the memory plan.

    Attributes:
        splits_state_over: ``nothing`` (one process holds it all), ``workers`` (sharded over
            ``train.workers``, data parallel) or ``model_parallel`` (split over
            ``train.megatron.tensor_parallel``; activations too).
        zero_stage_setting: ``train.deepspeed.zero_stage`` chooses what is sharded (ZeRO's
            stages); otherwise weights, gradients and optimizer state all are.
        gathers_one_layer: sharded weights are all-gathered one layer at a time for compute.
        offloads: ``train.deepspeed.offload_optimizer`` and ``offload_params`` apply.
        scale_advice: what to change when the state does not fit (``{workers}``: their count).
    """

    splits_state_over: Literal["nothing", "workers", "model_parallel"] = "nothing"
    zero_stage_setting: bool = False
    gathers_one_layer: bool = False
    offloads: bool = False
    scale_advice: str = "add train.workers (now {workers})"


@dataclass(frozen=True)
class StrategySpec:
    """One training strategy and what the rest of the trainer must know of it.

    Attributes:
        name: the value of ``train.strategy`` (and ``--strategy``).
        build: the builder (a :class:`~trainer.strategies.base.StrategyBuilder`), or a
            ``"module:function"`` reference to it.
        description: one line, for listings and help.
        in_process: it trains the policy loaded in this process (``train.workers`` must be 1);
            otherwise its train workers load their own.
        requires: the optional package it needs, checked before a run.
        check: its own refusals of a config, a function of the config raising ``ConfigError``
            (or a reference to it), run after ``requires``.
        worker_policy: the class each train worker builds (or a reference to it), for a
            strategy that runs a group of train workers.
        memory: how it splits the training state.
        mixed_precision: it honours ``train.mixed_precision``.
        trains_selected_layers: it honours ``model.trainable_layers``.
        trains_lora: it trains ``model.lora``'s adapters.
    """

    name: str
    build: Callable[[Any], Any] | str
    description: str
    in_process: bool = True
    requires: Requirement | None = None
    check: Callable[[Any], None] | str | None = None
    worker_policy: type | str | None = None
    memory: MemoryLayout = MemoryLayout()
    mixed_precision: bool = False
    trains_selected_layers: bool = False
    trains_lora: bool = True

    def builder(self) -> Callable[[Any], Any]:
        """The builder, imported now if it was registered by reference."""
        return load_reference(self.build) if isinstance(self.build, str) else self.build

    def check_function(self) -> Callable[[Any], None] | None:
        """Its own config check (``None``: none), imported now if registered by reference."""
        return load_reference(self.check) if isinstance(self.check, str) else self.check

    def worker_policy_class(self) -> type:
        """The class each train worker builds.

        Raises:
            ValueError: the strategy trains in this process and has none.
        """
        if self.worker_policy is None:
            raise ValueError(f"train.strategy={self.name} has no train workers")
        if isinstance(self.worker_policy, str):
            return load_reference(self.worker_policy)
        return self.worker_policy


#: ``train.strategy`` when a config gives none.
DEFAULT_STRATEGY = "torch"

_registry = NamedRegistry[StrategySpec]("strategy", UnknownStrategyError)

#: Every registered strategy by name, in registration order (a read-only view).
STRATEGIES: Mapping[str, StrategySpec] = _registry.view


def register_strategy(spec: StrategySpec, *, replace: bool = False) -> StrategySpec:
    """Adds a strategy, so ``train.strategy`` (and ``--strategy``) accept its name.

    Args:
        spec: the strategy, its builder and its properties.
        replace: put ``spec`` in place of a registered strategy of the same name.

    Returns:
        ``spec``.

    Raises:
        ValueError: the name is empty, or taken and ``replace`` is false.
    """
    return _registry.add(spec, replace=replace)


def unregister_strategy(name: str) -> StrategySpec:
    """Removes a registered strategy (a test's own, when it is done).

    Args:
        name: the strategy's name.

    Returns:
        The spec that was registered.
    """
    return _registry.remove(name)


def strategy_spec(name: str) -> StrategySpec:
    """The registered strategy called ``name``.

    Args:
        name: a value of ``train.strategy``.

    Returns:
        Its spec.

    Raises:
        UnknownStrategyError: no strategy has that name; the message lists those that do and
            the closest.
    """
    return _registry.get(name)


_GROUPS = "trainer.strategies.ray_strategy"

for _spec in (
    StrategySpec(
        "torch",
        "trainer.strategies.torch_strategy:build_torch_strategy",
        "this process, on the CPU or one GPU (the default)",
        memory=MemoryLayout(scale_advice="use train.strategy=fsdp2 with train.workers > 1"),
        trains_selected_layers=True,
    ),
    StrategySpec(
        "fsdp2",
        f"{_GROUPS}:build_fsdp2_group",
        "a Ray group of train workers sharding the update with FSDP2",
        in_process=False,
        worker_policy="trainer.strategies.sharded:FSDP2Strategy",
        memory=MemoryLayout("workers", gathers_one_layer=True),
        mixed_precision=True,
    ),
    StrategySpec(
        "deepspeed",
        f"{_GROUPS}:build_deepspeed_group",
        "a Ray group of train workers sharding the update with DeepSpeed ZeRO "
        "(--set train.deepspeed.zero_stage=1|2|3)",
        in_process=False,
        # DeepSpeed compiles its C++ ops when first used, not at install
        requires=Requirement(
            "deepspeed",
            "pip install torch==2.13.0 && DS_BUILD_OPS=0 pip install 'rollenv[train,deepspeed]'",
        ),
        worker_policy="trainer.strategies.sharded:DeepSpeedStrategy",
        memory=MemoryLayout(
            "workers", zero_stage_setting=True, gathers_one_layer=True, offloads=True
        ),
    ),
    StrategySpec(
        "megatron",
        f"{_GROUPS}:build_megatron_group",
        "a Ray group of train workers with Megatron-core's tensor parallelism (CUDA GPUs)",
        in_process=False,
        requires=Requirement(
            "megatron", "pip install 'rollenv[train,megatron]' (its model runs on CUDA GPUs)"
        ),
        check="trainer.strategies.from_config:check_megatron",
        worker_policy="trainer.strategies.megatron_strategy:MegatronStrategy",
        trains_lora=False,
        memory=MemoryLayout(
            "model_parallel",
            scale_advice="raise train.megatron.tensor_parallel",
        ),
    ),
):
    register_strategy(_spec)
del _spec
