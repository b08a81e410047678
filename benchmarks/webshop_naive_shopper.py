"""How hard WebShop-v0 is: the naive shopper (a rule baseline) and the oracle, per difficulty.

The naive shopper (``environments.webshop.naive_shopper.NaiveShopper``) searches the
instruction text, opens the first hit, clicks the options whose names occur in the instruction
and buys; it reads only the pages. The oracle (``WebShopOracle``) knows the goal. Both play the
same ``--episodes`` instructions (seeds ``0..N-1``) of ``WebShop-v0`` at each difficulty.

In WebShop (Yao et al., 2022) the rule baseline scores 45.6 (mean reward x 100, success 9.6%)
and a human expert 82.1: the ``paper`` difficulty is meant to put the naive shopper's mean
reward in 0.35-0.60 while the oracle succeeds on at least 99% of instructions.

Run (from the repository root)::

    python benchmarks/webshop_naive_shopper.py           # 500 instructions each, seconds
    python benchmarks/webshop_naive_shopper.py --quick   # 50 instructions each

It prints a table (difficulty, policy, mean reward, success rate, episodes) and writes
``benchmarks/results/webshop_naive_shopper.json``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

REPO_ROOT = Path(__file__).resolve().parents[1]
# Benchmark the checkout this script lives in, not some other installed copy.
sys.path.insert(0, str(REPO_ROOT))

import rollenv  # noqa: E402
from environments.webshop.difficulty import DIFFICULTIES  # noqa: E402
from environments.webshop.naive_shopper import NaiveShopper  # noqa: E402
from rollenv.policies import oracle_for, run_episode  # noqa: E402

POLICIES = ("naive shopper", "oracle")


def play(difficulty: str, policy_name: str, episodes: int) -> dict[str, Any]:
    """Plays ``episodes`` instructions (seeds ``0..episodes-1``) and sums them up."""
    env = rollenv.make("WebShop-v0", difficulty=difficulty)
    policy = NaiveShopper(env) if policy_name == "naive shopper" else oracle_for(env)
    start = time.perf_counter()
    results = [run_episode(env, policy, seed=seed) for seed in range(episodes)]
    seconds = time.perf_counter() - start
    env.close()
    rewards = [r.total_reward for r in results]
    return {
        "difficulty": difficulty,
        "policy": policy_name,
        "episodes": episodes,
        "mean_reward": statistics.fmean(rewards),
        "success_rate": sum(r.success for r in results) / episodes,
        "mean_turns": statistics.fmean(r.turns for r in results),
        "seconds": seconds,
    }


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--episodes", type=int, default=500, help="instructions per difficulty (default 500)"
    )
    add_common_arguments(
        parser, default_json=RESULTS_DIR / "webshop_naive_shopper.json", quick="50 instructions"
    )
    args = parse_arguments(parser, argv, quick_defaults={"episodes": 50})
    if args.episodes < 1:
        parser.error(f"--episodes must be >= 1, got {args.episodes}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rows = [play(d, p, args.episodes) for d in DIFFICULTIES for p in POLICIES]
    print_table(
        ["difficulty", "policy", "mean reward", "success rate", "episodes"],
        [
            [
                r["difficulty"],
                r["policy"],
                f"{r['mean_reward']:.3f}",
                f"{r['success_rate']:.1%}",
                str(r["episodes"]),
            ]
            for r in rows
        ],
        "WebShop-v0: naive shopper (rule baseline) and oracle",
        left_columns=2,
    )
    write_report(
        args.json,
        {
            "episodes": args.episodes,
            "seeds": f"0..{args.episodes - 1}",
            "paper_rule_baseline": {"mean_reward": 0.456, "success_rate": 0.096},
            "rows": rows,
        },
        libraries=("bm25s", "rapidfuzz"),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
