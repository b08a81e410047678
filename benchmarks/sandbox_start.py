"""What a bubblewrap run costs to start from a large process: ``setpriv`` against ``Popen(user=)``.

Run as root, the bwrap backend drops each run to a leased uid. ``Popen(user=..., group=...,
extra_groups=[])`` makes Python start the child with ``fork``, which copies the caller's page
tables before the child drops its ids: the cost grows with the caller's resident memory (a
trainer, an env manager holding a model, a pytest worker that imported torch). The backend
instead runs ``setpriv --reuid --regid --clear-groups`` as the child's first program, so the
child starts with ``vfork``. This script runs ``print(1)`` in the bwrap sandbox both ways, from
this process holding 0 GB and then ``--resident-gb`` of touched memory, the two ways taking
turns over ``--rounds`` rounds, and prints the median run's wall time and the ratio.

    python benchmarks/sandbox_start.py                  # 4 GB, 3 rounds of 40 runs: ~30 s
    python benchmarks/sandbox_start.py --quick          # 1 GB, 1 round of 10 runs
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Sequence

from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

import sandboxes
from sandboxes.bwrap import BwrapBackend

WAYS = ("setpriv", "popen_user")


def _run_ms(backend: BwrapBackend, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = backend.run("print(1)")
        times.append(1000 * (time.perf_counter() - start))
        if result.exit_code != 0 or result.stdout != "1\n":
            raise RuntimeError(f"benchmark run failed: {result}")
    return times


def _measure(backend: BwrapBackend, setpriv: str | None, runs: int, rounds: int) -> dict:
    """Each way's run times (ms), the ways alternating round by round."""
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    _run_ms(backend, 3)  # warm caches
    for _ in range(rounds):
        for way in WAYS:
            backend.setpriv = setpriv if way == "setpriv" else None
            times[way] += _run_ms(backend, runs)
    backend.setpriv = setpriv
    return {way: {"median_ms": statistics.median(t), "runs": len(t)} for way, t in times.items()}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line: this benchmark's flags, ``--json`` and ``--quick``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="runs per way and round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, the ways taking turns")
    parser.add_argument(
        "--resident-gb", type=float, default=4.0, help="memory this process holds (touched)"
    )
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "sandbox_start.json",
        quick="1 GB, 1 round of 10 runs (about 5 s)",
    )
    return parse_arguments(parser, argv, {"runs": 10, "rounds": 1, "resident_gb": 1.0})


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if os.geteuid() != 0:
        print(
            "not root: the bwrap backend leases no uid, so the two ways are one; nothing measured"
        )
        return 1
    try:
        backend = sandboxes.get_backend("bwrap")
    except sandboxes.SandboxUnavailableError as error:
        print(f"no bwrap backend here: {error}")
        return 1
    setpriv = backend.setpriv
    if setpriv is None:
        print("setpriv is not installed (util-linux): nothing to compare")
        return 1
    results = {"0 GB": _measure(backend, setpriv, args.runs, args.rounds)}
    held = bytearray(int(args.resident_gb * (1 << 30)))
    for offset in range(0, len(held), 4096):  # touch every page: resident, not just reserved
        held[offset] = 1
    label = f"{args.resident_gb:g} GB"
    results[label] = _measure(backend, setpriv, args.runs, args.rounds)
    del held

    ratios = {
        size: figures["popen_user"]["median_ms"] / figures["setpriv"]["median_ms"]
        for size, figures in results.items()
    }
    rows = [
        [
            size,
            f"{figures['setpriv']['median_ms']:.1f}",
            f"{figures['popen_user']['median_ms']:.1f}",
            f"{ratios[size]:.2f}x",
        ]
        for size, figures in results.items()
    ]
    print_table(
        ["this process holds", "setpriv ms", "Popen(user=) ms", "Popen / setpriv"],
        rows,
        f"bwrap run of print(1), median of {args.rounds} x {args.runs} runs a way",
    )
    for size, ratio in ratios.items():
        print(f"holding {size}: Popen(user=) takes {ratio:.2f}x setpriv's time a run")
    write_report(
        args.json,
        {
            "runs": args.runs,
            "rounds": args.rounds,
            "resident_gb": args.resident_gb,
            "results": results,
            "ratio_popen_user_vs_setpriv": ratios,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
