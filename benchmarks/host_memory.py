"""What ``train.return_freed_memory`` costs and saves: one policy update with it off and on.

For each of torch x1 (one process, 2 torch threads) and fsdp2 x2 (two processes of 1 thread,
gloo), the same update (``train_step`` on the batch of ``train_scale.py``: 8 seeded random
sequences of 256 tokens, loss on the second half) runs ``--steps`` times in fresh processes,
once with glibc's default allocator settings and once with
``trainer.strategies.host_memory.return_freed_tensors_to_os`` called first. Arms alternate
(off, on, off, on, ...) over ``--rounds`` rounds, so a change in the machine's load weighs on
both.

Measured per process: the peak resident set (``VmHWM``, reset once the strategy is built, read
after the last step: model and libraries included; the larger worker's for x2), the resident
set after the last step (what the process keeps between updates) and the median step seconds.
The ratios are "on" over "off" for the same strategy, each round's pair first, then the median.

Run (from the repository root)::

    python benchmarks/host_memory.py           # SmolLM2-135M, 2 rounds, ~8 min
    python benchmarks/host_memory.py --quick   # tiny-random, 1 round, ~1 min
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # benchmark this checkout

CORES = 2
MB = 2**20
ARMS = {"torch x1": ("torch", 1), "fsdp2 x2": ("fsdp2", 2)}


def _resident_mb() -> float:
    """This process's resident set now (``VmRSS``), in MB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def _one_process(rank: int, world: int, kind: str, port: int, settings: dict, out) -> None:
    """One process of a run (``torch.multiprocessing.spawn`` calls it): builds the strategy,
    runs the steps, puts ``(rank, result)`` on ``out``."""
    import torch
    from train_scale import build_batch

    from trainer.models import load_model, load_tokenizer
    from trainer.strategies.host_memory import return_freed_tensors_to_os
    from trainer.strategies.token_balance import split_for_workers
    from trainer.strategies.torch_strategy import LossSettings, TorchStrategy
    from trainer.strategies.worker_group import peak_rss

    torch.set_num_threads(CORES // world)
    if settings["return_freed"]:
        return_freed_tensors_to_os()
    if world > 1:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        torch.distributed.init_process_group("gloo", rank=rank, world_size=world)
    model, _ = load_model(settings["model"], seed=0)
    tokenizer = load_tokenizer(settings["model"])
    options = {
        "pad_id": tokenizer.pad_token_id,
        "lr": 1e-5,
        "loss": LossSettings(),
        "micro_batch_tokens": settings["micro_batch_tokens"],
    }
    if kind == "torch":
        strategy = TorchStrategy(model, **options)
    else:
        from trainer.strategies.sharded import FSDP2Strategy

        strategy = FSDP2Strategy(model, **options)
    n, length = settings["sequences"], settings["length"]
    shape = argparse.Namespace(seed=0, sequences=n, length=length)
    batch = build_batch(shape, len(tokenizer))  # train_scale.py's batch
    part = batch.select(split_for_workers([length] * n, world)[rank]) if world > 1 else batch
    peak_rss(reset=True)  # the peak restarts from the size after setup, as in train_scale.py
    seconds = []
    for _ in range(settings["steps"]):
        clock = time.perf_counter()
        strategy.train_step(part, total=batch.valid_tokens)
        seconds.append(time.perf_counter() - clock)
    out.put((rank, {"seconds": seconds, "peak_mb": peak_rss() / MB, "kept_mb": _resident_mb()}))
    if world > 1:
        torch.distributed.destroy_process_group()


def run_arm(label: str, return_freed: bool, args: argparse.Namespace, port: int) -> dict[str, Any]:
    """One run of ``label`` with the setting off or on, in fresh processes."""
    import torch.multiprocessing as mp

    kind, world = ARMS[label]
    settings = {
        "return_freed": return_freed,
        "model": args.model,
        "sequences": args.sequences,
        "length": args.length,
        "micro_batch_tokens": args.micro_batch_tokens,
        "steps": args.steps,
    }
    context = mp.get_context("spawn")
    out = context.SimpleQueue()
    mp.spawn(_one_process, args=(world, kind, port, settings, out), nprocs=world, join=True)
    results = dict(out.get() for _ in range(world))
    return {
        "label": label,
        "return_freed_memory": return_freed,
        "median_s": max(statistics.median(r["seconds"]) for r in results.values()),
        "seconds": [r["seconds"] for r in results.values()],
        "peak_mb": max(r["peak_mb"] for r in results.values()),
        "kept_mb": max(r["kept_mb"] for r in results.values()),
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m", help="smollm2-135m or tiny-random")
    parser.add_argument("--sequences", type=int, default=8, help="sequences in the batch (8)")
    parser.add_argument("--length", type=int, default=256, help="tokens per sequence (256)")
    parser.add_argument("--micro-batch-tokens", type=int, default=2048, help="(2048)")
    parser.add_argument("--steps", type=int, default=3, help="updates per run; median (3)")
    parser.add_argument("--rounds", type=int, default=2, help="off/on pairs per strategy (2)")
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "host_memory.json",
        quick="tiny-random model, 4 sequences of 64 tokens, 2 steps, 1 round",
    )
    quick = {"model": "tiny-random", "sequences": 4, "length": 64, "steps": 2, "rounds": 1}
    return parse_arguments(parser, argv, quick)


def main(argv: Sequence[str] | None = None) -> int:
    from trainer.strategies.host_memory import glibc_malloc

    args = parse_args(argv)
    if not glibc_malloc():
        print("needs Linux with glibc's malloc: nothing to measure here", file=sys.stderr)
        return 1
    runs, summary, port = [], [], 29700
    for label in ARMS:
        pairs = []
        for round_ in range(args.rounds):
            pair = {}
            for return_freed in (False, True) if round_ % 2 == 0 else (True, False):
                print(f"{label}, return_freed_memory={return_freed} ...", file=sys.stderr)
                port += 1
                pair[return_freed] = run_arm(label, return_freed, args, port)
                runs.append(pair[return_freed])
            pairs.append(pair)
        off = [p[False] for p in pairs]
        on = [p[True] for p in pairs]
        summary.append(
            {
                "label": label,
                "off_s": statistics.median(r["median_s"] for r in off),
                "on_s": statistics.median(r["median_s"] for r in on),
                "off_peak_mb": statistics.median(r["peak_mb"] for r in off),
                "on_peak_mb": statistics.median(r["peak_mb"] for r in on),
                "off_kept_mb": statistics.median(r["kept_mb"] for r in off),
                "on_kept_mb": statistics.median(r["kept_mb"] for r in on),
                "speed_ratio": statistics.median(
                    p[False]["median_s"] / p[True]["median_s"] for p in pairs
                ),
                "peak_ratio": statistics.median(
                    p[True]["peak_mb"] / p[False]["peak_mb"] for p in pairs
                ),
            }
        )
    print_table(
        [
            "strategy",
            "s/step off",
            "s/step on",
            "speed on/off",
            "peak MB off",
            "peak MB on",
            "peak on/off",
            "kept MB off",
            "kept MB on",
        ],
        [
            [
                s["label"],
                f"{s['off_s']:.2f}",
                f"{s['on_s']:.2f}",
                f"{s['speed_ratio']:.2f}x",
                f"{s['off_peak_mb']:,.0f}",
                f"{s['on_peak_mb']:,.0f}",
                f"{s['peak_ratio']:.2f}x",
                f"{s['off_kept_mb']:,.0f}",
                f"{s['on_kept_mb']:,.0f}",
            ]
            for s in summary
        ],
        f"train.return_freed_memory off and on: {args.model}, {args.sequences} x {args.length} "
        f"tokens, {args.steps} updates a run, {args.rounds} round(s)",
    )
    print(
        "speed on/off: the run's tokens/s with the setting over without (median of the rounds' "
        "pairs); peak: VmHWM from after setup to the last update, the larger worker's; kept: "
        "the resident set after the last update."
    )
    report = {
        "settings": {k: v for k, v in vars(args).items() if k != "json"},
        "cores": CORES,
        "summary": summary,
        "runs": runs,
    }
    print()
    write_report(args.json, report, ("torch", "transformers"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
