"""What holding a shared prompt beginning once saves: one policy update, prefix shared or not.

The batch is an RL-only Sokoban step as the ``sokoban-rl-only`` preset trains on it: the turns
of ``--episodes`` episodes of ``SimpleSokoban-v0`` played by seeded random moves, each turn's
prompt built as the trainer builds it (the env's instruction as the system message, the
previous turn and the position told in words, SmolLM2's chat template), then the one-token
reply, which alone is scored, among the four action words. Every prompt begins with the same
instruction, so a packed micro-batch can hold that beginning once
(``trainer.strategies.packing``, ``TorchStrategy(share_prefix=...)``).

The same update runs ``--steps`` times per arm and round, in this process with every core, the
preset's ``model.trainable_layers`` and ``optim.micro_batch_tokens``; arms alternate (shared,
whole, whole, shared, ...) over ``--rounds`` rounds, each from a fresh copy of the model, so
a change in the machine's load weighs on both. The ratio is the median over rounds of
(whole's seconds / shared's). As a check that both compute the same update, the first step's
loss and gradient norm are printed for each arm.

Run (from the repository root)::

    python benchmarks/shared_prefix.py           # SmolLM2-135M, ~5 min
    python benchmarks/shared_prefix.py --quick   # tiny-random, a few seconds
"""

from __future__ import annotations

import argparse
import copy
import random
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

PRESET = "sokoban-rl-only"
ARMS = {"prefix shared": True, "each sequence whole": False}


def build_batch(args: argparse.Namespace, tokenizer: Any, config: Any):
    """The turns of ``args.episodes`` random-play episodes as the preset's trainer sees them,
    and the token ids of the action words (the vocabulary replies are scored among)."""
    import torch

    import rollenv
    from rollenv.wrappers import ChatHistory
    from trainer.rollout.chat_tokens import ChatTokens
    from trainer.strategies.batch import TokenBatch

    chat = ChatTokens(tokenizer)
    env_config = config.env
    words = list(rollenv.make(env_config.id, **env_config.kwargs).unwrapped.action_words)
    word_ids = [tokenizer.encode(word, add_special_tokens=False) for word in words]
    if any(len(ids) != 1 for ids in word_ids):
        raise SystemExit(f"the action words {words} are not one token each for this tokenizer")
    rng = random.Random(args.seed)
    sequences = []
    for episode in range(args.episodes):
        env = ChatHistory(
            rollenv.make(env_config.id, **env_config.kwargs), window=env_config.window
        )
        _, info = env.reset(seed=episode)
        for _ in range(env_config.max_turns):
            word = rng.randrange(len(words))
            sequences.append(chat.prompt(info["messages"]) + word_ids[word])
            _, _, terminated, truncated, info = env.step(words[word])
            if terminated or truncated:
                break
    generator = torch.Generator().manual_seed(args.seed)
    advantages = torch.randn(len(sequences), generator=generator)
    masks = []
    for sequence in sequences:
        mask = torch.zeros(len(sequence))
        mask[-1] = 1.0
        masks.append(mask)
    batch = TokenBatch(
        token_ids=sequences,
        loss_mask=masks,
        advantages=[
            torch.full((len(s),), float(a)) for s, a in zip(sequences, advantages, strict=True)
        ],
        old_logprobs=[torch.full((len(s),), -1.4) for s in sequences],
    )
    return batch, tuple(ids[0] for ids in word_ids)


def run_arm(base: Any, pad_id: int, batch: Any, share: bool, args, vocabulary) -> dict:
    """Seconds per update of a fresh strategy, and its first update's metrics."""
    from trainer.strategies.torch_strategy import LossSettings, TorchStrategy

    strategy = TorchStrategy(
        copy.deepcopy(base),
        pad_id=pad_id,
        lr=1e-5,
        loss=LossSettings(vocabulary=vocabulary),
        micro_batch_tokens=args.micro_batch_tokens,
        trainable_layers=args.trainable_layers,
        share_prefix=share,
    )
    seconds, first = [], None
    for _ in range(args.steps):
        clock = time.perf_counter()
        metrics = strategy.train_step(batch)
        seconds.append(time.perf_counter() - clock)
        first = first or metrics
    return {"seconds": seconds, "first_step": first}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    from trainer.config import load_config

    preset = load_config(PRESET, [])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=preset.model.name, help="smollm2-135m or tiny-random")
    parser.add_argument(
        "--trainable-layers",
        type=int,
        default=preset.model.trainable_layers,
        help=f"decoder layers trained, the last ones ({preset.model.trainable_layers})",
    )
    parser.add_argument(
        "--episodes", type=int, default=16, help="episodes whose turns make the batch (16)"
    )
    parser.add_argument(
        "--micro-batch-tokens",
        type=int,
        default=preset.optim.micro_batch_tokens,
        help=f"({preset.optim.micro_batch_tokens})",
    )
    parser.add_argument("--steps", type=int, default=1, help="updates per arm and round (1)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of both arms (3)")
    parser.add_argument("--seed", type=int, default=0)
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "shared_prefix.json",
        quick="tiny-random model, its last layer, 2 episodes, 1 round",
    )
    quick = {"model": "tiny-random", "trainable_layers": 1, "episodes": 2, "rounds": 1}
    args = parse_arguments(parser, argv, quick)
    args.preset = preset
    return args


def main(argv: Sequence[str] | None = None) -> int:
    import torch

    from trainer.models import load_model
    from trainer.strategies.packing import shared_prefix_length

    args = parse_args(argv)
    base, tokenizer = load_model(args.model, seed=0)
    batch, vocabulary = build_batch(args, tokenizer, args.preset)
    prefix = shared_prefix_length(batch.token_ids, batch.loss_mask)
    results: dict[str, list[float]] = {label: [] for label in ARMS}
    first: dict[str, dict] = {}
    ratios = []
    for round_ in range(args.rounds):
        order = list(ARMS) if round_ % 2 == 0 else list(ARMS)[::-1]
        this_round = {}
        for label in order:
            print(f"round {round_ + 1}: {label} ...", file=sys.stderr)
            arm = run_arm(base, tokenizer.pad_token_id, batch, ARMS[label], args, vocabulary)
            this_round[label] = statistics.median(arm["seconds"])
            results[label].append(this_round[label])
            first.setdefault(label, arm["first_step"])
        ratios.append(this_round["each sequence whole"] / this_round["prefix shared"])
    tokens = sum(len(s) for s in batch.token_ids)
    summary = [
        {
            "label": label,
            "median_s": statistics.median(results[label]),
            "tokens_per_s": tokens / statistics.median(results[label]),
            "first_loss": first[label]["loss"],
            "first_grad_norm": first[label]["grad_norm"],
        }
        for label in ARMS
    ]
    whole = summary[1]["median_s"]
    print_table(
        ["arm", "s/update", "tokens/s", "vs whole", "first loss", "first grad norm"],
        [
            [
                s["label"],
                f"{s['median_s']:.2f}",
                f"{s['tokens_per_s']:,.0f}",
                f"{whole / s['median_s']:.2f}x",
                f"{s['first_loss']:.6f}",
                f"{s['first_grad_norm']:.6f}",
            ]
            for s in summary
        ],
        f"one update of {args.model}: {len(batch.token_ids)} turns of {args.episodes} "
        f"{args.preset.env.id} episodes ({tokens:,} tokens, {tokens / len(batch.token_ids):.0f} "
        f"a turn, {prefix} shared by all), last {args.trainable_layers} layers trained, "
        f"{torch.get_num_threads()} threads, median of {args.steps} x {args.rounds} rounds",
    )
    speedup = statistics.median(ratios)
    print(f"speedup (median of the rounds' whole/shared ratios): {speedup:.2f}x")
    settings = {k: v for k, v in vars(args).items() if k not in ("json", "preset")}
    report = {
        "settings": {**settings, "preset": PRESET},
        "turns": len(batch.token_ids),
        "tokens": tokens,
        "shared_prefix_tokens": prefix,
        "summary": summary,
        "round_ratios": ratios,
        "speedup": speedup,
    }
    write_report(args.json, report, ("torch", "transformers"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
