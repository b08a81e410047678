"""``TrainWorkerError``, in a module of its own so that catching it does not import Ray.

``roll-agent train`` catches it around every run; a run in one process never starts Ray.
"""

from __future__ import annotations

__all__ = ["TrainWorkerError"]


class TrainWorkerError(RuntimeError):
    """A train worker died or failed; the message names it (rank, node, pid)."""
