"""``roll-agent config``: every training config field, its description, default and values.

``roll-agent config`` lists every field of :class:`trainer.config.Config` (the keys that
``--set`` and a YAML config take), each with its allowed values, default and description.
A key or section narrows the list (``roll-agent config train.deepspeed``); ``--env`` (a
preset or env id, as ``roll-agent train`` takes it), ``--config`` and ``--set`` show the
values such a run would use beside the defaults; ``--json`` prints the same as JSON. It
imports neither torch nor Ray.

Example:
    $ roll-agent config
    $ roll-agent config algorithm.clip_high
    $ roll-agent config train --env sokoban
    $ roll-agent config --json > config_fields.json
"""

from __future__ import annotations

import argparse
import difflib
import json
import shutil
import textwrap
from typing import TYPE_CHECKING

from rollenv.commands.arguments import UsageError

if TYPE_CHECKING:
    from trainer.config_reference import FieldDoc

__all__ = ["add_config_command", "run_config"]


def add_config_command(commands: argparse._SubParsersAction) -> None:
    """Adds ``config`` to ``roll-agent``'s subcommands."""
    parser = commands.add_parser(
        "config",
        help="List every training config field with its description, default and values.",
        description="List every field of the training config (the keys of --set and of a "
        "YAML config) with its allowed values, default and description. With --env, --config "
        "or --set, also the value such a run would use.",
    )
    parser.add_argument(
        "key",
        nargs="?",
        metavar="KEY",
        help="a field or section to show (e.g. train.deepspeed); default: every field",
    )
    parser.add_argument(
        "--env", metavar="ENV", help="show a run's values: a preset (sokoban) or an env id"
    )
    parser.add_argument("--config", metavar="FILE", help="show the values of a YAML config")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="apply an override before showing the values (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print the fields as JSON")
    parser.set_defaults(handler=run_config)


def run_config(args: argparse.Namespace) -> int:
    """``roll-agent config``: prints the fields (all, or those under ``args.key``)."""
    from rollenv import UnknownEnvError
    from trainer.config import ConfigError
    from trainer.config_reference import config_fields

    every_field = config_fields()
    fields = _selected(every_field, args.key)
    try:
        values = _run_values(args, {doc.key for doc in every_field if doc.section})
    except (ConfigError, UnknownEnvError) as error:
        raise UsageError(str(error)) from None
    if args.json:
        rows = []
        for doc in fields:
            row = {
                "key": doc.key,
                "description": doc.description,
                "default": doc.default,
                "allowed": doc.allowed,
                "section": doc.section,
            }
            if values is not None and not doc.section:
                row["value"] = values[doc.key]
            rows.append(row)
        print(json.dumps(rows, indent=2))
        return 0
    width = min(shutil.get_terminal_size((100, 24)).columns, 100)
    for doc in fields:
        print(_entry(doc, None if values is None else values.get(doc.key), width))
    return 0


def _selected(fields: list[FieldDoc], key: str | None) -> list[FieldDoc]:
    """The fields named ``key`` or under it; an unknown key is a usage error with close names."""
    if key is None:
        return fields
    from trainer.config import MOVED_KEYS, REMOVED_KEYS

    chosen = [doc for doc in fields if doc.key == key or doc.key.startswith(key + ".")]
    if chosen:
        return chosen
    if key in MOVED_KEYS:
        raise UsageError(f"{key} moved to {MOVED_KEYS[key]}")
    if key in REMOVED_KEYS:
        raise UsageError(f"{key} was removed: {REMOVED_KEYS[key]}")
    close = difflib.get_close_matches(key, [doc.key for doc in fields], n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(close)}?" if close else "; run 'roll-agent config'"
    raise UsageError(f"no config field {key!r}{hint}")


def _run_values(args: argparse.Namespace, sections: set[str]) -> dict[str, str] | None:
    """Each field's value in the run ``--env``/``--config``/``--set`` describe (``None``:
    none of them given), written as the defaults are."""
    from trainer.cli.launch import config_from_args
    from trainer.config import load_config
    from trainer.config_reference import value_text

    if not (args.env or args.config or args.set):
        return None
    if args.env or args.config:
        run = argparse.Namespace(env=args.env or "", config=args.config, set=args.set)
        config = config_from_args(run)
    else:
        config = load_config(None, args.set)
    values: dict[str, str] = {}

    def flatten(tree: dict, prefix: str) -> None:
        for name, value in tree.items():
            values[prefix + name] = value_text(value)
            if isinstance(value, dict) and prefix + name in sections:
                flatten(value, prefix + name + ".")

    flatten(config.model_dump(), "")
    return values


def _entry(doc: FieldDoc, value: str | None, width: int) -> str:
    """One field: ``key  default D  (allowed)``, the run's value where it differs, then the
    description indented."""
    head = f"{doc.key}  default {doc.default}" if not doc.section else f"{doc.key}  (section)"
    if value is not None and not doc.section and value != doc.default:
        head = f"{doc.key} = {value}  (default {doc.default})"
    if not doc.section:
        head += f"  [{doc.allowed}]"
    body = textwrap.fill(
        doc.description.replace("``", "`"),
        width=width,
        initial_indent="    ",
        subsequent_indent="    ",
    )
    return f"{head}\n{body}" if body else head
