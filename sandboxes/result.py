"""``Result``: what one run of untrusted code gave."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Result:
    """The outcome of one sandboxed run.

    Attributes:
        stdout: what the program wrote to standard output (decoded as UTF-8, bad bytes replaced),
            cut at the output limit.
        stderr: the same for standard error.
        exit_code: the program's exit status; negative for a signal (``-9`` for SIGKILL), as in
            ``subprocess``; ``None`` if it never started.
        timed_out: the run hit its wall-clock deadline (or CPU limit) and was killed.
        oom_killed: the run ran out of its memory limit (killed, or a ``MemoryError``).
        duration_s: wall-clock seconds from start to the end of the run.
        output_truncated: stdout plus stderr passed the output limit; the run was stopped there.

    Example:
        >>> Result("hi\\n", "", 0, False, False, 0.01).ok
        True
    """

    stdout: str
    stderr: str
    exit_code: int | None
    timed_out: bool
    oom_killed: bool
    duration_s: float
    output_truncated: bool = False

    @property
    def ok(self) -> bool:
        """Whether the program ran to the end and exited with status 0."""
        return self.exit_code == 0 and not (
            self.timed_out or self.oom_killed or self.output_truncated
        )
