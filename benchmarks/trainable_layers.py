"""What ``model.trainable_layers`` saves: one policy update, every layer trained against the last N.

The batch is shaped like an RL-only Sokoban step with one-word replies (the
``sokoban-rl-only`` preset with ``env.window=1``): ``--sequences`` seeded random prompts of
``--length`` tokens, the loss on the last token of each. The same update runs ``--steps`` times
for each arm, in this process with every core; arms alternate (all, top, all, top, ...) over
``--rounds`` rounds, each from a fresh copy of the model, so a change in the machine's load
weighs on both. The ratio is the median over rounds of (all layers' seconds / top layers'
seconds): how many updates the frozen run makes in the time of one full update.

Run (from the repository root)::

    python benchmarks/trainable_layers.py           # SmolLM2-135M, last 10 of 30 layers, ~4 min
    python benchmarks/trainable_layers.py --quick   # tiny-random, a few seconds
"""

from __future__ import annotations

import argparse
import copy
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


def build_batch(args: argparse.Namespace, vocab: int):
    """Seeded random prompts with a one-token reply each, as a window-1 RL-only turn."""
    import torch

    from trainer.strategies.batch import TokenBatch

    rng = torch.Generator().manual_seed(0)
    n, length = args.sequences, args.length
    tokens = torch.randint(3, vocab, (n, length), generator=rng).tolist()
    mask = torch.zeros(length)
    mask[-1] = 1.0
    advantages = torch.randn(n, generator=rng)
    return TokenBatch(
        token_ids=tokens,
        loss_mask=[mask.clone() for _ in range(n)],
        advantages=[torch.full((length,), float(a)) for a in advantages],
        old_logprobs=[torch.full((length,), -1.4) for _ in range(n)],
    )


def run_arm(base: Any, pad_id: int, batch: Any, layers: int | None, args) -> list[float]:
    """Seconds per update of a fresh strategy training ``layers`` (``None``: all)."""
    from trainer.strategies.torch_strategy import TorchStrategy

    strategy = TorchStrategy(
        copy.deepcopy(base),
        pad_id=pad_id,
        lr=1e-5,
        micro_batch_tokens=args.micro_batch_tokens,
        trainable_layers=layers,
    )
    seconds = []
    for _ in range(args.steps):
        clock = time.perf_counter()
        strategy.train_step(batch)
        seconds.append(time.perf_counter() - clock)
    return seconds


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m", help="smollm2-135m or tiny-random")
    parser.add_argument("--trainable-layers", type=int, default=10, help="N of the top arm (10)")
    parser.add_argument("--sequences", type=int, default=32, help="turns in the batch (32)")
    parser.add_argument("--length", type=int, default=190, help="tokens per turn (190)")
    parser.add_argument("--micro-batch-tokens", type=int, default=2048, help="(2048)")
    parser.add_argument("--steps", type=int, default=2, help="updates per arm and round (2)")
    parser.add_argument("--rounds", type=int, default=2, help="all/top pairs (2)")
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "trainable_layers.json",
        quick="tiny-random model, the last layer, 4 turns of 32 tokens, 1 round",
    )
    quick = {
        "model": "tiny-random",
        "trainable_layers": 1,
        "sequences": 4,
        "length": 32,
        "rounds": 1,
    }
    return parse_arguments(parser, argv, quick)


def main(argv: Sequence[str] | None = None) -> int:
    import torch

    from trainer.models import load_model
    from trainer.strategies.frozen_layers import decoder_layers

    args = parse_args(argv)
    base, tokenizer = load_model(args.model, seed=0)
    total_layers = len(decoder_layers(base))
    batch = build_batch(args, len(tokenizer))
    arms = {"all layers": None, f"last {args.trainable_layers}": args.trainable_layers}
    seconds: dict[str, list[float]] = {label: [] for label in arms}
    ratios = []
    for round_ in range(args.rounds):
        order = list(arms) if round_ % 2 == 0 else list(arms)[::-1]
        this_round = {}
        for label in order:
            print(f"round {round_ + 1}: {label} ...", file=sys.stderr)
            this_round[label] = statistics.median(
                run_arm(base, tokenizer.pad_token_id, batch, arms[label], args)
            )
            seconds[label].append(this_round[label])
        all_s, top_s = (this_round[label] for label in arms)
        ratios.append(all_s / top_s)
    tokens = args.sequences * args.length
    summary = [
        {
            "label": label,
            "trainable_layers": layers if layers is not None else total_layers,
            "median_s": statistics.median(seconds[label]),
            "tokens_per_s": tokens / statistics.median(seconds[label]),
        }
        for label, layers in arms.items()
    ]
    speedup = statistics.median(ratios)
    print_table(
        ["arm", "layers trained", "s/update", "tokens/s", "vs all layers"],
        [
            [
                s["label"],
                f"{s['trainable_layers']} of {total_layers}",
                f"{s['median_s']:.2f}",
                f"{s['tokens_per_s']:,.0f}",
                f"{summary[0]['median_s'] / s['median_s']:.2f}x",
            ]
            for s in summary
        ],
        f"one update of {args.model}: {args.sequences} turns of {args.length} tokens, "
        f"{torch.get_num_threads()} threads, median of {args.steps} updates x {args.rounds} rounds",
    )
    print(f"speedup (median of the rounds' all/top ratios): {speedup:.2f}x")
    report = {
        "settings": {k: v for k, v in vars(args).items() if k != "json"},
        "decoder_layers": total_layers,
        "summary": summary,
        "round_ratios": ratios,
        "speedup": speedup,
    }
    write_report(args.json, report, ("torch", "transformers"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
