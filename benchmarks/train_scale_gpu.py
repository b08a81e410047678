"""One policy update on one GPU: tokens/s and peak memory, torch x1 against sharded strategies.

The sharded strategies run at world size 1.

One machine with one GPU cannot run a world of two (NCCL refuses two ranks on one device), so
this measures what one GPU can show of ``benchmarks/train_scale.py``: the sharded strategies'
CUDA paths (NCCL process group, ``fully_shard`` with and without bfloat16 mixed precision and
activation checkpointing, DeepSpeed ZeRO-2 and ZeRO-3 around torch's AdamW, Megatron-core's
``GPTModel`` with and without its activation recompute) against
``TorchStrategy`` on the same device, model and batch, in this one process:

* each strategy in turn is built from the same weights, runs one untimed step, then
  ``--steps`` timed steps (``torch.cuda.synchronize`` around each), and is freed;
* **parity**: after that first step, the largest weight difference to torch x1's weights after
  its own first step, divided by the largest change torch x1's step made to any weight (so 0.01
  means the strategies differ by 1% of the update);
* **memory**: ``torch.cuda.max_memory_allocated`` from after setup to the last step, and the
  parameter and AdamW-state bytes the strategy holds (``local_bytes``).

SmolLM2-135M's weights (a 145 MB GGUF) cannot travel to a lent GPU machine, so
``--random-weights CONFIG_FOLDER`` draws random weights for that folder's ``config.json``:
speed and memory depend on the shapes alone. On a machine without a GPU, ``--device cpu``
runs the same code over gloo (a check of this script, not a GPU figure)::

    python benchmarks/train_scale_gpu.py --random-weights FOLDER      # on a GPU machine
    python benchmarks/train_scale_gpu.py --device cpu --quick         # tiny-random, CPU
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.util
import os
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from report import write_report
from table import print_table
from train_scale import build_batch, parse_batch_arguments

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # benchmark this checkout

MB = 2**20
#: label -> (strategy, its own options)
STRATEGIES = {
    "torch x1": ("torch", {}),
    "fsdp2 x1": ("fsdp2", {}),
    "fsdp2 x1 bf16": ("fsdp2", {"mixed_precision": True}),
    "fsdp2 x1 ckpt": ("fsdp2", {"activation_checkpointing": True}),
    "fsdp2 x1 bf16 ckpt": ("fsdp2", {"mixed_precision": True, "activation_checkpointing": True}),
    "deepspeed ZeRO-2 x1": ("deepspeed", {"zero_stage": 2}),
    "deepspeed ZeRO-3 x1": ("deepspeed", {"zero_stage": 3}),
    "megatron x1": ("megatron", {}),
    "megatron x1 ckpt": ("megatron", {"activation_checkpointing": True}),
}
#: what each strategy needs installed: module -> pip command
NEEDS = {
    "deepspeed": "DS_BUILD_OPS=0 pip install 'rollenv[deepspeed]'",
    "megatron": "pip install 'rollenv[megatron]'",
}


def join_world_of_one(device: str) -> None:
    """This process as rank 0 of a one-member process group, on the backend a train-worker
    group uses (NCCL and gloo on a GPU, else gloo)."""
    import torch.distributed as dist

    from trainer.strategies.sharded import process_group_backend

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1")
    os.environ["MASTER_PORT"] = str(port)
    if device == "cpu":
        os.environ.setdefault("DS_ACCELERATOR", "cpu")
    dist.init_process_group(
        process_group_backend(device),
        init_method=f"tcp://127.0.0.1:{port}",
        rank=0,
        world_size=1,
    )


def random_weights_folder(config_folder: Path, into: Path) -> Path:
    """A Hugging Face folder with ``config_folder``'s config and tokenizer, weights drawn at
    random (seed 0)."""
    import shutil

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(config_folder)
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(config).save_pretrained(into)
    for item in config_folder.iterdir():
        if not (into / item.name).exists():
            shutil.copy(item, into / item.name)
    return into


class Device:
    """Synchronising, peak memory and freeing for the device the strategies train on."""

    def __init__(self, kind: str):
        import torch

        self.kind = kind
        self.torch = torch

    def synchronize(self) -> None:
        if self.kind == "cuda":
            self.torch.cuda.synchronize()

    def reset_peak(self) -> None:
        if self.kind == "cuda":
            self.torch.cuda.reset_peak_memory_stats()
        else:
            from trainer.strategies.worker_group import peak_rss  # imports ray: CPU runs only

            peak_rss(reset=True)

    def peak_bytes(self) -> int:
        if self.kind == "cuda":
            return self.torch.cuda.max_memory_allocated()
        from trainer.strategies.worker_group import peak_rss

        return peak_rss()

    def free(self) -> None:
        gc.collect()
        if self.kind == "cuda":
            self.torch.cuda.empty_cache()


def build(label: str, model_name: str, device: str, options: dict):
    """The strategy ``label`` names, over a fresh copy of the model on ``device``."""
    import torch

    from trainer.models import load_model
    from trainer.strategies.megatron_strategy import MegatronStrategy
    from trainer.strategies.sharded import DeepSpeedStrategy, FSDP2Strategy
    from trainer.strategies.torch_strategy import TorchStrategy

    kind, own = STRATEGIES[label]
    if kind in NEEDS and importlib.util.find_spec(kind) is None:
        raise RuntimeError(f"{kind} is not installed: {NEEDS[kind]}")
    model, _ = load_model(model_name, seed=0)
    model.to(device)
    torch.manual_seed(0)
    classes = {
        "torch": TorchStrategy,
        "fsdp2": FSDP2Strategy,
        "deepspeed": DeepSpeedStrategy,
        "megatron": MegatronStrategy,
    }
    return classes[kind](model, **options, **own)


def full_weights(strategy) -> dict[str, Any]:
    return {k: v.detach().float().cpu().clone() for k, v in strategy.inference_state_dict().items()}


def largest_difference(a: dict, b: dict) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def distance(a: dict, b: dict) -> float:
    return sum(float((a[k] - b[k]).pow(2).sum()) for k in a) ** 0.5


def measure(label: str, args: argparse.Namespace, options: dict, batch, device: Device) -> dict:
    """Builds ``label``, steps once (kept for parity), times ``--steps`` steps, frees it."""
    clock = time.perf_counter()
    strategy = build(label, args.model_folder, device.kind, options)
    device.synchronize()
    result: dict[str, Any] = {"label": label, "setup_s": time.perf_counter() - clock}
    try:
        before = None
        if label == "torch x1":  # the baseline, first: the batch's old log-probs are its own
            batch.old_logprobs = strategy.sequence_logprobs(batch.token_ids, batch.loss_mask)[0]
            before = full_weights(strategy)
        device.reset_peak()
        result["first_step"] = strategy.train_step(batch)
        result["after_first_step"] = full_weights(strategy)
        if before is not None:
            result["update_size"] = largest_difference(result["after_first_step"], before)
            result["update_norm"] = distance(result["after_first_step"], before)
        seconds = []
        for _ in range(args.steps):
            device.synchronize()
            clock = time.perf_counter()
            strategy.train_step(batch)
            device.synchronize()
            seconds.append(time.perf_counter() - clock)
        result["seconds"] = seconds
        result["peak_mb"] = device.peak_bytes() / MB
        held = strategy.local_bytes()
        result["parameters_mb"] = held["parameters"] / MB
        result["optimizer_mb"] = held["optimizer"] / MB
    finally:
        engine = getattr(strategy, "engine", None)
        if engine is not None:
            with contextlib.suppress(Exception):
                engine.destroy()
        del strategy
        device.free()
    result["median_s"] = statistics.median(result["seconds"])
    return result


COLUMNS = {  # heading -> its cell for one result
    "strategy": lambda r: r["label"],
    "setup s": lambda r: f"{r['setup_s']:.1f}",
    "s/step": lambda r: f"{r['median_s']:.3f}",
    "tokens/s": lambda r: f"{r['tokens_per_s']:,.0f}",
    "vs torch x1": lambda r: f"{r['tokens_per_s_ratio']:.2f}x",
    "peak MB": lambda r: f"{r['peak_mb']:,.0f}",
    "params MB": lambda r: f"{r['parameters_mb']:,.0f}",
    "optim MB": lambda r: f"{r['optimizer_mb']:,.0f}",
    "1st grad norm": lambda r: f"{r['first_step']['grad_norm']:.5f}",
    "weights vs x1": lambda r: f"{r['parity']:.2e}",
    "in norm": lambda r: f"{r['parity_norm']:.2e}",
}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m", help="a preset or a model folder")
    parser.add_argument(
        "--random-weights",
        type=Path,
        metavar="CONFIG_FOLDER",
        help="draw random weights for this folder's config.json (and use its tokenizer)",
    )
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    defaults = {"sequences": 32, "length": 512, "micro_batch_tokens": 8192, "steps": 5}
    args = parse_batch_arguments(
        parser, argv, labels=list(STRATEGIES), defaults=defaults, json_name="train_scale_gpu.json"
    )
    if args.steps < 1 or args.length < 2 or args.sequences < 2:
        parser.error("need --steps >= 1, --length >= 2, --sequences >= 2")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    import torch

    from trainer.models import load_tokenizer
    from trainer.strategies.torch_strategy import LossSettings

    args = parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("train_scale_gpu: torch sees no CUDA GPU; use --device cpu to check the script")
        return 2
    join_world_of_one(args.device)
    with tempfile.TemporaryDirectory() as scratch:
        args.model_folder = args.model
        if args.random_weights is not None:
            args.model_folder = str(random_weights_folder(args.random_weights, Path(scratch)))
        tokenizer = load_tokenizer(args.model_folder)
        args.vocab = len(tokenizer)
        options = {
            "pad_id": tokenizer.pad_token_id,
            "lr": 1e-5,
            "micro_batch_tokens": args.micro_batch_tokens,
            "loss": LossSettings(),
        }
        device = Device(args.device)
        batch = build_batch(args, args.vocab)
        tokens = sum(len(s) for s in batch.token_ids)
        results, failures = [], {}
        for label in ["torch x1", *[x for x in args.only if x != "torch x1"]]:
            print(f"{label} ...", file=sys.stderr, flush=True)
            try:
                results.append(measure(label, args, options, batch, device))
            except Exception as error:  # noqa: BLE001 - reported; the others still run
                failures[label] = f"{type(error).__name__}: {error}".splitlines()[0]
                print(f"{label} left out: {failures[label]}", file=sys.stderr)
                if label == "torch x1":
                    raise

    base = results[0]
    reference = base["after_first_step"]
    for r in results:
        r["tokens_per_s"] = tokens / r["median_s"]
        r["tokens_per_s_ratio"] = r["tokens_per_s"] / base["tokens_per_s"]
        r["memory_ratio"] = r["peak_mb"] / base["peak_mb"]
        after = r.pop("after_first_step")
        r["parity"] = largest_difference(after, reference) / base["update_size"]
        r["parity_norm"] = distance(after, reference) / base["update_norm"]

    name = torch.cuda.get_device_name() if args.device == "cuda" else "CPU (gloo)"
    model = f"{args.model} config, random weights" if args.random_weights else args.model
    print_table(
        list(COLUMNS),
        [[cell(r) for cell in COLUMNS.values()] for r in results],
        f"One policy update on {name}: {model}, {args.sequences} x {args.length} tokens",
    )
    print(
        f"tokens/s counts all {tokens} tokens of the batch; median of {args.steps} timed steps "
        f"after one untimed; micro-batch budget {args.micro_batch_tokens} tokens.\n"
        "peak MB: the most device memory allocated from after setup to the last step "
        "(CPU: peak RSS); params/optim MB: bytes the strategy holds.\nweights vs x1: after "
        "the first step, the largest weight difference to torch x1's, over the largest change "
        "torch x1's step made (bf16 rows compute in bfloat16, so they differ more); in norm: "
        "||W - W_x1|| over ||W_x1 - W_start||, after the first step."
    )
    for label, reason in failures.items():
        print(f"left out: {label}: {reason}")
    settings = {k: v for k, v in vars(args).items() if k != "json"}  # a Path is written as text
    report = {"settings": settings, "device": name, "results": results, "left_out": failures}
    print()
    write_report(args.json, report, ("torch", "transformers", "deepspeed", "megatron-core"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
