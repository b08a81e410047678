"""Tokens/s and per-worker peak memory of one policy update: one process against two workers.

One RL policy update (``train_step``: forward and backward over every micro-batch, gradient
clipping, AdamW step) on the same model and batch, by:

* **torch x1**: ``TorchStrategy`` in one process (a Ray actor, 2 torch threads);
* **fsdp2 x2**, **deepspeed ZeRO-1/2/3 x2**: ``RayStrategy`` over a ``TrainWorkerGroup`` of two
  workers (1 torch thread each, gloo between them): the same 2 cores.

Memory: each process's peak resident set size (``VmHWM``), reset (``/proc/self/clear_refs``)
once model and strategy are built, read after the last step: absolute (model and libraries
count); for x2 the larger worker's. torch x1 runs in a Ray actor so it is measured the same
way. "params/optim MB": parameter and AdamW-state bytes each worker holds (``local_bytes``).

Batch: ``--sequences`` seeded random sequences of ``--length`` tokens, trained on their second
half, one random advantage each, old log-probs from torch x1's ``sequence_logprobs``. All
strategies start from the same weights, so the first step's gradient norm agrees (a check).

Timing: torch x1 stays up all run (Ray is told 4 CPUs so that it and one x2 group can both be
alive; only one computes at a time). Each x2 strategy in turn is started ("setup s": loading,
sharding, DeepSpeed's init, which on a machine's first run also builds a small C++ op, ~45 s,
cached in ~/.cache/torch_extensions), runs ``--warmup`` untimed steps, then ``--steps`` rounds
of one step of its own and one of torch x1's, alternating which goes first, and is closed.
Steps are timed here around the whole ``train_step`` call; tokens/s counts *every* token of
the batch over the median step. "tokens/s vs x1" is the median over rounds of x1's seconds /
x2's in the same round, so a change in the machine's load weighs on both sides alike.

Run (from the repository root; DeepSpeed from ``pip install 'rollenv[deepspeed]'``; a
strategy that cannot run is left out with the reason)::

    RAY_AUTH_MODE=disabled python benchmarks/train_scale.py           # SmolLM2-135M, ~15 min
    RAY_AUTH_MODE=disabled python benchmarks/train_scale.py --quick   # tiny-random, ~1.5 min
    RAY_AUTH_MODE=disabled python benchmarks/train_scale.py --return-freed-memory \
        --json benchmarks/results/train_scale_freed_memory.json  # train.return_freed_memory
    RAY_AUTH_MODE=disabled python benchmarks/train_scale.py --allocator jemalloc \
        --json benchmarks/results/train_scale_jemalloc.json  # train.allocator=jemalloc

It prints the table, the issue's goals for x2 (per-worker peak memory <= 60% of x1's at >=
0.7x its tokens/s; PASS/FAIL, informational) and writes every raw number to JSON (``--json``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
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

from trainer.strategies.allocator import ALLOCATORS  # noqa: E402

MEMORY_GOAL = 0.60  # x2 per-worker peak memory at most this share of x1's
SPEED_GOAL = 0.7  # x2 tokens/s at least this share of x1's
CORES = 2  # x1: one process with 2 threads; x2: two workers with 1 thread each
MB = 2**20
#: label -> (strategy, workers, its own options)
STRATEGIES = {
    "torch x1": ("torch", 1, {}),
    "fsdp2 x2": ("fsdp2", 2, {}),
    "deepspeed ZeRO-1 x2": ("deepspeed", 2, {"zero_stage": 1}),
    "deepspeed ZeRO-2 x2": ("deepspeed", 2, {"zero_stage": 2}),
    "deepspeed ZeRO-3 x2": ("deepspeed", 2, {"zero_stage": 3}),
}


# --------------------------------------------------------------------------- the batch
def build_batch(args: argparse.Namespace, vocab: int):
    import torch

    from trainer.strategies.batch import TokenBatch

    rng = torch.Generator().manual_seed(args.seed)
    n, length = args.sequences, args.length
    tokens = torch.randint(3, vocab, (n, length), generator=rng).tolist()
    mask = torch.cat([torch.zeros(length // 2), torch.ones(length - length // 2)])
    advantages = torch.randn(n, generator=rng)
    return TokenBatch(
        token_ids=tokens,
        loss_mask=[mask.clone() for _ in range(n)],
        advantages=[torch.full((length,), float(a)) for a in advantages],
        old_logprobs=[torch.zeros(length) for _ in range(n)],  # torch x1 fills them in
    )


# --------------------------------------------------------------------------- torch x1
class SingleProcess:
    """torch x1 as a Ray actor, measured the way ``TrainWorker`` measures a group's worker."""

    def __init__(
        self, model_name: str, options: dict, threads: int, return_freed: bool, allocator: str
    ):
        import torch

        from trainer.models import load_model
        from trainer.strategies.allocator import check_loaded
        from trainer.strategies.host_memory import return_freed_tensors_to_os
        from trainer.strategies.torch_strategy import TorchStrategy

        check_loaded(allocator, "torch x1's actor")  # as each train worker checks its own
        torch.set_num_threads(threads)
        if return_freed:  # as build_strategy does for train.return_freed_memory
            return_freed_tensors_to_os()
        model, _ = load_model(model_name, seed=0)
        self.strategy = TorchStrategy(model, **options)

    def sequence_logprobs(self, sequences, masks):
        return self.strategy.sequence_logprobs(sequences, masks)[0]

    def train_step(self, batch) -> dict[str, float]:
        return self.strategy.train_step(batch)

    def peak_memory(self, *, reset: bool = False) -> int:
        from trainer.strategies.worker_group import peak_rss

        return peak_rss(reset=reset)

    def local_bytes(self) -> dict[str, int]:
        return self.strategy.local_bytes()


class Single:
    """torch x1 behind the calls this benchmark makes of a ``RayStrategy`` (its ``group``)."""

    def __init__(self, model_name: str, options: dict, return_freed: bool, allocator: str):
        import ray

        from trainer.strategies.allocator import allocator_env_vars

        env_vars = {"OMP_NUM_THREADS": str(CORES), **allocator_env_vars(allocator)}
        actor = ray.remote(SingleProcess).options(
            num_cpus=CORES, runtime_env={"env_vars": env_vars}
        )
        self.actor = actor.remote(model_name, options, CORES, return_freed, allocator)
        self.group = self  # RayStrategy.group.call(...) -> Single.call(...)

    def call(self, method: str, *args, **kwargs) -> list:
        import ray

        return [ray.get(getattr(self.actor, method).remote(*args, **kwargs))]

    def train_step(self, batch) -> dict[str, float]:
        return self.call("train_step", batch)[0]

    def local_bytes(self) -> list[dict[str, int]]:
        return self.call("local_bytes")

    def close(self) -> None:
        import ray

        ray.kill(self.actor)


# --------------------------------------------------------------------------- measuring
def started(label: str, args: argparse.Namespace, options: dict):
    """The strategy ``label`` names, up and ready, and its result so far (the setup time)."""
    kind, workers, own = STRATEGIES[label]
    if kind == "deepspeed" and importlib.util.find_spec("deepspeed") is None:
        raise RuntimeError("deepspeed is not installed: pip install 'rollenv[deepspeed]'")
    from trainer.strategies.ray_strategy import RayStrategy
    from trainer.strategies.worker_group import WorkerSpec

    clock = time.perf_counter()
    if kind == "torch":
        strategy = Single(args.model, options, args.return_freed_memory, args.allocator)
    else:
        spec = WorkerSpec(
            kind, args.model, 0, "cpu", {**options, **own}, args.return_freed_memory, args.allocator
        )
        strategy = RayStrategy(spec, workers=workers, cpus=CORES // workers)
    strategy.group.call("peak_memory")  # waits for the workers' setup
    return strategy, {"label": label, "setup_s": time.perf_counter() - clock, "seconds": []}


def step(strategy, batch, result: dict[str, Any], timed: bool) -> None:
    """One ``train_step``, timed here around the whole call; the first one's metrics kept."""
    clock = time.perf_counter()
    metrics = strategy.train_step(batch)
    if timed:
        result["seconds"].append(time.perf_counter() - clock)
    result.setdefault("first_step", metrics)


def finished(strategy, result: dict[str, Any], tokens: int) -> dict[str, Any]:
    """The result with the workers' peak memory and local bytes; closes the strategy."""
    try:
        peaks = strategy.group.call("peak_memory")
        local = strategy.local_bytes()
    finally:
        strategy.close()
    result["load_average_1min"] = os.getloadavg()[0]  # this run alone keeps it near 2
    result["median_s"] = statistics.median(result["seconds"])
    result["tokens_per_s"] = tokens / result["median_s"]
    result["peak_rss_mb"] = [p / MB for p in peaks]
    result["peak_rss_mb_max"] = max(peaks) / MB
    result["parameters_mb"] = max(b["parameters"] for b in local) / MB
    result["optimizer_mb"] = max(b["optimizer"] for b in local) / MB
    return result


def measure_all(args: argparse.Namespace, options: dict) -> tuple[list[dict], dict[str, str]]:
    """torch x1 stays up; each x2 strategy in turn is started, warmed up, then runs
    ``--steps`` rounds of one step of its own and one of torch x1's (alternating which goes
    first, so a change in the machine's load weighs on both), and is closed."""
    single, base = started("torch x1", args, options)
    batch = build_batch(args, args.vocab)
    batch.old_logprobs = single.call("sequence_logprobs", batch.token_ids, batch.loss_mask)[0]
    tokens = sum(len(s) for s in batch.token_ids)
    base["resident_at_reset_mb"] = [r / MB for r in single.group.call("peak_memory", reset=True)]
    for _ in range(args.warmup):
        step(single, batch, base, timed=False)
    results, failures = [], {}
    for label in [label for label in STRATEGIES if label in args.only and label != "torch x1"]:
        print(f"{label} ...", file=sys.stderr, flush=True)
        strategy = None
        try:
            strategy, result = started(label, args, options)
            resident = strategy.group.call("peak_memory", reset=True)  # the resident size now
            result["resident_at_reset_mb"] = [r / MB for r in resident]
            for _ in range(args.warmup):
                step(strategy, batch, result, timed=False)
            for round_ in range(args.steps):
                pair = [(single, base), (strategy, result)]
                for who, into in pair if round_ % 2 == 0 else reversed(pair):
                    step(who, batch, into, timed=True)
            rounds = zip(base["seconds"][-args.steps :], result["seconds"], strict=True)
            result["paired_tokens_per_s_ratio"] = statistics.median(x1 / x2 for x1, x2 in rounds)
            results.append(finished(strategy, result, tokens))
        except Exception as error:  # noqa: BLE001 - reported; the others still run
            failures[label] = f"{type(error).__name__}: {error}".splitlines()[0]
            print(f"{label} left out: {failures[label]}", file=sys.stderr)
            if strategy is not None:
                with contextlib.suppress(Exception):
                    strategy.close()
    if not results:  # torch x1 alone
        for _ in range(args.steps):
            step(single, batch, base, timed=True)
    return [finished(single, base, tokens), *results], failures


# --------------------------------------------------------------------------- main
COLUMNS = {  # heading -> its cell for one result
    "strategy": lambda r: r["label"],
    "setup s": lambda r: f"{r['setup_s']:.1f}",
    "s/step": lambda r: f"{r['median_s']:.2f}",
    "min..max s": lambda r: f"{min(r['seconds']):.2f}..{max(r['seconds']):.2f}",
    "tokens/s": lambda r: f"{r['tokens_per_s']:,.0f}",
    "resident MB": lambda r: f"{max(r['resident_at_reset_mb']):,.0f}",
    "peak MB/worker": lambda r: f"{r['peak_rss_mb_max']:,.0f}",
    "params MB": lambda r: f"{r['parameters_mb']:,.0f}",
    "optim MB": lambda r: f"{r['optimizer_mb']:,.0f}",
    "1st grad norm": lambda r: f"{r['first_step']['grad_norm']:.5f}",
    "tokens/s vs x1": lambda r: f"{r['tokens_per_s_ratio']:.2f}x",
    "peak MB vs x1": lambda r: f"{r['memory_ratio']:.2f}x",
}


def parse_batch_arguments(
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    *,
    labels: list[str],
    defaults: dict[str, int],
    json_name: str,
) -> argparse.Namespace:
    """Adds the flags this benchmark and ``train_scale_gpu.py`` share (the batch, the timed
    steps, the strategies, ``--json``, ``--quick``) with these ``defaults`` and parses
    ``argv``."""
    for flag, help_text in [
        ("sequences", "sequences in the batch"),
        ("length", "tokens per sequence"),
        ("micro-batch-tokens", "the micro-batch budget"),
        ("steps", "timed steps; median"),
    ]:
        default = defaults[flag.replace("-", "_")]
        parser.add_argument(f"--{flag}", type=int, default=default, help=f"{help_text} ({default})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--only",
        nargs="+",
        choices=labels,
        default=labels,
        metavar="LABEL",
        help="the strategies to measure (torch x1, the baseline, always runs)",
    )
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / json_name,
        quick="tiny-random model, 4 sequences of 64 tokens, 2 timed steps",
    )
    quick = {"model": "tiny-random", "sequences": 4, "length": 64, "steps": 2}
    return parse_arguments(parser, argv, quick)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m", help="smollm2-135m or tiny-random")
    parser.add_argument("--warmup", type=int, default=1, help="untimed steps first (1)")
    parser.add_argument(
        "--activation-checkpointing",
        action="store_true",
        help="every strategy recomputes each layer in the backward pass (less activation memory)",
    )
    parser.add_argument(
        "--return-freed-memory",
        action="store_true",
        help="every process returns freed tensors of 1 MiB or more to the OS at once "
        "(train.return_freed_memory: less peak memory, slower steps)",
    )
    parser.add_argument(
        "--allocator",
        choices=ALLOCATORS,
        default="default",
        help="every process's C allocator (train.allocator; jemalloc: LD_PRELOAD in each Ray "
        "actor's runtime_env, after apt-get install libjemalloc2)",
    )
    defaults = {"sequences": 8, "length": 256, "micro_batch_tokens": 2048, "steps": 3}
    args = parse_batch_arguments(
        parser, argv, labels=list(STRATEGIES), defaults=defaults, json_name="train_scale.json"
    )
    if args.steps < 1 or args.warmup < 0 or args.length < 2 or args.sequences < 2:
        parser.error("need --steps >= 1, --warmup >= 0, --length >= 2, --sequences >= 2")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    import ray

    from trainer.models import load_tokenizer
    from trainer.strategies.torch_strategy import LossSettings

    args = parse_args(argv)
    tokenizer = load_tokenizer(args.model)
    args.vocab = len(tokenizer)
    options = {
        "pad_id": tokenizer.pad_token_id,
        "lr": 1e-5,
        "micro_batch_tokens": args.micro_batch_tokens,
        "loss": LossSettings(),
        "activation_checkpointing": args.activation_checkpointing,
    }
    ray.init(num_cpus=2 * CORES, include_dashboard=False, log_to_driver=False)
    try:
        results, failures = measure_all(args, options)
    finally:
        ray.shutdown()

    base = results[0]
    for r in results:
        r["tokens_per_s_ratio"] = r.get("paired_tokens_per_s_ratio", 1.0)
        r["memory_ratio"] = r["peak_rss_mb_max"] / base["peak_rss_mb_max"]
        if r is not base:
            r["memory_goal_met"] = r["memory_ratio"] <= MEMORY_GOAL
            r["speed_goal_met"] = r["tokens_per_s_ratio"] >= SPEED_GOAL

    print_table(
        list(COLUMNS),
        [[cell(r) for cell in COLUMNS.values()] for r in results],
        f"One policy update: {args.model}, {args.sequences} x {args.length} tokens"
        + (", activation checkpointing" if args.activation_checkpointing else "")
        + (", freed memory returned (1 MiB threshold)" if args.return_freed_memory else "")
        + (f", allocator {args.allocator}" if args.allocator != "default" else ""),
    )
    print(
        f"tokens/s counts all {args.sequences * args.length} tokens of the batch (loss on the "
        f"second half); micro-batch budget {args.micro_batch_tokens} tokens; median step after "
        f"{args.warmup} warm-up; setup is not in tokens/s; tokens/s vs x1: median over "
        f"{args.steps} rounds of x1's step seconds / x2's in the same round.\n"
        f"The same {CORES} cores for all: torch x1 = 1 process x {CORES} torch threads; x2 = 2 "
        "Ray workers x 1 thread each (gloo).\nresident MB: RSS at the reset after setup; peak "
        "MB: peak RSS (VmHWM) from there to the last step (absolute: model and libraries "
        "included), the larger worker's for x2; params/optim MB: bytes held per worker."
    )
    loads = [r["load_average_1min"] for r in results]
    print(
        f"Load average (1 min) as each strategy finished: {min(loads):.1f}..{max(loads):.1f} on "
        f"{os.cpu_count()} CPUs (this run alone keeps it near {CORES}; above, others ran too)."
    )
    for label, reason in failures.items():
        print(f"left out: {label}: {reason}")
    print(
        f"\nGoals (x2 with sharding: per-worker peak memory <= {MEMORY_GOAL:.0%} of x1's "
        f"at >= {SPEED_GOAL}x its tokens/s; informational):"
    )
    for r in results:
        if "memory_goal_met" in r:
            met = r["memory_goal_met"] and r["speed_goal_met"]
            print(
                f"  {'PASS' if met else 'FAIL'}  {r['label']}: memory "
                f"{r['memory_ratio']:.0%} of x1 ({'ok' if r['memory_goal_met'] else 'over'}), "
                f"tokens/s {r['tokens_per_s_ratio']:.3f}x "
                f"({'ok' if r['speed_goal_met'] else 'under'})"
            )

    settings = {k: v for k, v in vars(args).items() if k != "json"}
    report = {
        "settings": settings,
        "cores": CORES,
        "results": results,
        "left_out": failures,
        "goals": {"memory_ratio_at_most": MEMORY_GOAL, "tokens_per_s_ratio_at_least": SPEED_GOAL},
    }
    print()
    write_report(args.json, report, ("torch", "transformers", "deepspeed", "ray"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
