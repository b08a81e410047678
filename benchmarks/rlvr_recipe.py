"""The multi-domain RLVR recipe: per-domain greedy success before and during a run of the
``rlvr`` preset, as a table, a chart and JSON.

It trains ``roll-agent train --env rlvr`` for ``--minutes`` (the preset's 60 by default; the
preset evaluates the starting policy as step 0 and every 10 steps after, and once more when
the time is up), unless ``--run`` names a finished run to read. Each evaluation plays the same
held-out seeds greedily; the preset's mix decides how many episodes each domain gets.

Run (from the repository root)::

    python benchmarks/rlvr_recipe.py                      # 60 minutes of training, then the report
    python benchmarks/rlvr_recipe.py --run runs/rlvr      # the report of a run already made
    python benchmarks/rlvr_recipe.py --quick              # 2 steps, 8 evaluation groups
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

DOMAINS = ("MathVerify-v0", "CodeSandbox-v0", "InstructionFollowing-v0", "JudgedAnswer-v0")


def evaluations(run: Path) -> list[dict[str, Any]]:
    """The run's evaluation records (``eval/...`` metrics), in step order."""
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return [r for r in rows if "eval/success" in r]


def _chart(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4))
    steps = [r["step"] for r in rows]
    for domain in DOMAINS:
        axes.plot(steps, [100 * r.get(f"eval/{domain}/success", 0.0) for r in rows], "o-",
                  label=domain)  # fmt: skip
    axes.set_xlabel("RL step")
    axes.set_ylabel("greedy success (%)")
    axes.set_title("rlvr preset, SmolLM2-135M: per-domain success on held-out seeds")
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    print(f"chart: {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, help="read this finished run instead of training")
    parser.add_argument("--minutes", type=float, default=60.0, help="training time (60)")
    parser.add_argument("--output", type=Path, default=Path("runs/rlvr"), help="the run folder")
    add_common_arguments(
        parser, default_json=RESULTS_DIR / "rlvr_recipe.json", quick="2 steps, 8 eval groups"
    )
    args = parse_arguments(parser, argv)
    run = args.run
    if run is None:
        run = args.output
        command = ["roll-agent", "train", "--env", "rlvr", "--output", str(run),
                   "--set", f"train.max_minutes={args.minutes}"]  # fmt: skip
        if args.quick:
            command += ["--steps", "2", "--set", "train.eval_groups=8", "--set",
                        "train.max_minutes=null"]  # fmt: skip
        print("$ " + " ".join(command), flush=True)
        subprocess.run(command, check=True)
    rows = evaluations(run)
    if not rows:
        print(f"{run} has no evaluation yet")
        return 1
    table = []
    for r in rows:
        cells = [f"{100 * r.get(f'eval/{d}/success', 0.0):.1f}" for d in DOMAINS]
        table.append([str(r["step"]), *cells, f"{100 * r['eval/success']:.1f}"])
    print_table(
        ["step", *DOMAINS, "all"],
        table,
        f"Greedy success (%) on held-out seeds, {run}",
    )
    first, last = rows[0], rows[-1]
    changes = {
        d: last.get(f"eval/{d}/success", 0.0) - first.get(f"eval/{d}/success", 0.0) for d in DOMAINS
    }
    episodes = {d: int(first.get(f"eval/{d}/episodes", 0)) for d in DOMAINS}
    for d in DOMAINS:
        print(f"{d}: {100 * changes[d]:+.1f} points over {episodes[d]} episodes")
    verdict = (
        "every domain rose"
        if all(c > 0 for c in changes.values())
        else "not every domain rose: " + ", ".join(
            f"{d} {'fell' if c < 0 else 'unchanged'}" for d, c in changes.items() if c <= 0
        )
    )  # fmt: skip
    print(verdict)
    chart = args.json.with_suffix(".png")
    _chart(rows, chart)
    write_report(
        args.json,
        {
            "run": str(run),
            "steps": last["step"],
            "evaluations": [
                {"step": r["step"], **{k: v for k, v in r.items() if k.startswith("eval/")}}
                for r in rows
            ],
            "change_points": {d: 100 * c for d, c in changes.items()},
            "eval_episodes": episodes,
            "verdict": verdict,
        },
        libraries=["torch", "ray"],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
