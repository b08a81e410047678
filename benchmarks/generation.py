"""Rollout generation speed: our ``continuous`` engine against HF ``generate``, same run.

The workload is what a full-context Sokoban rollout asks of a generator: ``--episodes`` episodes
of ``SimpleSokoban-v0`` in the exact prompt format RL uses, played turn by turn. The prompts come
from oracle (BFS) episodes, so both engines get the *same* prompts: turn k of an episode is the
chat so far (instruction, observations and the oracle's earlier replies). Each turn, every
episode still running sends its prompt in one ``generate`` call, as ``EnvManager`` does, and a
reply of up to ``--max-new-tokens`` tokens is sampled (temperature 1, no top-k/top-p, stop at the
end-of-turn token). The model is the base model, whose replies are long: the case where
generation costs most.

Engines:

* **HF generate**: ``model.generate(do_sample=True)`` on left-padded batches of
  ``--batch-size`` prompts (longest first, to pad as little as possible), the usual way an
  HF-based trainer rolls out.
* **continuous** (``trainer.generation.ContinuousGenerator``): continuous batching with at most
  ``--batch-size`` running requests, and keys/values kept between calls so a prompt's prefix
  computed in an earlier turn (or by another episode: the shared instruction) is not recomputed.
  Its cache starts empty in every repeat. It runs once per ``--dtypes`` entry: ``float32``
  (log-probs within ~1e-6 of the trainer's) and ``bfloat16`` weights (half the bytes per decode
  step, AMX / AVX512-BF16 matmuls; the cache is bfloat16 too; log-probs within a few hundredths
  of the trainer's, so RL with it recomputes them). The baseline stays HF
  ``generate`` in float32: ``--hf-bfloat16`` adds HF ``generate`` on a bfloat16 copy of the
  model, to show whether bfloat16 alone would have closed the gap.

Reported: generated tokens per second of wall time (each engine's own replies; the
engines sample different replies, so their token counts differ), prompt tokens computed, and the
ratio against HF float32 and against HF in the same dtype (when ``--hf-bfloat16`` timed it);
the goal is judged on the latter, like against like. A second row runs only the first turn
of every episode (no history to reuse), which isolates batching from prefix reuse.
``update_weights`` (the per-RL-step weight sync, which also empties our cache) is timed on its
own. Each engine first plays the workload once more, reported apart as its *first rollout*:
our engine allocates its cache and packs its weights there, once per process, as training
does in its first step. The figure is the median over the ``--repeats`` plays after it, what
every later rollout of a training run sees, with the engines alternating and our cache
emptied before each play.

Run (from the repository root)::

    python benchmarks/generation.py --quick      # tiny-random model, about a minute
    python benchmarks/generation.py              # SmolLM2-135M, a few minutes
    python benchmarks/generation.py --episodes 64 --batch-size 64 --repeats 1 --hf-bfloat16

It prints a table and the ratio against the goal (>= 4x on the rollout workload, informational:
the script always exits 0), and writes every number to JSON.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from collections.abc import Sequence
from typing import Any

import torch
from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

from rollenv.policies import oracle_for
from trainer.generation import ContinuousGenerator, GenerationOutput, SamplingParams
from trainer.models import load_model
from trainer.rollout.env_manager import EnvManager

GOAL = 4.0
BASELINE = "HF generate"


class HFGenerate:
    """The baseline: ``model.generate`` on left-padded batches."""

    def __init__(self, model: Any, tokenizer: Any, batch_size: int) -> None:
        self.model, self.tokenizer, self.batch_size = model.eval(), tokenizer, batch_size
        self.pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.stats = {"computed_prompt_tokens": 0}

    @torch.inference_mode()
    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list:
        torch.manual_seed(params.seed or 0)
        order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
        outputs: list[Any] = [None] * len(prompts)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            width = max(len(prompts[i]) for i in batch)
            ids = torch.full((len(batch), width), self.pad, dtype=torch.long)
            mask = torch.zeros_like(ids)
            for row, i in enumerate(batch):
                ids[row, width - len(prompts[i]) :] = torch.tensor(prompts[i])
                mask[row, width - len(prompts[i]) :] = 1
            self.stats["computed_prompt_tokens"] += ids.numel()
            out = self.model.generate(
                input_ids=ids,
                attention_mask=mask,
                do_sample=True,
                temperature=params.temperature,
                top_k=0,
                top_p=1.0,
                max_new_tokens=params.max_new_tokens,
                eos_token_id=list(params.stop_token_ids),
                pad_token_id=self.pad,
            )
            for row, i in enumerate(batch):
                reply = out[row, width:].tolist()
                if params.stop_token_ids:
                    ends = [k for k, t in enumerate(reply) if t in params.stop_token_ids]
                    reply = reply[: ends[0] + 1] if ends else reply
                outputs[i] = GenerationOutput(reply, [0.0] * len(reply), "length")
        return outputs

    def update_weights(self, state_dict: dict) -> None:
        self.model.load_state_dict(state_dict, strict=False)


def oracle_prompts(tokenizer: Any, episodes: int, env_id: str) -> list[list[list[int]]]:
    """Per episode, the prompt of each turn, from oracle episodes in RL's full-context format."""
    manager = EnvManager(env_id, tokenizer, None, group_size=1, max_turns=20, context="full")
    trajectories = manager.rollout(list(range(10_000, 10_000 + episodes)), policy=oracle_for)
    per_episode = []
    for trajectory in trajectories:
        [sample] = trajectory.samples
        turns = sorted({t for t in sample.turn_of_token if t >= 0})
        per_episode.append([sample.token_ids[: sample.turn_of_token.index(turn)] for turn in turns])
    return per_episode


def run_workload(engine: Any, workload: list[list[list[int]]], params: SamplingParams) -> dict:
    """Plays the workload turn by turn; returns tokens and seconds."""
    generated = calls = 0
    computed_before = engine.stats["computed_prompt_tokens"]
    start = time.perf_counter()
    for turn in range(max(len(turns) for turns in workload)):
        prompts = [turns[turn] for turns in workload if turn < len(turns)]
        outputs = engine.generate(prompts, params)
        generated += sum(len(o.token_ids) for o in outputs)
        calls += 1
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "generated_tokens": generated,
        "prompt_tokens": sum(len(p) for turns in workload for p in turns),
        "computed_prompt_tokens": engine.stats["computed_prompt_tokens"] - computed_before,
        "tokens_per_s": generated / seconds,
        "calls": calls,
    }


def measure(engines: dict[str, Any], workload: list, params: SamplingParams, repeats: int) -> dict:
    """Plays the workload ``1 + repeats`` times per engine, engines alternating.

    The first play is reported on its own ("first rollout"): the continuous engine allocates
    its cache rows, grows their length and packs its weights there, once per process, as a
    training run does in its first rollout. The figure is the median of the other plays, what
    every later rollout of a run sees; each starts with an empty cache (no prefix reuse
    carries over from the play before).
    """
    runs: dict[str, list[dict]] = {name: [] for name in engines}
    for repeat in range(1 + repeats):
        for name, engine in engines.items():
            if isinstance(engine, ContinuousGenerator):
                engine.cache.clear()
            params_r = SamplingParams(**{**params.__dict__, "seed": 1000 + repeat})
            runs[name].append(run_workload(engine, workload, params_r))
            label = "first rollout" if repeat == 0 else f"rollout {repeat}"
            print(f"  {name}, {label}: {runs[name][-1]['tokens_per_s']:.1f} tokens/s", flush=True)
    summary = {}
    for name, results in runs.items():
        summary[name] = {
            "tokens_per_s": statistics.median(r["tokens_per_s"] for r in results[1:]),
            "first_rollout_tokens_per_s": results[0]["tokens_per_s"],
            "first_rollout": results[0],
            "runs": results[1:],
        }
    return summary


def same_dtype_baseline(name: str, engines: dict[str, Any]) -> str:
    """The HF engine of ``name``'s dtype if it was timed, else the float32 baseline."""
    dtype = name.rsplit(" ", 1)[-1]
    candidate = f"{BASELINE} {dtype}"
    return candidate if candidate in engines else BASELINE


def time_weight_sync(engine: Any, state_dict: dict, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        engine.update_weights(state_dict)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line: this benchmark's flags, ``--json`` and ``--quick``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--env", default="SimpleSokoban-v0")
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--dtypes",
        default="float32,bfloat16",
        help="comma-separated weight dtypes of the continuous engine (float32, bfloat16)",
    )
    parser.add_argument(
        "--hf-bfloat16", action="store_true", help="also time HF generate on a bfloat16 model"
    )
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "generation.json",
        quick="tiny-random model, 1 repeat (about a minute)",
    )
    args = parse_arguments(parser, argv, {"model": "tiny-random", "repeats": 1})
    args.dtypes = parse_dtypes(parser, args.dtypes)
    return args


def parse_dtypes(parser: argparse.ArgumentParser, text: str) -> list[str]:
    """``--dtypes``' comma-separated list; anything but float32 and bfloat16 is a usage error."""
    dtypes = [d.strip() for d in text.split(",") if d.strip()]
    unknown = sorted(set(dtypes) - {"float32", "bfloat16"})
    if unknown or not dtypes:
        parser.error(f"--dtypes: {unknown or 'none given'}; allowed: float32, bfloat16")
    return dtypes


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    model, tokenizer = load_model(args.model, seed=0)
    params = SamplingParams(
        max_new_tokens=args.max_new_tokens,
        temperature=1.0,
        stop_token_ids=(tokenizer.eos_token_id,),
    )
    workload = oracle_prompts(tokenizer, args.episodes, args.env)
    first_turns = [[turns[0]] for turns in workload]
    engines: dict[str, Any] = {
        BASELINE: HFGenerate(copy.deepcopy(model), tokenizer, args.batch_size),
    }
    if args.hf_bfloat16:
        engines["HF generate bfloat16"] = HFGenerate(
            copy.deepcopy(model).to(torch.bfloat16), tokenizer, args.batch_size
        )
    for dtype in args.dtypes:
        engines[f"continuous {dtype}"] = ContinuousGenerator(
            copy.deepcopy(model), tokenizer, max_batch_size=args.batch_size, dtype=dtype
        )
    print(
        f"{args.model}, {args.env}: {args.episodes} episodes, "
        f"{sum(map(len, workload))} turns, batch {args.batch_size}, "
        f"torch threads {torch.get_num_threads()}"
    )
    for engine in engines.values():  # kernels' first-call set-up
        engine.generate([workload[0][0]], SamplingParams(max_new_tokens=4, seed=0))
    print("multi-turn rollout workload:")
    rollout = measure(engines, workload, params, args.repeats)
    print("first turn only:")
    single = measure(engines, first_turns, params, args.repeats)
    state_dict = copy.deepcopy(model.state_dict())
    sync = {name: time_weight_sync(engine, state_dict) for name, engine in engines.items()}

    rows = []
    ratios = {}
    for label, result in (("multi-turn rollout", rollout), ("first turn only", single)):
        for name in engines:
            runs = result[name]["runs"]
            computed = statistics.median(r["computed_prompt_tokens"] for r in runs)
            ratio = result[name]["tokens_per_s"] / result[BASELINE]["tokens_per_s"]
            # the goal compares like with like: bfloat16 against HF bfloat16 when it was timed
            same = same_dtype_baseline(name, engines)
            same_ratio = result[name]["tokens_per_s"] / result[same]["tokens_per_s"]
            first = result[name]["first_rollout_tokens_per_s"]
            first_ratio = first / result[same]["first_rollout_tokens_per_s"]
            ratios[f"{label}: {name}"] = ratio
            ratios[f"{label}: {name} vs {same}"] = same_ratio
            ratios[f"{label}: {name} vs {same}, first rollout"] = first_ratio
            goal = ""
            if name.startswith("continuous") and label == "multi-turn rollout":
                goal = f">= {GOAL:g}x: {'PASS' if same_ratio >= GOAL else 'FAIL'}"
            rows.append(
                [
                    label,
                    name,
                    f"{result[name]['tokens_per_s']:.1f}",
                    f"{computed:,.0f} of {runs[0]['prompt_tokens']:,}",
                    f"{ratio:.2f}x",
                    f"{same_ratio:.2f}x vs {same}",
                    f"{first:.1f} ({first_ratio:.2f}x)",
                    goal,
                ]
            )
    print_table(
        [
            "workload",
            "engine",
            "tokens/s",
            "prompt tokens computed",
            "vs HF float32",
            "vs HF, same dtype",
            "first rollout tokens/s (vs HF)",
            "goal",
        ],
        rows,
        "Rollout generation: continuous engine vs HF generate (same run)",
        left_columns=2,
    )
    for name, seconds in sync.items():
        print(f"weight sync ({name}): {seconds * 1000:.0f} ms")
    report = {
        "model": args.model,
        "env": args.env,
        "episodes": args.episodes,
        "batch_size": args.batch_size,
        "max_new_tokens": args.max_new_tokens,
        "dtypes": args.dtypes,
        "repeats": args.repeats,
        "torch_threads": torch.get_num_threads(),
        "multi_turn_rollout": rollout,
        "first_turn_only": single,
        "ratios": ratios,
        "weight_sync_seconds": sync,
        "goal": GOAL,
    }
    write_report(args.json, report, ("torch", "transformers"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
