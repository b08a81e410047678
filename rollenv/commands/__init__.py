"""The hub's own ``roll-agent`` commands, one module a command: ``envs``, ``play``, ``check`` and
``serve-env``. They need only the hub, so none of them imports torch or Ray.

Example:
    >>> import argparse
    >>> from rollenv.commands import add_hub_commands
    >>> commands = argparse.ArgumentParser(prog="roll-agent").add_subparsers()
    >>> add_hub_commands(commands)
    >>> sorted(commands.choices)
    ['check', 'envs', 'play', 'serve-env']
"""

from __future__ import annotations

import argparse

from rollenv.commands.check_command import add_check_command
from rollenv.commands.envs_command import add_envs_command
from rollenv.commands.play_command import add_play_command
from rollenv.commands.serve_env_command import add_serve_env_command

__all__ = ["add_hub_commands"]


def add_hub_commands(commands: argparse._SubParsersAction) -> None:
    """Adds ``envs``, ``play``, ``check`` and ``serve-env`` to ``roll-agent``'s subcommands."""
    add_envs_command(commands)
    add_play_command(commands)
    add_check_command(commands)
    add_serve_env_command(commands)
