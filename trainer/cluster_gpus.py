"""The GPUs a run asks of its Ray cluster, checked before any actor starts.

Ray leaves an actor whose resources no node has pending, and the run waiting for it, without
an error. The train workers and the generator fleet are therefore counted against the
cluster's GPUs first, and a run that cannot fit is refused in one line naming the settings.

Example:
    >>> from trainer.config import RolloutConfig
    >>> generator_demand(RolloutConfig(generator_replicas=2, generator_gpus=0.5))
    ('rollout.generator_replicas=2 × rollout.generator_gpus=0.5', 1.0)
    >>> check_gpus([("train.workers=2 × train.worker_gpus=1", 2.0)], 1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    trainer.config.ConfigError: train.workers=2 × train.worker_gpus=1 need 2 GPUs but the ...
"""

from __future__ import annotations

from trainer.config import ConfigError, RolloutConfig

#: what asks for GPUs, named by its settings, and how many
Demand = tuple[str, float]


def generator_demand(rollout: RolloutConfig) -> Demand:
    """The GPUs the generator fleet reserves, named by its settings."""
    return (
        f"rollout.generator_replicas={rollout.generator_replicas} × "
        f"rollout.generator_gpus={rollout.generator_gpus:g}",
        rollout.generator_replicas * rollout.generator_gpus,
    )


def check_gpus(demands: list[Demand], available: float) -> None:
    """Refuses in one line what the Ray cluster's GPUs cannot hold: Ray would otherwise
    leave the actors pending, and the run waiting, forever."""
    asking = [(name, gpus) for name, gpus in demands if gpus > 0]
    needed = sum(gpus for _, gpus in asking)
    if needed > available:
        raise ConfigError(
            f"{' and '.join(name for name, _ in asking)} need {needed:g} GPUs but the Ray "
            f"cluster has {available:g}; lower them (fractions share a GPU: train.worker_gpus=0.5"
            " and rollout.generator_gpus=0.5 put a train worker and a generator on one)"
        )
