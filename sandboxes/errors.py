"""The errors a caller of ``sandboxes`` can meet."""

from __future__ import annotations


class SandboxError(RuntimeError):
    """Something went wrong running code, not in the code itself (its failures are a Result)."""


class SandboxUnavailableError(SandboxError):
    """The requested backend cannot run on this machine; the message says how to install it."""
