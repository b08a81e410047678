"""Grammar-constrained tool calls against free sampling: what the grammar costs per token.

Two parts, in one run:

1. **The library.** llguidance and xgrammar (where installed: ``pip install "rollenv[bench]"``)
   compile the same JSON Schema, one call to any of an env's tools (``name`` and its
   ``arguments``), against the model's tokenizer, then walk the same call token by token: the
   mask of the allowed tokens before each, then the token. The table gives each library's
   compile time and its microseconds per token; the engine uses the faster one.
2. **The engine.** The continuous engine samples replies to tool prompts (SimpleSokoban boards
   in the ``tools`` action format, rendered by the ``smollm2`` tool-call format) at temperature
   1, with the grammar of one call (``tool_choice="required"``) and freely, at batch 1 (one
   request at a time) and batch 32 (32 requests together). The free arm generates, with
   ``ignore_eos``, the mean number of tokens the constrained arm's replies had, so both arms
   read the same prompts and make about as many tokens. Arms alternate over ``--rounds``; the
   ratio is the median of the rounds' (constrained tokens/s / free tokens/s). Goal: >= 0.8x.

Run (from the repository root)::

    python benchmarks/tool_decoding.py           # SmolLM2-135M, about 3 minutes on two cores
    python benchmarks/tool_decoding.py --quick   # tiny-random, under a minute
"""

from __future__ import annotations

import argparse
import json
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

ENV_ID = "SimpleSokoban-v0"


def tool_prompts(tokenizer: Any, count: int) -> tuple[list[list[int]], list[dict]]:
    """``count`` tool prompts (one board each, seeds 0..count-1) and the env's tools."""
    import rollenv
    from trainer.tool_call_formats import tool_call_format

    fmt = tool_call_format("smollm2")
    prompts, tools = [], []
    for seed in range(count):
        env = rollenv.make(ENV_ID, action_format="tools")
        observation, info = env.reset(seed=seed)
        tools = info["tools"]
        text = fmt.render(tokenizer, [{"role": "user", "content": observation}], tools)
        prompts.append(tokenizer.encode(text, add_special_tokens=False))
        env.close()
    return prompts, tools


def walk_tokens(tokenizer: Any, vocab_size: int, schema: dict, text: str) -> list[int]:
    """Tokens that write ``text`` within the schema: at each step the longest token llguidance
    allows that continues it (llguidance allows the tokenizations it deems canonical)."""
    from trainer.generation.grammar import GrammarMasks

    masks = GrammarMasks(tokenizer, vocab_size, (tokenizer.eos_token_id,))
    matcher = masks.matcher(f"start: %json {json.dumps(schema)}")
    pieces = {t: tokenizer.decode([t]) for t in range(len(tokenizer))}
    tokens = []
    while text:
        allowed = masks.allowed([matcher])[0].nonzero().flatten().tolist()
        token = max(
            (t for t in allowed if pieces.get(t) and text.startswith(pieces[t])),
            key=lambda t: len(pieces[t]),
        )
        masks.advance(matcher, token)
        tokens.append(token)
        text = text[len(pieces[token]) :]
    return tokens


def time_llguidance(tokenizer: Any, vocab: int, schema: dict, tokens: list[int], repeats: int):
    """(compile ms, mask and advance microseconds per token) of llguidance."""
    import llguidance
    import llguidance.hf
    import llguidance.torch

    ll_tokenizer = llguidance.hf.from_tokenizer(
        tokenizer, n_vocab=vocab, eos_token=tokenizer.eos_token_id
    )
    grammar = f"start: %json {json.dumps(schema)}"
    compile_s, token_s = [], []
    bitmask = llguidance.torch.allocate_token_bitmask(1, vocab)
    for _ in range(repeats):
        clock = time.perf_counter()
        matcher = llguidance.LLMatcher(ll_tokenizer, grammar, log_level=0)
        compile_s.append(time.perf_counter() - clock)
        clock = time.perf_counter()
        for token in tokens:
            llguidance.torch.fill_next_token_bitmask(matcher, bitmask, 0)
            if not matcher.consume_token(token):
                raise RuntimeError(f"llguidance refused token {token}")
        token_s.append((time.perf_counter() - clock) / len(tokens))
    return 1e3 * statistics.median(compile_s), 1e6 * statistics.median(token_s)


def time_xgrammar(tokenizer: Any, vocab: int, schema: dict, tokens: list[int], repeats: int):
    """(compile ms, mask and advance microseconds per token) of xgrammar; ``None`` where it is
    not installed."""
    try:
        import xgrammar
    except ImportError:
        return None
    info = xgrammar.TokenizerInfo.from_huggingface(
        tokenizer, vocab_size=vocab, stop_token_ids=[tokenizer.eos_token_id]
    )
    compile_s, token_s = [], []
    bitmask = xgrammar.allocate_token_bitmask(1, vocab)
    for _ in range(repeats):
        compiler = xgrammar.GrammarCompiler(info, cache_enabled=False)
        clock = time.perf_counter()
        plain = {key: value for key, value in schema.items() if key != "x-guidance"}
        compiled = compiler.compile_json_schema(
            json.dumps(plain), any_whitespace=False, separators=(", ", ": ")
        )
        compile_s.append(time.perf_counter() - clock)
        matcher = xgrammar.GrammarMatcher(compiled)
        clock = time.perf_counter()
        for token in tokens:
            matcher.fill_next_token_bitmask(bitmask)
            if not matcher.accept_token(token):
                raise RuntimeError(f"xgrammar refused token {token}")
        token_s.append((time.perf_counter() - clock) / len(tokens))
    return 1e3 * statistics.median(compile_s), 1e6 * statistics.median(token_s)


def run_arm(generator: Any, prompts: list[list[int]], params: Any, batch: int):
    """(generated tokens, seconds, reply lengths) of ``prompts`` run ``batch`` at a time."""
    lengths, clock = [], time.perf_counter()
    for start in range(0, len(prompts), batch):
        outputs = generator.generate(prompts[start : start + batch], params)
        lengths += [len(output.token_ids) for output in outputs]
    return sum(lengths), time.perf_counter() - clock, lengths


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m", help="smollm2-135m or tiny-random")
    parser.add_argument("--batches", default="1,32", help="batch sizes (1,32)")
    parser.add_argument("--requests", type=int, default=32, help="prompts per arm (32)")
    parser.add_argument("--requests-batch-1", type=int, default=8, help="at batch 1 (8)")
    parser.add_argument("--rounds", type=int, default=3, help="constrained/free pairs (3)")
    parser.add_argument("--max-new-tokens", type=int, default=64, help="(64)")
    parser.add_argument("--compile-repeats", type=int, default=20, help="library timings (20)")
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "tool_decoding.json",
        quick="tiny-random, 8 prompts at batch 32, 1 round",
    )
    quick = {"model": "tiny-random", "requests": 8, "requests_batch_1": 2, "rounds": 1}
    return parse_arguments(parser, argv, quick)


def main(argv: Sequence[str] | None = None) -> int:
    import torch

    from trainer.generation import make_generator
    from trainer.generation.base import SamplingParams
    from trainer.models import load_model
    from trainer.tool_call_formats import Call, tool_call_format

    args = parse_args(argv)
    model, tokenizer = load_model(args.model, seed=0)
    vocab = int(model.get_output_embeddings().weight.shape[0])
    prompts, tools = tool_prompts(tokenizer, args.requests)
    schema = tool_call_format("smollm2").call_schema(tools)

    # 1. the library: the same schema, the same call's tokens
    example = Call(tools[0]["function"]["name"], _example_arguments(tools[0]))
    written = json.dumps({"name": example.name, "arguments": example.arguments})
    tokens = walk_tokens(tokenizer, vocab, schema, written)
    libraries = {
        "llguidance": time_llguidance(tokenizer, vocab, schema, tokens, args.compile_repeats)
    }
    xgrammar_times = time_xgrammar(tokenizer, vocab, schema, tokens, args.compile_repeats)
    if xgrammar_times is not None:
        libraries["xgrammar"] = xgrammar_times
    chosen = min(libraries, key=lambda name: libraries[name][1])
    print_table(
        ["library", "compile ms", "µs per token (mask + advance)"],
        [[name, f"{c:.2f}", f"{t:.0f}"] for name, (c, t) in libraries.items()],
        f"one call's JSON Schema ({len(tools)} tools of {ENV_ID}), walked over "
        f"{len(tokens)} tokens: {written}",
    )
    if xgrammar_times is None:
        print('xgrammar is not installed (pip install "rollenv[bench]"): llguidance alone')
    print(f"fastest per token: {chosen} (the engine uses llguidance)")

    # 2. the engine: constrained against free sampling
    grammar = tool_call_format("smollm2").call_grammar(tools, parallel=False)
    engine_rows, engine_report = [], []
    for batch in [int(b) for b in args.batches.split(",")]:
        requests = prompts if batch > 1 else prompts[: args.requests_batch_1]
        generator = make_generator("continuous", model, tokenizer, max_batch_size=batch)
        constrained = SamplingParams(
            max_new_tokens=args.max_new_tokens, temperature=1.0, seed=0, grammar=grammar
        )
        run_arm(generator, requests[:batch], constrained, batch)  # warm-up: weights' copies
        ratios, per_arm = [], {"constrained": [], "free": []}
        for round_ in range(args.rounds):
            made, seconds, lengths = run_arm(generator, requests, constrained, batch)
            per_arm["constrained"].append(made / seconds)
            free = SamplingParams(
                max_new_tokens=round(statistics.mean(lengths)),
                temperature=1.0,
                seed=round_,
                ignore_eos=True,
            )
            made_free, seconds_free, _ = run_arm(generator, requests, free, batch)
            per_arm["free"].append(made_free / seconds_free)
            ratios.append(per_arm["constrained"][-1] / per_arm["free"][-1])
            print(
                f"batch {batch} round {round_ + 1}: constrained {made / seconds:.1f} tokens/s, "
                f"free {made_free / seconds_free:.1f}",
                file=sys.stderr,
            )
        outputs = generator.generate(requests, constrained)
        fmt = tool_call_format("smollm2")
        valid = sum(
            bool(fmt.parse(tokenizer.decode(o.token_ids[:-1])).calls) and o.finish_reason == "stop"
            for o in outputs
        )
        ratio = statistics.median(ratios)
        row = {
            "batch": batch,
            "requests": len(requests),
            "constrained_tokens_per_s": statistics.median(per_arm["constrained"]),
            "free_tokens_per_s": statistics.median(per_arm["free"]),
            "ratio": ratio,
            "round_ratios": ratios,
            "replies_with_a_call": valid,
        }
        engine_report.append(row)
        engine_rows.append(
            [
                str(batch),
                f"{row['constrained_tokens_per_s']:.1f}",
                f"{row['free_tokens_per_s']:.1f}",
                f"{ratio:.2f}x",
                f"{valid}/{len(requests)}",
                "PASS" if ratio >= 0.8 else "FAIL",
            ]
        )
    print_table(
        ["batch", "constrained tokens/s", "free tokens/s", "ratio", "replies a call", ">= 0.8x"],
        engine_rows,
        f"{args.model}, continuous engine, {torch.get_num_threads()} threads, median of "
        f"{args.rounds} rounds",
    )
    report = {
        "settings": {k: v for k, v in vars(args).items() if k != "json"},
        "libraries": {
            name: {"compile_ms": c, "microseconds_per_token": t}
            for name, (c, t) in libraries.items()
        },
        "library_walk": {"text": written, "tokens": len(tokens)},
        "fastest_library": chosen,
        "engine": engine_report,
    }
    write_report(args.json, report, ("torch", "transformers", "llguidance", "xgrammar"))
    return 0


def _example_arguments(tool: dict) -> dict:
    """Arguments valid for ``tool``: each required property's first enum value (or a word)."""
    parameters = tool["function"].get("parameters") or {}
    arguments = {}
    for name in parameters.get("required", []):
        spec = parameters.get("properties", {}).get(name, {})
        arguments[name] = spec["enum"][0] if "enum" in spec else "go"
    return arguments


if __name__ == "__main__":
    raise SystemExit(main())
