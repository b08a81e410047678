"""Self-play against playing one seat versus a fixed player: episodes per second, same run.

Both arms play ``--games`` games of ``--env`` (``--seeds`` seeds, ``--games / --seeds`` games
a seed) with the same model and sampling, through ``SelfPlayManager``:

* **self-play:** the policy plays every seat; each pass over the games is one batched call
  holding the reply of whichever seat each game waits for, and every seat of every game is an
  episode to train on;
* **one seat:** the policy plays ``player_0`` and a random player (``RandomSeatPolicy``) the
  others, at no generation cost; each game is one episode.

Per arm: episodes a second (episodes to train on, per wall-clock second), generated tokens a
second, replies per ``generate`` call, and the ratio of the self-play arm to the one-seat arm.
The arms alternate, ``--repeats`` times each, and the best time of each is kept.

Run (from the repository root)::

    python benchmarks/self_play.py --quick   # tiny random model, seconds
    python benchmarks/self_play.py           # SmolLM2-135M, a few minutes
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

from rollenv.seat_policies import RandomSeatPolicy
from trainer.generation import HFGenerator, SamplingParams
from trainer.models import load_model
from trainer.rollout.self_play import SelfPlayManager

QUICK = {"model": "tiny-random", "games": 8, "seeds": 2, "max_turns": 3, "repeats": 1}


class CountingGenerator:
    """Counts the replies and tokens of the calls it passes on."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = self.replies = self.tokens = 0

    def generate(self, prompts, params):
        outputs = self.inner.generate(prompts, params)
        self.calls += 1
        self.replies += len(outputs)
        self.tokens += sum(len(o.token_ids) for o in outputs)
        return outputs


def run_arm(args: argparse.Namespace, arm: str, model: Any, tokenizer: Any) -> dict[str, Any]:
    generator = CountingGenerator(HFGenerator(model, tokenizer))
    sampling = SamplingParams(
        max_new_tokens=args.max_new_tokens,
        temperature=1.0,
        stop_token_ids=(tokenizer.eos_token_id,),
        seed=args.seed,
    )
    opponents = {} if arm == "self-play" else {"player_1": RandomSeatPolicy(seed=args.seed)}
    manager = SelfPlayManager(
        args.env,
        tokenizer,
        generator,
        group_size=args.games // args.seeds,
        max_turns=args.max_turns,
        sampling=sampling,
        opponents=opponents,
    )
    seeds = list(range(args.seeds))
    started = time.perf_counter()
    trajectories = manager.rollout(seeds)
    seconds = time.perf_counter() - started
    manager.close()
    return {
        "arm": arm,
        "seconds": seconds,
        "episodes": len(trajectories),
        "episodes_per_s": len(trajectories) / seconds,
        "tokens_per_s": generator.tokens / seconds,
        "calls": generator.calls,
        "replies_per_call": generator.replies / max(generator.calls, 1),
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--env", default="textarena/TicTacToe-v0")
    parser.add_argument("--games", type=int, default=16, help="games an arm plays")
    parser.add_argument("--seeds", type=int, default=4, help="seeds (games / seeds a seed)")
    parser.add_argument("--max-turns", type=int, default=5, help="replies of one seat")
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "self_play.json",
        quick="tiny random model, 8 games of 3 replies a seat, 1 repeat",
    )
    args = parse_arguments(parser, argv, QUICK)
    if args.games % args.seeds:
        parser.error(f"--games {args.games} is not a multiple of --seeds {args.seeds}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    model, tokenizer = load_model(args.model, seed=args.seed)
    best: dict[str, dict[str, Any]] = {}
    for repeat in range(args.repeats):
        for arm in ("self-play", "one seat"):
            result = run_arm(args, arm, model, tokenizer)
            print(
                f"  repeat {repeat + 1}/{args.repeats}, {arm}: {result['episodes']} episodes in "
                f"{result['seconds']:.1f} s",
                flush=True,
            )
            if arm not in best or result["seconds"] < best[arm]["seconds"]:
                best[arm] = result
    base = best["one seat"]
    rows = [
        [
            r["arm"],
            str(r["episodes"]),
            f"{r['seconds']:.1f}",
            f"{r['episodes_per_s']:.2f}",
            f"{r['episodes_per_s'] / base['episodes_per_s']:.2f}x",
            f"{r['tokens_per_s']:.0f}",
            f"{r['replies_per_call']:.1f}",
        ]
        for r in best.values()
    ]
    print_table(
        ["arm", "episodes", "s", "episodes/s", "vs one seat", "tokens/s", "replies/call"],
        rows,
        f"{args.games} games of {args.env}, {args.model}, at most {args.max_turns} replies a "
        f"seat, {args.max_new_tokens} new tokens a reply; best of {args.repeats}",
    )
    write_report(
        args.json,
        {
            "settings": {k: v for k, v in vars(args).items() if k != "json"},
            "results": list(best.values()),
            "self_play_vs_one_seat": best["self-play"]["episodes_per_s"] / base["episodes_per_s"],
        },
        ("torch", "transformers", "textarena", "pettingzoo"),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
