"""``StopRequest``: the first Ctrl-C asks a run to stop at the next safe point; the second stops it.

The warm start and the RL loop both check ``requested`` between steps, save a checkpoint and
return, so ``--resume`` continues from there.

Example:
    >>> from trainer.training.stop_request import StopRequest
    >>> stop = StopRequest()
    >>> with stop.installed():
    ...     stop.requested
    False
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["RunStopped", "StopRequest"]


class StopRequest:
    """Turns the first Ctrl-C (SIGINT) into a request to stop after the current step.

    Args:
        announce: called once with a line that says what happens now.
        what: the step the run finishes before stopping (``"this step"``).
    """

    def __init__(self, announce: Callable[[str], None] = print, what: str = "this step") -> None:
        self.requested = False
        self._announce = announce
        self._what = what

    @contextmanager
    def installed(self) -> Iterator[StopRequest]:
        """Handles SIGINT while the block runs (in the main thread; elsewhere, Python's usual)."""

        def handle(signum: int, frame: Any) -> None:
            if self.requested:
                raise KeyboardInterrupt
            self.requested = True
            self._announce(
                f"Stopping after {self._what} and saving a checkpoint "
                "(Ctrl-C again to quit without saving)..."
            )

        try:
            previous = signal.signal(signal.SIGINT, handle)
        except ValueError:  # not the main thread
            yield self
            return
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)


class RunStopped(Exception):  # noqa: N818 - a stop the user asked for, not an error
    """Ctrl-C stopped a run in a phase that cannot hand back a result (the warm start); its
    checkpoint is saved and ``--resume`` continues from it.

    Attributes:
        checkpoint: the checkpoint it saved.
        phase: the phase it stopped in.
        step: the steps of that phase done.
    """

    def __init__(self, checkpoint: Path, phase: str, step: int) -> None:
        super().__init__(f"stopped in the {phase} at step {step}; saved {checkpoint}")
        self.checkpoint, self.phase, self.step = checkpoint, phase, step
