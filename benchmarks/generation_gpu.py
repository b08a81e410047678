"""Rollout generation on one GPU: vLLM (and SGLang where installed) against our engine, same run.

The workload is ``benchmarks/generation.py``'s: ``--episodes`` oracle episodes of
``SimpleSokoban-v0`` in RL's full-context prompt format, played turn by turn, every running
episode's prompt in one ``generate`` call per turn, replies of up to ``--max-new-tokens``
tokens sampled at temperature 1 (no top-k/top-p), stopping at the end-of-turn token.

Engines, all on the same GPU and the same weights:

* ``continuous <dtype>``: our engine (``trainer.generation.ContinuousGenerator``) on CUDA, the
  baseline: the engine ``roll-agent train`` uses unless ``generation.backend`` says otherwise.
* ``vllm <dtype> eager``: ``trainer.generation.VLLMGenerator`` with ``enforce_eager`` (no
  ``torch.compile``, no CUDA graphs), and ``vllm <dtype>``: vLLM's defaults (compiled, CUDA
  graphs), as a user would run it; each reserves ``--gpu-share`` of the GPU's memory.
* ``sglang <dtype>``: ``trainer.generation.SGLangGenerator``, where ``sglang`` imports.

An engine that fails to start is reported with its error and left out; the others still run.
Each engine plays the workload once untimed (its *first rollout*: our cache grows, vLLM's
kernels warm up), then ``--repeats`` timed plays, engines alternating, every cache emptied
before each play (our cache, vLLM's prefix cache). Reported: generated tokens per second of
wall time (median of the repeats), the ratio against our engine in the same dtype, the
engine's start time, and ``update_weights`` (the per-step weight sync) in milliseconds.

SmolLM2-135M's weights (a 145 MB GGUF) cannot travel to a lent GPU machine, so
``--random-weights CONFIG_FOLDER`` draws random weights for that folder's ``config.json``, as
``benchmarks/train_scale_gpu.py`` does: a random model never ends a reply early, so every reply
is ``--max-new-tokens`` long (speed depends on the shapes alone).

Run (from the repository root, on a machine with a CUDA GPU)::

    python benchmarks/generation_gpu.py --random-weights FOLDER
    python benchmarks/generation_gpu.py --quick        # tiny-random, float32 only
    python benchmarks/generation_gpu.py --quick --device cpu   # a check of this script

With ``--device cpu`` the GPU engines fail to start (they are reported so) and our engine runs
on the CPU: a check of the script on a machine without a GPU, not a figure.

It prints a table and writes every number to JSON (informational: it always exits 0 once the
baseline ran).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from generation import oracle_prompts, parse_dtypes, run_workload
from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table
from train_scale_gpu import random_weights_folder

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # benchmark this checkout

from trainer.generation import ContinuousGenerator, SamplingParams, make_generator  # noqa: E402
from trainer.models import load_model  # noqa: E402


class Counted:
    """Gives an engine without prompt-token counting the ``stats`` that ``run_workload`` reads
    (the GPU engines count their own prefix-cache hits, which we do not read)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.stats = {"computed_prompt_tokens": 0}

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list:
        return self.engine.generate(prompts, params)

    def update_weights(self, state_dict: dict) -> None:
        self.engine.update_weights(state_dict)


def empty_cache(engine: Any) -> None:
    """Forgets every cached prefix, so each timed play starts from the same state."""
    if isinstance(engine, ContinuousGenerator):
        engine.cache.clear()
        return
    inner = engine.engine
    if hasattr(inner, "llm"):
        inner.llm.reset_prefix_cache()
    elif hasattr(inner, "engine"):
        inner.engine.flush_cache()


def engine_builders(args: argparse.Namespace, model: Any, folder: str, tokenizer: Any) -> dict:
    """Engine name -> a function that starts it (called one at a time, timed)."""
    builders: dict[str, Callable[[], Any]] = {}
    for dtype in args.dtypes:
        builders[f"continuous {dtype}"] = lambda dtype=dtype: ContinuousGenerator(
            copy.deepcopy(model), tokenizer, device=args.device, max_batch_size=args.batch_size,
            dtype=dtype,
        )  # fmt: skip
    for dtype in args.dtypes:
        for eager in (True, False) if args.vllm_compiled else (True,):
            name = f"vllm {dtype}" + (" eager" if eager else "")
            builders[name] = lambda dtype=dtype, eager=eager: Counted(
                make_generator(
                    "vllm", folder, tokenizer, device=args.device, dtype=dtype,
                    enforce_eager=eager,
                    gpu_memory_utilization=args.gpu_share, max_batch_size=args.batch_size,
                    **({"attention_config": {"backend": args.vllm_attention}}
                       if args.vllm_attention else {}),
                )
            )  # fmt: skip
        builders[f"sglang {dtype}"] = lambda dtype=dtype: Counted(
            make_generator(
                "sglang", folder, tokenizer, device=args.device, dtype=dtype,
                mem_fraction_static=args.gpu_share, max_batch_size=args.batch_size,
            )
        )  # fmt: skip
    return builders


def start_engines(builders: dict) -> tuple[dict, dict, dict]:
    """Starts every engine; returns (engines, start seconds, errors of those that failed)."""
    engines, seconds, errors = {}, {}, {}
    for name, build in builders.items():
        start = time.perf_counter()
        try:
            engines[name] = build()
        except Exception as error:  # noqa: BLE001 - reported, and the others still run
            errors[name] = f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
            print(f"  {name}: did not start ({errors[name]})", flush=True)
            continue
        seconds[name] = time.perf_counter() - start
        print(f"  {name}: started in {seconds[name]:.1f} s", flush=True)
    return engines, seconds, errors


def measure(engines: dict, workload: list, params: SamplingParams, repeats: int) -> dict:
    """One untimed play (the first rollout) and ``repeats`` timed plays per engine."""
    runs: dict[str, list[dict]] = {name: [] for name in engines}
    for repeat in range(1 + repeats):
        for name, engine in engines.items():
            empty_cache(engine)
            seeded = SamplingParams(**{**params.__dict__, "seed": 1000 + repeat})
            runs[name].append(run_workload(engine, workload, seeded))
            label = "first rollout" if repeat == 0 else f"rollout {repeat}"
            print(f"  {name}, {label}: {runs[name][-1]['tokens_per_s']:.1f} tokens/s", flush=True)
    return {
        name: {
            "tokens_per_s": statistics.median(r["tokens_per_s"] for r in results[1:]),
            "first_rollout_tokens_per_s": results[0]["tokens_per_s"],
            "runs": results[1:],
        }
        for name, results in runs.items()
    }


def weight_sync_ms(engine: Any, state_dict: dict, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        engine.update_weights(state_dict)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m", help="a preset or a model folder")
    parser.add_argument(
        "--random-weights",
        type=Path,
        metavar="CONFIG_FOLDER",
        help="draw random weights for this folder's config.json (and use its tokenizer)",
    )
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--env", default="SimpleSokoban-v0")
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--gpu-share", type=float, default=0.2, help="vLLM/SGLang memory share")
    parser.add_argument(
        "--vllm-compiled",
        action="store_true",
        help="also time vLLM with its defaults (torch.compile and CUDA graphs: a minute more)",
    )
    parser.add_argument(
        "--vllm-attention", default=None, help="vLLM's attention backend (default: its choice)"
    )
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "generation_gpu.json",
        quick="tiny-random model, float32, 8 episodes, 1 repeat",
    )
    quick = {"model": "tiny-random", "dtypes": "float32", "episodes": 8, "repeats": 1}
    args = parse_arguments(parser, argv, quick)
    args.dtypes = parse_dtypes(parser, args.dtypes)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print(
            "generation_gpu.py needs a CUDA GPU; torch sees none here (--device cpu checks "
            "the script)",
            file=sys.stderr,
        )
        return 2
    gpu = torch.cuda.get_device_name() if args.device == "cuda" else "none (--device cpu)"
    scratch = tempfile.mkdtemp(prefix="generation-gpu-")
    if args.random_weights is not None:
        folder = str(random_weights_folder(args.random_weights, Path(scratch)))
    else:
        model, tokenizer = load_model(args.model, seed=0)
        model.save_pretrained(scratch)
        tokenizer.save_pretrained(scratch)
        folder = scratch
    model, tokenizer = load_model(folder, seed=0)
    model.to(args.device)
    params = SamplingParams(
        max_new_tokens=args.max_new_tokens,
        temperature=1.0,
        stop_token_ids=(tokenizer.eos_token_id,),
    )
    workload = oracle_prompts(tokenizer, args.episodes, args.env)
    turns = sum(map(len, workload))
    name = f"{args.model} config, random weights" if args.random_weights else args.model
    print(f"{name}, {args.env}: {args.episodes} episodes, {turns} turns, batch {args.batch_size}")
    print(f"GPU: {gpu}")
    print("starting engines:")
    engines, start_seconds, errors = start_engines(engine_builders(args, model, folder, tokenizer))
    for engine in engines.values():  # kernels' first-call set-up
        engine.generate([workload[0][0]], SamplingParams(max_new_tokens=4, seed=0))
    print("multi-turn rollout workload:")
    result = measure(engines, workload, params, args.repeats)
    state_dict = {k: v.detach().clone() for k, v in model.state_dict().items()}
    sync = {n: weight_sync_ms(engine, state_dict) for n, engine in engines.items()}

    rows, ratios = [], {}
    for engine_name in engines:
        dtype = engine_name.split()[1]
        baseline = f"continuous {dtype}"
        ratio = (
            result[engine_name]["tokens_per_s"] / result[baseline]["tokens_per_s"]
            if baseline in result
            else float("nan")
        )
        ratios[f"{engine_name} vs {baseline}"] = ratio
        rows.append(
            [
                engine_name,
                f"{result[engine_name]['tokens_per_s']:,.0f}",
                f"{ratio:.2f}x",
                f"{result[engine_name]['first_rollout_tokens_per_s']:,.0f}",
                f"{start_seconds[engine_name]:.1f}",
                f"{sync[engine_name]:.0f}",
            ]
        )
    for engine_name, error in errors.items():
        rows.append([engine_name, "did not start", "", "", "", error[:60]])
    print_table(
        [
            "engine",
            "tokens/s",
            "vs continuous, same dtype",
            "first rollout tokens/s",
            "start s",
            "weight sync ms",
        ],
        rows,
        f"Rollout generation on {gpu}: GPU engines vs ours (same run)",
        left_columns=1,
    )
    report = {
        "model": name,
        "gpu": gpu,
        "env": args.env,
        "episodes": args.episodes,
        "turns": turns,
        "batch_size": args.batch_size,
        "max_new_tokens": args.max_new_tokens,
        "repeats": args.repeats,
        "gpu_share": args.gpu_share,
        "vllm_attention": args.vllm_attention,
        "results": result,
        "ratios": ratios,
        "start_seconds": start_seconds,
        "weight_sync_ms": sync,
        "errors": errors,
    }
    write_report(args.json, report, ("torch", "transformers", "vllm", "sglang"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
