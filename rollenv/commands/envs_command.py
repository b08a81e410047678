"""``roll-agent envs``: the registry as a table, by family, with the ids this machine cannot run
marked and why.

Example:
    $ roll-agent envs --family sokoban
"""

from __future__ import annotations

import argparse
import difflib
from collections import Counter
from typing import TYPE_CHECKING, Any

from rollenv.commands.arguments import UsageError
from rollenv.commands.terminal import print_table

if TYPE_CHECKING:
    pass

#: follows an id in ``roll-agent envs`` that its family knows but cannot run here
UNAVAILABLE_MARK = "(unavailable)"

__all__ = ["add_envs_command", "run_envs"]


def add_envs_command(commands: argparse._SubParsersAction) -> None:
    """Adds ``envs`` to ``roll-agent``'s subcommands."""
    parser = commands.add_parser(
        "envs",
        help="List the registered environments.",
        description="List the registered environments: id, family, turn limit and description. "
        "Third-party packages add environments through the 'rollenv.envs' entry-point group.",
    )
    parser.add_argument(
        "--family", metavar="NAME", help="only the environments of this family (e.g. sokoban)"
    )
    parser.add_argument(
        "--unavailable",
        action="store_true",
        help="list the ids that families know but cannot run here, and why (a missing extra, "
        "data that needs a download)",
    )
    parser.set_defaults(handler=run_envs)


# ---------------------------------------------------------------------------------- envs
def run_envs(args: argparse.Namespace) -> int:
    """``roll-agent envs``: prints the registry grouped by family, then a count per family.

    An id that its family knows but cannot run here (a missing extra, data that needs a
    download) is listed too, marked ``(unavailable)``, with the reason and, where there is one,
    the ``pip install`` that fixes it. With ``--unavailable``, only those ids.
    """
    import rollenv

    specs = sorted(rollenv.registry.values(), key=lambda spec: (spec.family or "", spec.id))
    unavailable = sorted(
        rollenv.registry.unavailable.values(), key=lambda entry: (entry.family or "", entry.id)
    )
    if args.family is not None:
        specs, unavailable = _of_family(specs, args.family), _of_family(unavailable, args.family)
        if not specs and not unavailable:
            _raise_unknown_family(args.family, rollenv.registry)
    if args.unavailable:
        print_table(
            ["id", "family", "why it cannot run here"],
            [[entry.id, entry.family or "-", entry.reason] for entry in unavailable],
            title=f"rollenv environments unavailable here: {len(unavailable)}",
            no_wrap_columns=1,
        )
        return 0
    rows = [
        [
            spec.id,
            spec.family or "-",
            "-" if spec.max_episode_steps is None else str(spec.max_episode_steps),
            spec.description,
        ]
        for spec in specs
    ]
    # an id that cannot run here is listed too, marked, with why and the command that fixes it
    rows += [
        [
            f"{entry.id} {UNAVAILABLE_MARK}",
            entry.family or "-",
            "-",
            f"unavailable here: {entry.reason}",
        ]
        for entry in unavailable
    ]
    rows.sort(key=lambda row: (row[1], row[0]))
    families = Counter(spec.family or "-" for spec in specs)
    title = f"rollenv environments: {len(specs)} ids in {len(families)} families"
    if unavailable:
        title += f"; {len(unavailable)} more, marked {UNAVAILABLE_MARK}, cannot run here"
    print_table(
        ["id", "family", "max turns", "description"],
        rows,
        title=title,
        no_wrap_columns=1,
    )
    missing = Counter(entry.family or "-" for entry in unavailable)
    print_table(
        ["family", "ids", "unavailable here"],
        [
            [family, str(families[family]), str(missing.get(family, 0))]
            for family in sorted(families | missing)
        ],
        title="families (roll-agent envs --family NAME; --unavailable: what cannot run and why)",
        no_wrap_columns=1,
    )
    return 0


def _of_family(entries: list[Any], family: str) -> list[Any]:
    """The specs (or unavailable entries) of ``family``, in any case."""
    return [entry for entry in entries if (entry.family or "").lower() == family.lower()]


def _raise_unknown_family(family: str, registry: Any) -> None:
    known = [*registry.values(), *registry.unavailable.values()]
    families = sorted({entry.family for entry in known if entry.family})
    close = difflib.get_close_matches(family.lower(), families, n=3, cutoff=0.5)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise UsageError(
        f"no environment family {family!r}.{hint} Families: {', '.join(families) or '(none)'}"
    )
