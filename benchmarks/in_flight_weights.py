"""Weights that arrive mid-batch: ``next_turn``, ``keep_cache`` and ``recompute_prefix``.

A ``GeneratorActor`` (driven in-process with asyncio: the actor's own code, without Ray's
transport) decodes ``--replies`` replies of ``--tokens`` tokens each; once every reply has
sampled ``--switch-after`` tokens, new weights are pushed. The new weights are the policy with
every weight moved by ``--step-size`` in a random direction (``w + step * sign(noise)``): the
size of one Adam step at learning rate ``--step-size``, Adam's first step being
``lr * sign(gradient)``.

Per mode (``rollout.in_flight_weights``), in the same run:

* **update wait:** seconds from the push to the actor serving the new version;
* **batch:** seconds the batch took, push included;
* **tokens after the push under the new weights:** the share of the tokens sampled after the
  push that the new weights sampled (``next_turn``: none; the batch finishes under the old);
* **log-prob gap:** the mean and max of ``|generator's log-prob - new policy's log-prob|`` over
  the tokens sampled after the push, the new policy scoring each reply afresh (prompt and
  reply, as the trainer does); and the same over the tokens the new weights sampled alone
  (``keep_cache`` reads an old cache there, ``recompute_prefix`` does not). It is the error an
  off-policy correction has to absorb when it takes the generator's log-prob for the new
  policy's.

Run (from the repository root)::

    python benchmarks/in_flight_weights.py --quick    # tiny random model, seconds
    python benchmarks/in_flight_weights.py            # SmolLM2-135M, about a minute
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence
from typing import Any

import torch
from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

from trainer.generation.actor import GeneratorActor
from trainer.generation.base import GenerationOutput, SamplingParams
from trainer.generation.in_flight_weights import IN_FLIGHT_MODES
from trainer.models import load_model

QUICK = {"model": "tiny-random", "replies": 4, "tokens": 24, "switch_after": 8}


def stepped(state: dict[str, torch.Tensor], size: float, seed: int) -> dict[str, torch.Tensor]:
    """``state`` with every floating weight moved by ``size`` in a random sign direction."""
    generator = torch.Generator().manual_seed(seed)
    out = {}
    for name, tensor in state.items():
        if tensor.is_floating_point():
            noise = torch.randn(tensor.shape, generator=generator)
            out[name] = tensor + size * noise.sign().to(tensor.dtype)
        else:
            out[name] = tensor
    return out


def sampled_so_far(server: GeneratorActor) -> int:
    """The fewest tokens any running reply of the actor's batch has sampled (0 if none runs)."""
    stream = getattr(server.generator, "_stream", None)
    running = [] if stream is None else stream._running
    return min((len(request.tokens) for request in running), default=0)


async def batch_with_push(
    server: GeneratorActor,
    prompts: list[list[int]],
    params: SamplingParams,
    weights: dict[str, torch.Tensor],
    switch_after: int,
) -> tuple[list[GenerationOutput], float, float, int]:
    """Runs the batch, pushing ``weights`` as version 1 once every reply sampled
    ``switch_after`` tokens. Returns the outputs, the update's wait, the batch's seconds and
    the tokens each reply had sampled at the push."""
    start = time.perf_counter()
    replies = asyncio.gather(*(server.generate(p, params) for p in prompts))
    while sampled_so_far(server) < switch_after:
        await asyncio.sleep(0.001)
    at_push = sampled_so_far(server)
    pushed = time.perf_counter()
    await server.update_weights(weights, version=1)
    wait = time.perf_counter() - pushed
    outputs = await replies
    return outputs, wait, time.perf_counter() - start, at_push


def rescored(model: Any, prompt: list[int], output: GenerationOutput) -> list[float]:
    """The log-prob ``model`` gives each token of the reply, reading prompt and reply afresh."""
    sequence = torch.tensor([prompt + output.token_ids])
    with torch.no_grad():
        logits = model(sequence).logits[0].float().log_softmax(-1)
    first = len(prompt) - 1
    return [logits[first + i, t].item() for i, t in enumerate(output.token_ids)]


def run_mode(args: argparse.Namespace, mode: str, prompts: list[list[int]]) -> dict[str, Any]:
    server = GeneratorActor(
        args.model, seed=args.seed, batch_wait_s=0.01, in_flight_weights=mode, max_batch_size=64
    )
    new_model, _ = load_model(args.model, seed=args.seed)
    new_state = stepped(new_model.state_dict(), args.step_size, seed=args.seed + 1)
    new_model.load_state_dict(new_state)
    new_model.eval()
    params = SamplingParams(
        max_new_tokens=args.tokens, temperature=1.0, ignore_eos=True, seed=args.seed
    )
    outputs, wait, seconds, at_push = asyncio.run(
        batch_with_push(server, prompts, params, new_state, args.switch_after)
    )
    gaps, new_gaps = [], []  # every token after the push; those the new weights sampled
    for prompt, output in zip(prompts, outputs, strict=True):
        fresh = rescored(new_model, prompt, output)
        for i in range(at_push, len(output.token_ids)):
            gaps.append(abs(fresh[i] - output.logprobs[i]))
            if output.weight_versions[i] == 1:
                new_gaps.append(gaps[-1])
    after, under_new = len(gaps), len(new_gaps)
    return {
        "mode": mode,
        "update_wait_s": wait,
        "batch_s": seconds,
        "tokens_at_push": at_push,
        "tokens_after_push": after,
        "share_under_new_weights": under_new / after if after else 0.0,
        "logprob_gap_mean": sum(gaps) / len(gaps) if gaps else 0.0,
        "logprob_gap_max": max(gaps, default=0.0),
        "new_weights_logprob_gap_mean": sum(new_gaps) / len(new_gaps) if new_gaps else None,
        "new_weights_logprob_gap_max": max(new_gaps, default=None),
    }


def new_gaps(result: dict[str, Any]) -> str:
    """The new weights' tokens' gap, ``mean / max`` (``-`` where they sampled none)."""
    if result["new_weights_logprob_gap_mean"] is None:
        return "-"
    return (
        f"{result['new_weights_logprob_gap_mean']:.2e} / "
        f"{result['new_weights_logprob_gap_max']:.2e}"
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--replies", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=96)
    parser.add_argument("--switch-after", type=int, default=32)
    parser.add_argument("--step-size", type=float, default=3e-5)
    parser.add_argument("--seed", type=int, default=0)
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "in_flight_weights.json",
        quick="tiny random model, 4 replies of 24 tokens",
    )
    return parse_arguments(parser, argv, QUICK)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    _, tokenizer = load_model(args.model, seed=args.seed)
    texts = [f"Write a short story about a robot named Unit {i}." for i in range(args.replies)]
    prompts = [list(tokenizer.encode(text)) for text in texts]
    results = []
    for mode in IN_FLIGHT_MODES:
        results.append(run_mode(args, mode, prompts))
        r = results[-1]
        print(
            f"  {mode}: update waited {r['update_wait_s']:.3f} s, batch {r['batch_s']:.2f} s",
            flush=True,
        )
    base = next(r for r in results if r["mode"] == "next_turn")
    rows = [
        [
            r["mode"],
            f"{r['update_wait_s']:.3f}",
            f"{r['update_wait_s'] / base['update_wait_s']:.2f}x",
            f"{r['batch_s']:.2f}",
            f"{r['batch_s'] / base['batch_s']:.2f}x",
            f"{r['share_under_new_weights']:.0%}",
            f"{r['logprob_gap_mean']:.2e}",
            f"{r['logprob_gap_max']:.2e}",
            new_gaps(r),
        ]
        for r in results
    ]
    print_table(
        [
            "mode",
            "update wait s",
            "vs next_turn",
            "batch s",
            "vs next_turn",
            "after push: new weights",
            "log-prob gap mean",
            "gap max",
            "gap, new weights' tokens: mean / max",
        ],
        rows,
        f"{args.replies} replies of {args.tokens} tokens, {args.model}, weights pushed after "
        f"{results[0]['tokens_at_push']} tokens, step {args.step_size:g}",
    )
    write_report(
        args.json,
        {
            "settings": {k: v for k, v in vars(args).items() if k != "json"},
            "results": results,
        },
        announce=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
