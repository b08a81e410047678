"""Agent programs through the gateway against the built-in env manager, and the gateway under load.

Two parts, in one run:

1. **Throughput.** The same episodes (``--episodes`` Sokoban boards, ``--turns`` turns each, a
   full-context chat, replies of up to ``--reply-tokens`` sampled at temperature 1) played by
   the built-in env manager (the ``continuous`` schedule: each episode's next prompt joins the
   running batch as soon as its env has stepped) and by an agent program written with the
   ``openai`` SDK that builds the same chat, all episodes at once, through the gateway on
   127.0.0.1. Tokens/s is sampled tokens over wall time; the arms alternate over ``--rounds``
   and the ratio is the median of the rounds' (gateway / env manager). Goal: >= 0.9x.
2. **Load.** ``--load-agents`` agents at once, each calling the model in a loop (a short chat,
   ``--load-reply-tokens`` tokens a reply) for ``--load-seconds``: calls sent, answered and
   lost (sent but never answered, or answered with an error), and the latency percentiles.
   Goal: 0 lost.

Run (from the repository root)::

    python benchmarks/agent_gateway.py           # SmolLM2-135M, about 5 minutes on two cores
    python benchmarks/agent_gateway.py --quick   # tiny-random, about a minute
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # benchmark this checkout

ENV_ID = "Sokoban-v0"


def chat_agent(turns: int, reply_tokens: int, seed: int) -> Any:
    """The env manager's full-context chat as an ``openai``-SDK agent."""

    async def agent(env: Any, llm: Any) -> None:
        obs, info = env.reset()
        messages = [
            {"role": "system", "content": info["instruction"]},
            {"role": "user", "content": obs},
        ]
        for turn in range(turns):
            reply = await llm.chat.completions.create(
                model="policy",
                messages=messages,
                max_tokens=reply_tokens,
                temperature=1.0,
                seed=seed + turn,
            )
            text = reply.choices[0].message.content
            obs, reward, terminated, truncated, info = env.step(text)
            if terminated or truncated:
                return
            messages += [
                {"role": "assistant", "content": text},
                {"role": "user", "content": f"Reward: {reward:g}\n{obs}"},
            ]

    return agent


def looping_agent(seconds: float, reply_tokens: int, latencies: list, counts: dict) -> Any:
    """Calls the model in a loop until ``seconds`` have passed, timing every call (its env
    steps with each reply until the episode ends)."""
    import openai

    lock = threading.Lock()

    def count(key: str, value: Any = 1) -> None:
        with lock:
            if isinstance(counts[key], list):
                counts[key].append(value)
            else:
                counts[key] += value

    async def agent(env: Any, llm: Any) -> None:
        obs, _ = env.reset()
        ended = False
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            count("sent")
            started = time.perf_counter()
            try:
                reply = await llm.chat.completions.create(
                    model="policy",
                    messages=[{"role": "user", "content": obs[:200]}],
                    max_tokens=reply_tokens,
                )
            except openai.OpenAIError as error:
                count("errors", f"{type(error).__name__}: {error}"[:200])
                continue
            with lock:
                latencies.append(time.perf_counter() - started)
            count("answered")
            if not ended:
                _, _, terminated, truncated, _ = env.step(reply.choices[0].message.content or "")
                ended = terminated or truncated

    return agent


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m", help="smollm2-135m or tiny-random")
    parser.add_argument("--episodes", type=int, default=16, help="episodes per arm (16)")
    parser.add_argument("--turns", type=int, default=4, help="turns per episode (4)")
    parser.add_argument("--reply-tokens", type=int, default=32, help="per reply (32)")
    parser.add_argument("--rounds", type=int, default=3, help="gateway/manager pairs (3)")
    parser.add_argument("--load-agents", type=int, default=64, help="agents at once (64)")
    parser.add_argument("--load-seconds", type=float, default=60.0, help="(60)")
    parser.add_argument("--load-reply-tokens", type=int, default=8, help="(8)")
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "agent_gateway.json",
        quick="tiny-random, 8 episodes, 1 round, 16 agents for 10 s",
    )
    quick = {
        "model": "tiny-random",
        "episodes": 8,
        "rounds": 1,
        "load_agents": 16,
        "load_seconds": 10.0,
    }
    return parse_arguments(parser, argv, quick)


def main(argv: Sequence[str] | None = None) -> int:
    import torch

    from trainer.agents.agent_episodes import AgentEpisodes
    from trainer.agents.gateway import Gateway
    from trainer.generation.base import SamplingParams
    from trainer.generation.continuous import ContinuousGenerator
    from trainer.models import load_model
    from trainer.rollout.env_manager import EnvManager
    from trainer.serving.engine import ServingEngine

    args = parse_args(argv)
    model, tokenizer = load_model(args.model, seed=0)
    manager = EnvManager(
        ENV_ID,
        tokenizer,
        ContinuousGenerator(model, tokenizer, max_batch_size=args.episodes),
        group_size=1,
        max_turns=args.turns,
        context="full",
        max_context_tokens=100_000,
        schedule="continuous",
        sampling=SamplingParams(
            max_new_tokens=args.reply_tokens,
            temperature=1.0,
            stop_token_ids=(tokenizer.eos_token_id,),
        ),
    )

    def served(batch: int) -> tuple[Any, Any]:
        """A gateway on an engine of ``batch`` sequences, stepped by play() on this (main)
        thread while it waits, as a training run's gateway is."""
        engine = ServingEngine(
            ContinuousGenerator(model, tokenizer, max_batch_size=batch), own_thread=False
        )
        return engine, Gateway(engine)

    # the same engine size as the env manager's
    engine, gateway = served(args.episodes)
    seeds = list(range(args.episodes))

    def through_manager(round_: int) -> tuple[int, float]:
        manager.sampling = SamplingParams(**{**vars(manager.sampling), "seed": round_})
        clock = time.perf_counter()
        played = manager.rollout(seeds)
        seconds = time.perf_counter() - clock
        return sum(t.response_tokens for p in played for t in p.turns), seconds

    def through_gateway(round_: int) -> tuple[int, float]:
        agent = chat_agent(args.turns, args.reply_tokens, round_)
        episodes = AgentEpisodes(agent, ENV_ID, gateway, concurrency=args.episodes)
        clock = time.perf_counter()
        played = episodes.play(seeds)
        seconds = time.perf_counter() - clock
        assert played.failures == {}, played.failures
        made = sum(len(c.token_ids) for o in played.outcomes for c in o.session.calls)
        return made, seconds

    through_manager(-1), through_gateway(-1)  # warm-up: weights' copies, the HTTP client
    rows, ratios = [], []
    for round_ in range(args.rounds):
        made_m, seconds_m = through_manager(round_)
        made_g, seconds_g = through_gateway(round_)
        ratios.append((made_g / seconds_g) / (made_m / seconds_m))
        rows.append(
            {
                "round": round_ + 1,
                "env_manager_tokens_per_s": made_m / seconds_m,
                "gateway_tokens_per_s": made_g / seconds_g,
                "env_manager_tokens": made_m,
                "gateway_tokens": made_g,
                "ratio": ratios[-1],
            }
        )
        print(
            f"round {round_ + 1}: env manager {made_m / seconds_m:.1f} tokens/s, gateway "
            f"{made_g / seconds_g:.1f}",
            file=sys.stderr,
        )
    ratio = statistics.median(ratios)
    print_table(
        ["round", "env manager tokens/s", "gateway tokens/s", "ratio"],
        [
            [
                str(r["round"]),
                f"{r['env_manager_tokens_per_s']:.1f}",
                f"{r['gateway_tokens_per_s']:.1f}",
                f"{r['ratio']:.2f}x",
            ]
            for r in rows
        ],
        f"{args.model}, {args.episodes} {ENV_ID} episodes of {args.turns} turns, "
        f"{torch.get_num_threads()} threads; median ratio {ratio:.2f}x "
        f"({'PASS' if ratio >= 0.9 else 'FAIL'} the >= 0.9x goal)",
    )

    gateway.close()
    engine.close()

    # 2. load: many agents calling at once
    engine, gateway = served(args.load_agents)
    latencies: list[float] = []
    counts: dict[str, Any] = {"sent": 0, "answered": 0, "errors": []}
    agent = looping_agent(args.load_seconds, args.load_reply_tokens, latencies, counts)
    episodes = AgentEpisodes(
        agent,
        ENV_ID,
        gateway,
        group_size=args.load_agents,
        concurrency=args.load_agents,
        deadline_s=args.load_seconds + 120,
        max_calls=None,
    )
    clock = time.perf_counter()
    played = episodes.play([0])
    seconds = time.perf_counter() - clock
    recorded = sum(o.calls for o in played.outcomes)
    lost = counts["sent"] - counts["answered"]
    quantiles = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
    load = {
        "agents": args.load_agents,
        "seconds": seconds,
        "calls_sent": counts["sent"],
        "calls_answered": counts["answered"],
        "calls_recorded": recorded,
        "calls_lost": lost,
        "errors": counts["errors"][:10],
        "agent_failures": played.failures,
        "latency_p50_s": quantiles[49],
        "latency_p90_s": quantiles[89],
        "latency_p99_s": quantiles[98],
        "calls_per_s": counts["answered"] / seconds,
    }
    print_table(
        ["agents", "calls sent", "answered", "recorded", "lost", "p50 s", "p99 s", "calls/s"],
        [
            [
                str(args.load_agents),
                str(counts["sent"]),
                str(counts["answered"]),
                str(recorded),
                str(lost),
                f"{load['latency_p50_s']:.3f}",
                f"{load['latency_p99_s']:.3f}",
                f"{load['calls_per_s']:.1f}",
            ]
        ],
        f"{args.load_agents} agents calling for {args.load_seconds:g} s, "
        f"{args.load_reply_tokens} tokens a reply ({'PASS' if lost == 0 else 'FAIL'}: 0 lost)",
    )
    gateway.close()
    engine.close()
    manager.close()
    report = {
        "settings": {k: v for k, v in vars(args).items() if k != "json"},
        "throughput": {"rounds": rows, "median_ratio": ratio},
        "load": load,
    }
    write_report(args.json, report, ("torch", "transformers", "openai", "fastapi", "uvicorn"))
    return 0 if lost == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
