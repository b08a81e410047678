"""Seconds and peak memory of one GRPO policy update: rollenv's ``TorchStrategy`` against TRL.

What is measured is the *update phase only*: one optimiser step (forward, backward over every
micro-batch, gradient clipping, AdamW step) on a fixed batch whose old log-probs already exist.
Rollout, old/reference log-probs and advantages are computed before the clock starts, on both
sides. Each side runs in its own subprocess (their updates take turns, see Timing), on the same
model (same weights, same LoRA initialisation), the same token sequences and the same
micro-batch budget.

The batch (``--sequences`` sequences, seeded): multi-turn-like token sequences of
``--min-len``..``--max-len`` tokens. Each is a prompt span (not trained on) followed by
alternating response spans (trained on: loss mask 1) and observation spans (loss mask 0, like
tool or env output between turns). Advantages are GRPO's (rewards normalised within groups of
4), constant over a sequence's tokens. Old log-probs are the model's own plus seeded noise
(sd 0.1), so the PPO ratio is not identically 1 and some tokens clip.

The two sides (the loss is the same on both: PPO clip 0.2/0.2, no dual clip, token-mean over
the whole batch, no KL, no entropy bonus; AdamW lr 1e-5, no weight decay; grad clip 1.0):

* **rollenv**: ``TorchStrategy.train_step(batch)`` with ``micro_batch_tokens`` =
  ``rows x longest sequence``, where ``rows = sequences / micro-batches``: the budget that fits
  TRL's micro-batch of ``rows`` sequences each padded to the longest one. It packs each
  micro-batch's sequences into one row (``trainer.strategies.packing``), so it fills that budget
  with real tokens only, and runs the LM head only on the trained tokens. The "passes" column
  counts each side's forward/backward passes.
* **TRL** (``trl`` 1.x ``GRPOTrainer``, built for real on the CPU with a one-column dataset and
  a constant reward function, ``loss_type="dapo"``: TRL's token-mean over the accumulated
  batch, which is rollenv's ``token-mean``): the batch is laid out as TRL's
  ``_generate_and_score_completions`` lays it out (prompts left-padded and completions
  right-padded to the longest of the *whole* generation batch, ``tool_mask`` zero on the
  observation spans, ``num_items_in_batch`` = trained tokens, ``old_per_token_logps`` from
  TRL's own ``_get_per_token_logps_and_entropies``), shuffled and split with TRL's
  ``shuffle_sequence_dict`` / ``split_tensor_dict`` into ``--micro-batches`` micro-batches of
  ``rows`` sequences. One update is what ``Trainer``'s inner loop does for one optimiser step:
  ``trainer.training_step(model, inputs, num_items_in_batch)`` per micro-batch (TRL's
  ``compute_loss`` then ``accelerator.backward``), then ``trainer._clip_grad_norm``,
  ``trainer.optimizer.step()`` (the optimiser ``Trainer.create_optimizer`` builds: fused
  AdamW) and ``model.zero_grad()``. Only ``_prepare_inputs`` (TRL's generation hook) is
  replaced by the identity, since the batch is already generated.

On the CPU, TRL's fused LM head (``add_fused_lm_head``) takes its non-Triton path, which
projects every position of the padded micro-batch through the LM head (on CUDA with Triton it
projects only the completion tokens). That is what TRL does on this machine; numbers on a GPU
would differ.

As a check that both sides compute the same update, the loss and the pre-clip gradient norm of
the first (warm-up) update are printed for each: with the same model, LoRA init and batch they
agree to float precision.

Timing: both workers load at once, then run ``--warmup`` untimed updates each, then
``--repeats`` rounds; a round is one update of each side, one after the other (never at the
same time), alternating which goes first, so a change in the machine's load during the run
weighs on both sides alike. Each update is timed with ``time.perf_counter`` around the whole
update; the table shows the median, and the JSON also has the median of the per-round ratios.
Each update trains the model further, the same way on both sides.

Memory: Linux's peak resident set size of the worker process, reset just before the first
(warm-up) update by writing ``5`` to ``/proc/self/clear_refs`` and read from ``VmHWM`` after
the last one. "peak MB" is that peak minus the resident size just before the first update
(after ``gc.collect()`` and glibc's ``malloc_trim(0)``): what the update phase adds on top of
the loaded model, its optimiser and the batch (activations, gradients, AdamW state, logits
buffers). The absolute peak (which also counts each side's imported libraries: TRL imports
``datasets``, ``pandas`` and ``pyarrow``) is in the JSON. Both are process-wide RSS: honest for
CPU training, where every tensor lives in process memory.

Install TRL (it pulls ``datasets``, ``pandas``, ``pyarrow``, no CUDA packages; torch stays the
installed CPU build)::

    pip install 'rollenv[bench]'       # or: pip install 'trl>=1.16,<2'

Run (from the repository root)::

    python benchmarks/trainer_step.py --quick                  # tiny-random, under a minute
    python benchmarks/trainer_step.py                          # SmolLM2-135M + LoRA, minutes
    python benchmarks/trainer_step.py --full --repeats 3       # full fine-tuning

It prints one table (seconds/update, peak MB, tokens/s per side), the ratio TRL / rollenv and
the issue's goals (rollenv at least 1.5x faster, no more memory; PASS/FAIL, informational: the
script exits 0 either way), and writes every raw number to JSON (``--json``).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

REPO_ROOT = Path(__file__).resolve().parents[1]
# Benchmark the checkout this script lives in, not some other installed copy.
sys.path.insert(0, str(REPO_ROOT))

TRL_INSTALL_COMMAND = "pip install 'trl>=1.16,<2'"
#: The issue's goals: rollenv at least this many times faster than TRL, and no more memory.
SPEED_GOAL = 1.5
GROUP_SIZE = 4  # sequences per GRPO group (TRL's num_generations)
LEARNING_RATE = 1e-5
CLIP = 0.2
MAX_GRAD_NORM = 1.0
OLD_LOGPROB_NOISE = 0.1
LORA_R, LORA_ALPHA, LORA_TARGETS = 8, 16, ("q_proj", "v_proj")  # as the presets use


# --------------------------------------------------------------------------- the batch
@dataclass(frozen=True)
class Settings:
    """Everything both workers need to build the same model and batch."""

    model: str
    full: bool
    sequences: int
    min_len: int
    max_len: int
    micro_batches: int
    seed: int
    warmup: int
    repeats: int
    threads: int | None

    @property
    def rows(self) -> int:
        """Sequences per TRL micro-batch."""
        return self.sequences // self.micro_batches


@dataclass
class Sample:
    token_ids: list[int]
    loss_mask: list[float]
    advantage: float
    noise: list[float]  # added to the model's log-probs to make the old log-probs

    @property
    def first_trained(self) -> int:
        return self.loss_mask.index(1.0)


def build_samples(settings: Settings, vocab_size: int) -> list[Sample]:
    """The seeded multi-turn-like batch (see the module docstring)."""
    rng = random.Random(settings.seed)
    samples = []
    for _ in range(settings.sequences):
        length = rng.randint(settings.min_len, settings.max_len)
        mask = [0.0] * rng.randint(40, min(120, length // 2))  # the prompt
        trained = True
        while len(mask) < length:
            span = rng.randint(15, 60) if trained else rng.randint(15, 50)
            mask += [1.0 if trained else 0.0] * span
            trained = not trained
        mask = mask[:length]
        tokens = [rng.randrange(3, vocab_size) for _ in range(length)]
        noise = [rng.gauss(0.0, OLD_LOGPROB_NOISE) * m for m in mask]
        samples.append(Sample(tokens, mask, 0.0, noise))
    for start in range(0, len(samples), GROUP_SIZE):  # GRPO: (r - mean) / (std + eps) per group
        group = samples[start : start + GROUP_SIZE]
        rewards = [rng.random() for _ in group]
        mean = statistics.fmean(rewards)
        std = statistics.pstdev(rewards)
        for sample, reward in zip(group, rewards, strict=True):
            sample.advantage = (reward - mean) / (std + 1e-4)
    return samples


# --------------------------------------------------------------------------- memory
def _status_mb(field: str) -> float:
    text = Path("/proc/self/status").read_text()
    return int(re.search(rf"^{field}:\s+(\d+) kB", text, re.MULTILINE).group(1)) / 1024


class PeakMemory:
    """Peak RSS of this process from ``start()`` on (Linux ``VmHWM``, reset by clear_refs)."""

    def start(self) -> None:
        gc.collect()
        with contextlib.suppress(OSError):  # glibc only
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        self.before_mb = _status_mb("VmRSS")
        Path("/proc/self/clear_refs").write_text("5")

    def peak_mb(self) -> float:
        return _status_mb("VmHWM")


# --------------------------------------------------------------------------- the two sides
def load(settings: Settings) -> tuple[Any, Any]:
    import torch

    from trainer.models import load_model

    torch.manual_seed(settings.seed)
    model, tokenizer = load_model(settings.model, seed=settings.seed)
    return model, tokenizer


def rollenv_side(settings: Settings) -> tuple[Callable[[], dict[str, float]], dict[str, Any]]:
    """rollenv's update: one ``TorchStrategy.train_step`` on the whole batch."""
    import torch

    from trainer.config import LoraConfig
    from trainer.strategies.batch import TokenBatch, micro_batches
    from trainer.strategies.torch_strategy import LossSettings, TorchStrategy

    model, tokenizer = load(settings)
    samples = build_samples(settings, len(tokenizer))
    budget = settings.rows * max(len(s.token_ids) for s in samples)
    torch.manual_seed(settings.seed)  # the LoRA initialisation, as on TRL's side
    strategy = TorchStrategy(
        model,
        pad_id=tokenizer.pad_token_id,
        loss=LossSettings(
            clip_low=CLIP, clip_high=CLIP, dual_clip=None, aggregation="token-mean", kl_coef=0.0
        ),
        lr=LEARNING_RATE,
        weight_decay=0.0,
        grad_clip=MAX_GRAD_NORM,
        micro_batch_tokens=budget,
        lora=None
        if settings.full
        else LoraConfig(r=LORA_R, alpha=LORA_ALPHA, target_modules=list(LORA_TARGETS)),
    )
    sequences = [s.token_ids for s in samples]
    masks = [torch.tensor(s.loss_mask) for s in samples]
    logprobs, _ = strategy.sequence_logprobs(sequences, masks)  # the rollout phase's job
    batch = TokenBatch(
        token_ids=sequences,
        loss_mask=masks,
        advantages=[torch.full((len(s.token_ids),), s.advantage) for s in samples],
        old_logprobs=[lp + torch.tensor(s.noise) for lp, s in zip(logprobs, samples, strict=True)],
    )
    info = {
        "tokens": sum(len(s) for s in sequences),
        "micro_batch_tokens": budget,
        "packing": strategy.packing,
        "forward_passes": len(
            list(micro_batches([len(s) for s in sequences], budget, packed=strategy.packing))
        ),
    }

    def update() -> dict[str, float]:
        metrics = strategy.train_step(batch)
        return {"loss": metrics["loss"], "grad_norm": metrics["grad_norm"]}

    return update, info


def trl_side(settings: Settings) -> tuple[Callable[[], dict[str, float]], dict[str, Any]]:
    """TRL's update: ``GRPOTrainer.training_step`` per micro-batch, then clip and AdamW step."""
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer
    from trl.trainer.utils import pad, shuffle_sequence_dict, split_tensor_dict

    model, tokenizer = load(settings)
    samples = build_samples(settings, len(tokenizer))
    if not settings.full:
        from peft import LoraConfig, get_peft_model

        torch.manual_seed(settings.seed)  # the LoRA initialisation, as on rollenv's side
        model = get_peft_model(
            model,
            LoraConfig(
                r=LORA_R,
                lora_alpha=LORA_ALPHA,
                lora_dropout=0.0,
                target_modules=list(LORA_TARGETS),
                task_type="CAUSAL_LM",
            ),
        )
    completions = [s.token_ids[s.first_trained :] for s in samples]
    args = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="trl-bench-"),
        per_device_train_batch_size=settings.rows,
        gradient_accumulation_steps=settings.micro_batches,
        num_generations=GROUP_SIZE,
        max_completion_length=max(len(c) for c in completions),
        use_cpu=True,
        bf16=False,
        report_to="none",
        save_strategy="no",
        learning_rate=LEARNING_RATE,
        weight_decay=0.0,
        max_grad_norm=MAX_GRAD_NORM,
        beta=0.0,
        loss_type="dapo",
        epsilon=CLIP,
        seed=settings.seed,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[lambda completions, **kwargs: [0.0] * len(completions)],
        args=args,
        train_dataset=Dataset.from_dict({"prompt": ["-"] * settings.sequences}),
        processing_class=tokenizer,
    )
    trainer.create_optimizer()
    trainer._prepare_inputs = lambda inputs: inputs  # the batch is already generated
    trainer.current_gradient_accumulation_steps = settings.micro_batches
    model = trainer.model

    # The generation batch, laid out as _generate_and_score_completions does.
    pad_id = tokenizer.pad_token_id
    long = torch.long
    prompts = [torch.tensor(s.token_ids[: s.first_trained]) for s in samples]
    prompt_ids = pad(prompts, padding_value=pad_id, padding_side="left")
    prompt_mask = pad([torch.ones_like(p) for p in prompts], padding_value=0, padding_side="left")
    completion_ids = pad(
        [torch.tensor(c) for c in completions], padding_value=pad_id, padding_side="right"
    )
    completion_mask = pad(
        [torch.ones(len(c), dtype=long) for c in completions], padding_value=0, padding_side="right"
    )
    tool_mask = pad(
        [torch.tensor(s.loss_mask[s.first_trained :], dtype=long) for s in samples],
        padding_value=1,
        padding_side="right",
    )
    num_items_in_batch = (completion_mask * tool_mask).sum()
    with torch.no_grad():  # old log-probs, as TRL computes them (num_iterations > 1 / vLLM)
        old, _, _ = trainer._get_per_token_logps_and_entropies(
            model,
            torch.cat([prompt_ids, completion_ids], dim=1),
            torch.cat([prompt_mask, completion_mask], dim=1),
            completion_ids.size(1),
            batch_size=settings.rows,
        )
    noise = pad(
        [torch.tensor(s.noise[s.first_trained :]) for s in samples],
        padding_value=0.0,
        padding_side="right",
    )
    generation_batch = {
        "prompt_ids": prompt_ids,
        "prompt_mask": prompt_mask,
        "completion_ids": completion_ids,
        "completion_mask": completion_mask,
        "advantages": torch.tensor([s.advantage for s in samples]),
        "num_items_in_batch": num_items_in_batch,
        "old_per_token_logps": old + noise,
        "tool_mask": tool_mask,
    }
    torch.manual_seed(settings.seed)
    micro = split_tensor_dict(shuffle_sequence_dict(generation_batch), settings.micro_batches)
    info = {
        "tokens": sum(len(s.token_ids) for s in samples),
        "padded_width": prompt_ids.size(1) + completion_ids.size(1),
        "forward_passes": len(micro),
        "trl_optimizer": type(trainer.optimizer).__name__,
    }

    def update() -> dict[str, float]:
        loss = 0.0
        for inputs in micro:
            loss += float(trainer.training_step(model, inputs, num_items_in_batch))
        grad_norm = trainer._clip_grad_norm(model)
        trainer.optimizer.step()
        model.zero_grad()
        return {"loss": loss, "grad_norm": float(grad_norm)}

    return update, info


SIDES = {"rollenv": rollenv_side, "trl": trl_side}


def run_worker(side: str, settings: Settings) -> None:
    """A worker: builds one side, then runs one update per ``update`` line on stdin.

    Replies go, one JSON line each, to the original stdout; anything the libraries print goes
    to stderr instead. ``finish`` replies with the side's memory figures and ends the worker.
    """
    import torch

    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    if settings.threads:
        torch.set_num_threads(settings.threads)
    update, info = SIDES[side](settings)
    memory = PeakMemory()
    memory.start()
    replies.write(json.dumps({"ready": True, "threads": torch.get_num_threads(), **info}) + "\n")
    for line in sys.stdin:
        if line.strip() == "update":
            clock, cpu = time.perf_counter(), time.process_time()
            metrics = update()
            seconds, cpu = time.perf_counter() - clock, time.process_time() - cpu
            replies.write(json.dumps({"seconds": seconds, "cpu_seconds": cpu, **metrics}) + "\n")
        elif line.strip() == "finish":
            peak = memory.peak_mb()
            replies.write(
                json.dumps(
                    {
                        "rss_before_update_mb": memory.before_mb,
                        "peak_rss_mb": peak,
                        "peak_update_mb": peak - memory.before_mb,
                    }
                )
                + "\n"
            )
            return


class WorkerFailed(RuntimeError):
    pass


class Worker:
    """One side in its own process (so its peak memory is its own), driven line by line."""

    def __init__(self, side: str, settings: Settings, log_folder: Path) -> None:
        self.side = side
        self.log = (log_folder / f"{side}.log").open("w+")
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--worker",
            side,
            "--worker-settings",
            json.dumps(asdict(settings)),
        ]
        env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
        self.process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )

    def read(self) -> dict[str, Any]:
        line = self.process.stdout.readline()
        if not line:
            self.process.wait()
            self.log.seek(0)
            tail = "\n".join(self.log.read().strip().splitlines()[-15:])
            raise WorkerFailed(tail or f"exit status {self.process.returncode}")
        return json.loads(line)

    def ask(self, command: str) -> dict[str, Any]:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.read()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.log.close()


def measure(sides: Sequence[str], settings: Settings) -> list[dict[str, Any]]:
    """Warm-up, then ``repeats`` rounds of one update per side, alternating which goes first.

    The sides never run at the same time; interleaving them means a change in the machine's
    load during the run (other processes) slows both sides alike.
    """
    results: dict[str, dict[str, Any]] = {side: {"side": side} for side in sides}
    with tempfile.TemporaryDirectory() as folder:
        workers = {side: Worker(side, settings, Path(folder)) for side in sides}
        try:

            def step(side: str, run: int) -> None:
                if "error" in results[side]:
                    return
                try:
                    reply = workers[side].ask("update")
                except WorkerFailed as error:
                    results[side]["error"] = str(error)
                    return
                results[side].setdefault("updates", []).append(reply)
                if run >= 0:
                    results[side].setdefault("seconds", []).append(reply["seconds"])
                    results[side].setdefault("cpu_seconds", []).append(reply["cpu_seconds"])

            for side in sides:  # both load at once; neither updates until both are ready
                print(f"loading {LABELS[side]} ...", file=sys.stderr, flush=True)
            for side in sides:
                try:
                    results[side].update(workers[side].read())
                except WorkerFailed as error:
                    results[side]["error"] = str(error)
            for run in range(-settings.warmup, settings.repeats):
                order = list(sides) if run % 2 == 0 else list(reversed(sides))
                print(
                    f"{'warm-up' if run < 0 else f'round {run + 1}/{settings.repeats}'}: "
                    + ", ".join(LABELS[s] for s in order),
                    file=sys.stderr,
                    flush=True,
                )
                for side in order:
                    step(side, run)
            for side in sides:
                if "error" not in results[side]:
                    results[side].update(workers[side].ask("finish"))
        finally:
            for worker in workers.values():
                worker.close()
    for result in results.values():
        if "error" in result:
            continue
        result.pop("ready", None)
        result["first_update"] = result["updates"][0]
        result["median_s"] = statistics.median(result["seconds"])
        result["median_cpu_s"] = statistics.median(result["cpu_seconds"])
        result["tokens_per_s"] = result["tokens"] / result["median_s"]
    return [results[side] for side in sides]


# --------------------------------------------------------------------------- reporting
TABLE_HEADER = [
    "side",
    "s/update (median)",
    "min..max s",
    "peak MB",
    "tokens/s",
    "passes",
    "first loss",
    "first grad norm",
]
LABELS = {"rollenv": "rollenv TorchStrategy", "trl": "TRL GRPOTrainer"}


def table_rows(results: Sequence[dict[str, Any]]) -> list[list[str]]:
    lines = []
    for r in results:
        if "error" in r:
            lines.append([LABELS[r["side"]], "failed", "-", "-", "-", "-", "-", "-"])
            continue
        lines.append(
            [
                LABELS[r["side"]],
                f"{r['median_s']:.3f}",
                f"{min(r['seconds']):.3f}..{max(r['seconds']):.3f}",
                f"{r['peak_update_mb']:,.0f}",
                f"{r['tokens_per_s']:,.0f}",
                str(r["forward_passes"]),
                f"{r['first_update']['loss']:+.6f}",
                f"{r['first_update']['grad_norm']:.6f}",
            ]
        )
    return lines


def compare(results: Sequence[dict[str, Any]]) -> tuple[dict[str, Any] | None, list[dict]]:
    """The ratio TRL / rollenv and the issue's goals."""
    by_side = {r["side"]: r for r in results if "error" not in r}
    if set(by_side) != set(SIDES):
        return None, []
    ours, trl = by_side["rollenv"], by_side["trl"]
    speedup = trl["median_s"] / ours["median_s"]
    memory_ratio = trl["peak_update_mb"] / max(ours["peak_update_mb"], 1e-9)
    paired = statistics.median(t / o for t, o in zip(trl["seconds"], ours["seconds"], strict=True))
    loss_gap = abs(ours["first_update"]["loss"] - trl["first_update"]["loss"])
    norm_gap = abs(ours["first_update"]["grad_norm"] - trl["first_update"]["grad_norm"]) / max(
        trl["first_update"]["grad_norm"], 1e-12
    )
    ratio = {
        "speedup_trl_over_rollenv": speedup,
        "speedup_median_of_rounds": paired,
        "memory_trl_over_rollenv": memory_ratio,
        "first_loss_abs_diff": loss_gap,
        "first_grad_norm_rel_diff": norm_gap,
    }
    goals = [
        {
            "goal": f"rollenv >= {SPEED_GOAL:g}x faster than TRL",
            "value": f"{speedup:.2f}x",
            "passed": speedup >= SPEED_GOAL,
        },
        {
            "goal": "rollenv peak update memory <= TRL's",
            "value": f"{ours['peak_update_mb']:,.0f} MB vs {trl['peak_update_mb']:,.0f} MB",
            "passed": ours["peak_update_mb"] <= trl["peak_update_mb"],
        },
    ]
    return ratio, goals


def print_comparison(ratio: dict[str, Any] | None, goals: Sequence[dict[str, Any]]) -> None:
    if ratio is None:
        print("\nNo ratio: both sides must be measured.")
        return
    print(
        f"\nTRL / rollenv: {ratio['speedup_trl_over_rollenv']:.2f}x the seconds per update, "
        f"{ratio['memory_trl_over_rollenv']:.2f}x the peak update memory "
        f"(median of the per-round ratios: {ratio['speedup_median_of_rounds']:.2f}x)"
    )
    print(
        f"Same update on both sides: first loss differs by {ratio['first_loss_abs_diff']:.1e}, "
        f"first grad norm by {ratio['first_grad_norm_rel_diff']:.1e} (relative)"
    )
    print("\nGoals (informational):")
    for goal in goals:
        verdict = "PASS" if goal["passed"] else "FAIL"
        print(f"  {verdict}  {goal['goal']} (measured {goal['value']})")


# --------------------------------------------------------------------------- main
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line: this benchmark's flags, ``--json`` and ``--quick``."""
    parser = argparse.ArgumentParser(
        description="Seconds and peak memory of one GRPO policy update: rollenv's TorchStrategy "
        "against TRL's GRPOTrainer, same model, batch and micro-batching."
    )
    parser.add_argument(
        "--model", default="smollm2-135m", help="smollm2-135m (default) or tiny-random"
    )
    parser.add_argument(
        "--full", action="store_true", help="full fine-tuning instead of LoRA r=8 on q_proj,v_proj"
    )
    parser.add_argument("--sequences", type=int, default=16, help="sequences in the batch (16)")
    parser.add_argument("--min-len", type=int, default=150, help="shortest sequence (150)")
    parser.add_argument("--max-len", type=int, default=400, help="longest sequence (400)")
    parser.add_argument(
        "--micro-batches",
        type=int,
        default=4,
        help="TRL's gradient-accumulation steps; rollenv gets the token budget of one (4)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=1, help="untimed updates first (1)")
    parser.add_argument("--repeats", type=int, default=5, help="timed updates; median (5)")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads on both sides (default: torch's own, one per core)",
    )
    parser.add_argument(
        "--only", choices=("rollenv", "trl", "all"), default="all", help="which side to measure"
    )
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "trainer_step.json",
        quick="tiny-random model, 2 timed updates (15 s for rollenv's side alone; TRL's "
        "side too where it is installed)",
    )
    parser.add_argument("--worker", choices=tuple(SIDES), help=argparse.SUPPRESS)
    parser.add_argument("--worker-settings", help=argparse.SUPPRESS)
    args = parse_arguments(parser, argv, {"model": "tiny-random", "repeats": 2})
    if args.repeats < 1 or args.warmup < 0:
        parser.error("--repeats must be at least 1 and --warmup at least 0")
    if args.sequences % args.micro_batches or args.sequences % GROUP_SIZE:
        parser.error(
            f"--sequences must be a multiple of --micro-batches and of {GROUP_SIZE} (the group)"
        )
    if not 20 <= args.min_len <= args.max_len:
        parser.error("need 20 <= --min-len <= --max-len")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        run_worker(args.worker, Settings(**json.loads(args.worker_settings)))
        return 0

    settings = Settings(
        model=args.model,
        full=args.full,
        sequences=args.sequences,
        min_len=args.min_len,
        max_len=args.max_len,
        micro_batches=args.micro_batches,
        seed=args.seed,
        warmup=args.warmup,
        repeats=args.repeats,
        threads=args.threads,
    )
    sides = list(SIDES) if args.only == "all" else [args.only]
    results = measure(sides, settings)
    for result in results:
        if "error" in result:
            hint = f" (install: {TRL_INSTALL_COMMAND})" if result["side"] == "trl" else ""
            print(f"{LABELS[result['side']]} failed{hint}:\n{result['error']}", file=sys.stderr)

    tuning = "full fine-tuning" if args.full else f"LoRA r={LORA_R} on {','.join(LORA_TARGETS)}"
    print_table(
        TABLE_HEADER,
        table_rows(results),
        f"One GRPO update: {args.model}, {tuning}, {args.sequences} sequences of "
        f"{args.min_len}-{args.max_len} tokens, {args.micro_batches} micro-batches (TRL), "
        f"median of {args.repeats}, {os.cpu_count()} CPUs, "
        f"{args.threads or 'default'} torch threads",
    )
    ratio, goals = compare(results)
    print_comparison(ratio, goals)

    report = {"settings": asdict(settings), "results": results, "ratio": ratio, "goals": goals}
    print()
    write_report(args.json, report, ("torch", "transformers", "peft", "accelerate", "trl"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
