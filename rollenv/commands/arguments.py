"""What every ``roll-agent`` command shares: its name, its usage error, its argument types.

Example:
    >>> from rollenv.commands.arguments import positive_int
    >>> positive_int("3")
    3
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from rollenv import EnvSpec

__all__ = [
    "PROG",
    "USAGE_ERROR",
    "OneLineErrorParser",
    "UsageError",
    "env_spec",
    "integer",
    "non_negative_int",
    "positive_int",
]

PROG = "roll-agent"
USAGE_ERROR = 2


class UsageError(Exception):
    """A mistake the user made on the command line; ``main`` prints it as one line."""


class OneLineErrorParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, pointing at ``--help``."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def positive_int(text: str) -> int:
    value = integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    value = integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None


def env_spec(env_id: str) -> EnvSpec:
    """The spec of ``env_id``, or a ``UsageError`` naming the closest registered ids."""
    import rollenv

    try:
        return rollenv.spec(env_id)
    except (rollenv.UnknownEnvError, rollenv.EnvUnavailableError) as error:
        raise UsageError(str(error)) from None
