"""``Rollouts``: where a training run's episodes are played, the one interface the pipeline drives.

Two implementations: :class:`~trainer.training.local_rollouts.LocalRollouts` (``rollout.mode:
local``, one env manager in this process, in lockstep with the generator beside the trainer) and
:class:`~trainer.rollout.ray_rollouts.RayRollouts` (``rollout.mode: ray``, env manager actors
against a generator fleet). Each step the pipeline asks for the step's trajectories, trains on
them, and pushes the new weights back; it never reaches past this interface to the envs or the
generators.

Example:
    >>> from trainer.rollout.rollouts import Rollouts
    >>> sorted(name for name in dir(Rollouts) if not name.startswith("_"))
    ['evaluate', 'load_state_dict', 'metrics', 'push_weights', 'rollout', 'shutdown', 'state_dict']
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from trainer.rollout.trajectory import Trajectory

__all__ = ["Rollouts"]


@runtime_checkable
class Rollouts(Protocol):
    """What the pipeline needs of the side that plays episodes."""

    def rollout(self, step: int, version: int) -> list[Trajectory]:
        """The trajectories to train step ``step`` on, played under weights ``version`` (or,
        asynchronous on Ray, no more than ``rollout.async_generation_ratio`` versions before)."""
        ...

    def metrics(self) -> dict[str, float]:
        """The last :meth:`rollout`'s metrics: ``rollout/`` figures of every episode played
        (also those a filter left out), and the implementation's own counters."""
        ...

    def evaluate(self, version: int) -> dict[str, float]:
        """``eval/`` metrics of greedy episodes on the held-out seeds ``0 .. eval_groups - 1``."""
        ...

    def push_weights(self, state_dict: Any, version: int) -> None:
        """Gives the generators the policy's new weights."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint must keep of the rollouts' state (plain data)."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores :meth:`state_dict`'s state on resume."""
        ...

    def shutdown(self) -> None:
        """Stops what the rollouts started (actors, envs' browsers and sandboxes)."""
        ...
