"""Training strategies: the :class:`Strategy` protocol and the registry of strategies.

``train.strategy`` names an entry of :data:`STRATEGIES`; adding a strategy is one module that
registers it (see :mod:`trainer.strategy_registry`, which this package re-exports). Importing
this package imports neither torch nor Ray: the modules that train (``torch_strategy``,
``sharded``, ``ray_strategy``, ...) load when a strategy is built.
"""

from __future__ import annotations

from trainer.strategies.base import Strategy, StrategyBuilder, StrategyRequest, missing_methods
from trainer.strategy_registry import (
    DEFAULT_STRATEGY,
    STRATEGIES,
    MemoryLayout,
    Requirement,
    StrategySpec,
    UnknownStrategyError,
    register_strategy,
    strategy_spec,
    unregister_strategy,
)

__all__ = [
    "DEFAULT_STRATEGY",
    "STRATEGIES",
    "MemoryLayout",
    "Requirement",
    "Strategy",
    "StrategyBuilder",
    "StrategyRequest",
    "StrategySpec",
    "UnknownStrategyError",
    "missing_methods",
    "register_strategy",
    "strategy_spec",
    "unregister_strategy",
]
