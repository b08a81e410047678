"""Random and oracle success of every registered env, grouped by family: the README's hub table.

For each id (or those of ``--family``), ``--episodes`` episodes of ``rollenv.policies``'
``RandomPolicy`` (uniform over the env's ``action_words``; for adapted games, the moves the game
lists, else sample replies) and, where the family has one, its oracle (``oracle_for``), seeds
``0..N-1``. An id stops early once ``--seconds-per-id`` have passed (the episodes played are
reported), so a browser or sandbox id cannot hold the run for long.

Prints one table per family (id, random success, oracle success, mean rewards, episodes) and a
summary (ids and families), and writes every figure to JSON with where and how it ran.

Run (from the repository root)::

    python benchmarks/hub_success.py --quick                  # 5 episodes an id
    python benchmarks/hub_success.py                          # 50 episodes an id
    python benchmarks/hub_success.py --family sokoban --episodes 200
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

import rollenv
from rollenv.policies import RandomPolicy, has_oracle, oracle_for, run_episode

#: not games: a mixture plays the others' episodes
NOT_A_GAME = {"Mixture-v0"}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=50, help="episodes a policy (50)")
    parser.add_argument("--family", action="append", help="only this family (repeatable)")
    parser.add_argument("--ids", nargs="*", help="only these ids")
    parser.add_argument(
        "--seconds-per-id", type=float, default=120.0, help="stop an id's episodes after (120)"
    )
    parser.add_argument("--max-turns", type=int, default=200, help="turn cap an episode (200)")
    add_common_arguments(
        parser, default_json=RESULTS_DIR / "hub_success.json", quick="5 episodes an id"
    )
    return parse_arguments(parser, argv, quick_defaults={"episodes": 5})


def play(env: Any, policy: Any, args: argparse.Namespace, deadline: float) -> dict[str, Any]:
    """Success rate and mean reward of ``policy`` over seeds ``0..episodes-1`` (until
    ``deadline``)."""
    results = []
    for seed in range(args.episodes):
        if results and time.monotonic() > deadline:
            break
        results.append(run_episode(env, policy, seed=seed, max_turns=args.max_turns))
    n = len(results)
    return {
        "episodes": n,
        "success": sum(r.success for r in results) / n,
        "mean_reward": sum(r.total_reward for r in results) / n,
        "mean_turns": sum(r.turns for r in results) / n,
    }


def measure(env_id: str, args: argparse.Namespace) -> dict[str, Any]:
    spec = rollenv.spec(env_id)
    started = time.monotonic()
    env = rollenv.make(env_id)
    try:
        deadline = started + args.seconds_per_id / 2
        figures: dict[str, Any] = {"family": spec.family, "random": None, "oracle": None}
        figures["random"] = play(env, RandomPolicy(env, seed=0), args, deadline)
        if has_oracle(spec):
            figures["oracle"] = play(env, oracle_for(env), args, deadline + args.seconds_per_id / 2)
    finally:
        env.close()
    figures["seconds"] = time.monotonic() - started
    return figures


def _rate(figures: dict[str, Any] | None) -> str:
    return "-" if figures is None else f"{figures['success']:.2f}"


def _reward(figures: dict[str, Any] | None) -> str:
    return "-" if figures is None else f"{figures['mean_reward']:.2f}"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    ids = args.ids or sorted(rollenv.registry)
    if args.family:
        wanted = {f.lower() for f in args.family}
        ids = [i for i in ids if (rollenv.spec(i).family or "").lower() in wanted]
    ids = [i for i in ids if i not in NOT_A_GAME]
    per_id: dict[str, dict[str, Any]] = {}
    failures: dict[str, str] = {}
    for index, env_id in enumerate(ids, 1):
        print(f"[{index}/{len(ids)}] {env_id}", flush=True)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                per_id[env_id] = measure(env_id, args)
        except Exception as error:  # noqa: BLE001 - report it, go on with the other ids
            failures[env_id] = f"{type(error).__name__}: {error}"
            print(f"  failed: {failures[env_id]}", flush=True)
    by_family: dict[str, list[str]] = defaultdict(list)
    for env_id, figures in per_id.items():
        by_family[figures["family"] or "-"].append(env_id)
    for family in sorted(by_family):
        rows = [
            [
                env_id,
                _rate(per_id[env_id]["random"]),
                _rate(per_id[env_id]["oracle"]),
                _reward(per_id[env_id]["random"]),
                _reward(per_id[env_id]["oracle"]),
                str(per_id[env_id]["random"]["episodes"]),
                f"{per_id[env_id]['seconds']:.1f}",
            ]
            for env_id in sorted(by_family[family])
        ]
        header = ["id", "random", "oracle", "random reward", "oracle reward", "episodes", "s"]
        print_table(header, rows, f"{family}: success rates ({len(rows)} ids)")
    summary = {
        "ids": len(per_id),
        "families": len(by_family),
        "ids_per_family": {family: len(ids) for family, ids in sorted(by_family.items())},
        "failed": len(failures),
        "unavailable": len(rollenv.registry.unavailable),
    }
    print(
        f"{summary['ids']} ids in {summary['families']} families measured; "
        f"{summary['failed']} failed; {summary['unavailable']} unavailable here"
    )
    write_report(
        args.json,
        {
            "settings": {k: v for k, v in vars(args).items() if k != "json"},
            "summary": summary,
            "per_id": per_id,
            "failures": failures,
        },
        libraries=["textarena", "gem-llm", "reasoning-gym", "minigrid", "gymnasium"],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
