"""``roll-agent serve``: a model behind an OpenAI-compatible API, on rollenv's engine.

Example:
    $ roll-agent serve --model runs/sokoban/checkpoints/step-200/model --port 8000
"""

from __future__ import annotations

import argparse
import os
import sys

from rollenv.commands.arguments import (
    UsageError,
    non_negative_int,
    positive_int,
)
from rollenv.extras import INSTALL_COMMANDS, require_extra
from trainer.tool_call_formats import TOOL_CALL_FORMATS

INTERRUPTED = 130

__all__ = ["add_serve_command", "run_serve"]


def add_serve_command(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "serve",
        help="Serve a model through an OpenAI-compatible API.",
        description="Serve a model with rollenv's engine (request batching, continuous "
        "batching) at /v1/models, /v1/completions and /v1/chat/completions, for evaluation "
        f"and other tools. Needs the [serve] extra: {INSTALL_COMMANDS['serve']}",
    )
    parser.add_argument(
        "--model",
        default="smollm2-135m",
        help="smollm2-135m (default), tiny-random, or a model folder (a run's checkpoint "
        "model folder works)",
    )
    parser.add_argument("--name", help="the model id clients send (default: --model)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=non_negative_int, default=8000, help="port (8000)")
    parser.add_argument(
        "--dtype",
        choices=["float32", "bfloat16"],
        default="float32",
        help="weights' and KV cache's dtype (bfloat16 is faster only on CPUs with AVX512-BF16 "
        "or AMX, slower beyond one sequence on AVX2; its log-probs are a few hundredths from "
        "float32's)",
    )
    parser.add_argument(
        "--quantize",
        choices=["int4"],
        help="int4: decode steps of up to 32 sequences read 4-bit copies of the layers (the "
        "GGUF's own Q4_1 values for SmolLM2) and a bfloat16 head: faster decoding for a few "
        "clients on a CPU, its speed and agreement with float32 in benchmarks/serve_load.py",
    )
    parser.add_argument(
        "--max-model-len",
        type=positive_int,
        help="the most tokens a request holds, prompt and reply (default: the model's context)",
    )
    parser.add_argument(
        "--max-num-seqs",
        type=positive_int,
        help="requests generated at once; more wait (default: 64, lowered to fit the KV cache "
        "budget)",
    )
    parser.add_argument(
        "--kv-cache-memory",
        default="0.25",
        help="the KV cache's budget: a size (4GB, 512MiB) or a fraction of this machine's "
        "memory (default 0.25)",
    )
    parser.add_argument(
        "--max-step-tokens",
        type=positive_int,
        default=512,
        help="most tokens a forward pass runs: a longer prompt is read in chunks this size "
        "while the others decode (default 512)",
    )
    parser.add_argument(
        "--queue-timeout",
        type=float,
        default=60.0,
        help="seconds a request may wait for a free sequence before a 503 (default 60)",
    )
    parser.add_argument(
        "--max-waiting",
        type=non_negative_int,
        default=1024,
        help="most requests waiting for a sequence; more get a 503 at once (default 1024)",
    )
    parser.add_argument(
        "--shutdown-grace",
        type=float,
        default=5.0,
        help="seconds running requests may finish after SIGTERM or Ctrl-C (default 5)",
    )
    parser.add_argument(
        "--tool-call-format",
        choices=["auto", *TOOL_CALL_FORMATS],
        default="auto",
        help="how the model writes tool calls and its prompts show tools (default auto: the "
        "template's own tools branch in Hermes' tags where it has one, else smollm2)",
    )
    parser.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    """``roll-agent serve``: our engine behind an OpenAI-compatible API until Ctrl-C."""
    require_extra("torch", "train")
    require_extra("fastapi", "serve")
    require_extra("uvicorn", "serve")
    from trainer.models import ModelLoadError
    from trainer.serving.openai_server import serve
    from trainer.serving.plan import ServePlanError

    try:
        serve(
            args.model,
            host=args.host,
            port=args.port,
            name=args.name,
            dtype=None if args.dtype == "float32" else args.dtype,
            quantize=args.quantize,
            max_model_len=args.max_model_len,
            max_num_seqs=args.max_num_seqs,
            kv_cache_memory=args.kv_cache_memory,
            max_step_tokens=args.max_step_tokens,
            queue_timeout_s=args.queue_timeout,
            max_waiting=args.max_waiting,
            shutdown_grace_s=args.shutdown_grace,
            tool_call_format=args.tool_call_format,
        )
    except (ModelLoadError, ServePlanError) as error:
        raise UsageError(str(error)) from None
    except OSError as error:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {error}") from None
    # stopped cleanly: every request is answered and the engine is closed. Python's own
    # teardown of torch and transformers takes another 1.5 s here, past the grace period
    # a stop promises, and has nothing left to do
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
