"""A trial: the warm start alone, in the drawn board's view or in words, greedy success by minute.

SFT on oracle episodes under the ``sokoban-rl-only`` preset's prompts (one action word a turn,
the previous turn in the prompt, the last 10 layers trained) with ``env.kwargs.observation`` as
given, for ``MINUTES`` of training, evaluated greedily on 64 held-out boards half-way and at the
end. It chose the ``sokoban`` preset's view. Run from the repository root, one per core::

    python benchmarks/results/learning_sokoban_preset_trials/warm_start_view.py relative 12 1 &
    python benchmarks/results/learning_sokoban_preset_trials/warm_start_view.py grid 12 1 \\
        env.kwargs.observation=grid
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from learning_sokoban import Evaluator  # noqa: E402

from trainer.config import load_config  # noqa: E402
from trainer.training.sft import OracleSFT  # noqa: E402


def main(name: str, minutes: str, threads: str, *overrides: str) -> None:
    torch.set_num_threads(int(threads))
    config = load_config(
        "sokoban-rl-only",
        [
            f"train.output_dir=runs/warm_start_view_{name}",
            "sft.before_rl=true",
            "sft.episodes=100000",
            "sft.lr=1e-4",
            "sft.batch_sequences=4",
            "env.curriculum=null",
            "env.kwargs.max_solution_length=10",
            *overrides,
        ],
    )
    sft = OracleSFT(config, log=print)
    report = {"name": name, "overrides": list(overrides), "points": []}
    while sft.elapsed_s < 60 * float(minutes) - 5:
        sft.train(max_seconds=60 * float(minutes) / 2)
        evaluate = Evaluator.with_own_generator(config, sft.strategy.model, sft.tokenizer)
        result = evaluate({"SimpleSokoban-v0": 64})["SimpleSokoban-v0"]
        report["points"].append(
            {
                "sft_minutes": sft.elapsed_s / 60,
                "steps": sft.step,
                "success": result["success"],
                "eval_s": evaluate.seconds,
                "by_len": result.get("success_by_optimal_length"),
            }
        )
        print(json.dumps(report["points"][-1]), flush=True)
        path = Path(__file__).parent / f"warm_start_{name}_view.json"
        path.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main(*sys.argv[1:])
