"""The GPUs a run asks of its Ray cluster, checked before any actor starts.

Ray leaves an actor whose resources no node has pending, and the run waiting for it, without
an error. The train workers and the generator fleet are therefore counted against the
cluster's GPUs first, and a run that cannot fit is refused in one line naming the settings.

Example:
    >>> from trainer.config import RolloutConfig
    >>> wanted = []
    >>> generator_gpus_needed(RolloutConfig(generator_replicas=2, generator_gpus=0.5), wanted)
    1.0
    >>> check_gpus(2.0, ["train.workers=2 × train.worker_gpus=1"], 1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    trainer.config.ConfigError: train.workers=2 × train.worker_gpus=1 need 2 GPUs but the ...
"""

from __future__ import annotations

from trainer.config import ConfigError, RolloutConfig


def generator_gpus_needed(rollout: RolloutConfig, wanted: list[str]) -> float:
    """The GPUs the generator fleet reserves; names its settings in ``wanted`` if any."""
    needed = rollout.generator_replicas * rollout.generator_gpus
    if needed:
        wanted.append(
            f"rollout.generator_replicas={rollout.generator_replicas} × "
            f"rollout.generator_gpus={rollout.generator_gpus:g}"
        )
    return needed


def check_gpus(needed: float, wanted: list[str], available: float) -> None:
    """Refuses in one line what the Ray cluster's GPUs cannot hold: Ray would otherwise
    leave the actors pending, and the run waiting, forever."""
    if needed > available:
        raise ConfigError(
            f"{' and '.join(wanted)} need {needed:g} GPUs but the Ray cluster has "
            f"{available:g}; lower them (fractions share a GPU: train.worker_gpus=0.5 and "
            "rollout.generator_gpus=0.5 put a train worker and a generator on one)"
        )
