"""Leaderboard eval speed: episodes/s of ``core-v0`` with our engine against HF ``generate``.

The workload is ``roll-agent eval --model smollm2-135m --suite core-v0`` itself: every
measurement is a call of ``trainer.evaluation.suite.evaluate_suite(parse_model(model), suite,
ResultStore(db), backend=..., batch_size=..., dtype=...)``, greedy, into a temporary SQLite
database of its arm, as the command makes it. The arms are our ``continuous`` engine (the
default: ``--batch-size`` episodes at once, each episode's next turn joining the running batch
as soon as its reply is done, weights in ``--dtype``) and HF ``generate`` (``backend="hf"``,
float32, the same episodes at once, turn by turn), in the same run.

The full ``core-v0`` is 2564 episodes, too many to play twice. By default each env of the suite
is played on a sample: a suite written to a temporary file with that env's kwargs, turn limit
and reset option from ``core-v0``, but only its first seeds: ``--per-env`` (32) with our engine,
and the first ``--hf-per-env`` (16) of them with HF (``--hf-cap ENV=N``: fewer where it is very
slow; the table says where). A sample smaller than twice the batch does not show our engine's
refilling the batch as episodes end, so its extrapolation errs long. Each env gets its own
``evaluate_suite`` calls, the two arms back to back, which goes first alternating from env to
env, so that other work on the machine falls on both alike. Each call's *CPU wait* (the share of
its wall time some task of the machine waited for a CPU, from Linux's ``/proc/pressure/cpu``)
shows where it did not: before each call the script waits (``--quiet-wait``) for other work to
end, and measures an env again (``--retries``) when it was disturbed anyway, keeping the quieter
pair.

Per env it reports each arm's episodes/s and the ratio ours/HF, with the mean turns, prompt and
reply tokens and solved episodes of each arm (why envs differ; greedy, the arms should play
alike), and the **extrapolated wall time of the full core-v0 eval** with our engine: the sum
over envs of the env's seed count in ``core-v0`` over its measured episodes/s, plus one fixed
cost (loading the model and hashing its weights, which ``evaluate_suite`` does before it plays;
measured per call, the median taken). The "all" row weighs envs as the suite does: its episodes
over the extrapolated time. An env's time runs from the eval's start in the store to its last
stored chunk: making the envs, playing, and writing to the store. A fresh engine per env warms
up once per env (the full eval's once), so the extrapolation errs long, the more so with a
sample smaller than a chunk.

**The compute floor**: every token the model runs passes through all its weight matrices (the
output head included), ``2 x matrix parameters`` floating-point operations a token. Per env,
the sample's tokens an episode x the env's seeds in ``core-v0``, summed, times that, over the
best matrix-product speed measured on this machine in the same run (float32 and bfloat16, a
large square product and the decode step's shape, ``--batch-size`` rows), is a time the eval
cannot go below with this model on this CPU. Two counts: the reply tokens alone, and each
episode's whole context once (its last prompt and last reply: every earlier turn is a prefix of
it when the prompt holds the whole episode, and prefix reuse could at best run it once).
Attention, sampling and the envs are not counted.

``--full`` plays the whole ``core-v0`` in one call with our engine only and reports the real
wall time (it writes ``eval_throughput_full.json`` unless ``--json`` says otherwise; check the
extrapolation of a sample run first).

Run (from the repository root)::

    python benchmarks/eval_throughput.py --quick     # 4 seeds of 3 envs, ~2 min + 6 loads
    python benchmarks/eval_throughput.py             # 32 (HF: 16) seeds of each env
    python benchmarks/eval_throughput.py --per-env 16 --hf-cap WebShop-v0=8
    python benchmarks/eval_throughput.py --full      # all 2564 episodes, our engine only

It prints a table and writes every number to JSON; it always exits 0 once it has measured.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import yaml
from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

from leaderboard.store import ResultStore
from leaderboard.suites import Suite, load_suite
from trainer.evaluation.suite import evaluate_suite, parse_model
from trainer.models import model_config

OURS, BASELINE = "continuous", "hf"
LABELS = {OURS: "ours", BASELINE: "HF generate"}
QUICK_ENVS = "SimpleSokoban-v0,FrozenLake-v0,MathVerify-v0"
#: a call whose CPU wait is above this shared the CPUs with other work: measured again
NOISY_WAIT = 0.2
_PRESSURE = Path("/proc/pressure/cpu")


def env_seconds(
    started: float, stored: Sequence[tuple[str, float]], env_ids: Sequence[str]
) -> dict[str, float]:
    """Per env, from the end of the previous env's last chunk (or the eval's start) to the end
    of its own; ``stored`` holds (env id, when a chunk of it was stored)."""
    seconds: dict[str, float] = {}
    previous = started
    for env_id in env_ids:
        ends = [at for stored_env, at in stored if stored_env == env_id]
        if ends:
            seconds[env_id] = max(ends) - previous
            previous = max(ends)
    return seconds


def _cpu_pressure() -> dict[str, float] | None:
    """Linux's CPU pressure (``some``: a task waited for a CPU), or ``None`` where the kernel
    does not say. Other work on the machine shows up here."""
    try:
        some = _PRESSURE.read_text().splitlines()[0]
    except (OSError, IndexError):
        return None
    return {k: float(v) for k, v in (field.split("=") for field in some.split()[1:])}


def cpu_wait_us() -> int | None:
    """Microseconds some task of the machine waited for a CPU since boot, or ``None``."""
    pressure = _cpu_pressure()
    return None if pressure is None else int(pressure["total"])


def wait_for_quiet(limit_s: float, threshold: float = 10.0) -> float:
    """Waits (at most ``limit_s``) until tasks waited for a CPU less than ``threshold`` percent
    of the last 10 s, so that a measurement does not start amid other work; returns the seconds
    waited."""
    started = time.monotonic()
    said = False
    while (pressure := _cpu_pressure()) is not None and pressure["avg10"] >= threshold:
        waited = time.monotonic() - started
        if waited >= limit_s:
            print(f"  the CPUs are still busy after {waited:.0f} s: measuring anyway", flush=True)
            break
        if not said:
            print(
                f"  other work is using the CPUs (tasks waited {pressure['avg10']:.0f}% of the "
                f"last 10 s): waiting up to {limit_s:.0f} s for it to end",
                flush=True,
            )
            said = True
        time.sleep(5)
    return time.monotonic() - started


def sample_suite(suite: Suite, per_env: dict[str, int], folder: Path, name: str) -> Suite:
    """``suite`` with only the first ``per_env[env id]`` seeds of the envs named there, written
    to ``folder`` and read back as a suite (same kwargs, turn limits and reset options)."""
    envs = []
    for env in suite.envs:
        if env.id not in per_env:
            continue
        entry: dict[str, Any] = {"id": env.id, "seeds": list(env.seeds[: per_env[env.id]])}
        if env.kwargs:
            entry["kwargs"] = dict(env.kwargs)
        if env.max_turns is not None:
            entry["max_turns"] = env.max_turns
        if env.reset_option is not None:
            entry["reset_option"] = env.reset_option
        envs.append(entry)
    data = {
        "name": f"{suite.name}-sample-{name}",
        "version": suite.version,
        "description": f"the first seeds of envs of {suite.label}, for eval_throughput.py",
        "envs": envs,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_suite(path)


def run_eval(args: argparse.Namespace, backend: str, suite: Suite, db: Path) -> dict:
    """One ``evaluate_suite`` call with ``backend`` into the store at ``db``; per-env figures.

    Returns:
        ``fixed_s`` (the call's time before it starts playing: loading the model, hashing its
        weights), ``wall_s`` (the whole call), ``cpu_wait`` (the share of the call some task
        of the machine waited for a CPU) and per env its episodes, seconds and tokens.
    """
    label = LABELS[backend]
    started: list[float] = []  # when the eval is in the store, after the model's load
    eval_ids: list[int] = []
    stored: list[tuple[str, float]] = []  # (env id, when a chunk of it was stored)

    def on_start(eval_id: int, stored_before: int) -> None:
        started.append(time.perf_counter())
        eval_ids.append(eval_id)

    def progress(env_id: str, done: int) -> None:
        stored.append((env_id, time.perf_counter()))
        if args.full:
            print(f"  {label}: {done} of {suite.episodes} episodes stored ({env_id})", flush=True)

    waited = cpu_wait_us()
    called = time.perf_counter()
    with ResultStore(db) as store:
        outcome = evaluate_suite(
            parse_model(args.model),
            suite,
            store,
            temperature=0.0,
            max_new_tokens=args.max_new_tokens,
            chunk=args.chunk,
            batch_size=args.batch_size,
            dtype=args.dtype if backend == OURS else "float32",
            force=True,
            backend=backend,
            command=shlex.join(["benchmarks/eval_throughput.py", f"--backend={backend}"]),
            progress=progress,
            on_start=on_start,
        )
        finished = time.perf_counter()
        context = {env.id: context_tokens(store, eval_ids[0], env.id) for env in suite.envs}
    (eval_started,) = started  # force=True: the eval always starts, once
    seconds = env_seconds(eval_started, stored, [env.id for env in suite.envs])
    waited_after = cpu_wait_us()
    cpu_wait = None
    if waited is not None and waited_after is not None:
        cpu_wait = (waited_after - waited) / 1e6 / (finished - called)
    envs = {}
    for env in suite.envs:
        result = outcome.row.results[env.id]
        n = result.episodes
        envs[env.id] = {
            "episodes": n,
            "seconds": seconds[env.id],
            "episodes_per_s": n / seconds[env.id],
            "play_seconds": result.wall_s,  # the chunks' play alone (no env set-up, no store)
            "mean_turns": result.mean_turns,
            "prompt_tokens_per_episode": result.prompt_tokens / n,
            "reply_tokens_per_episode": result.reply_tokens / n,
            "context_tokens_per_episode": context[env.id] / n,
            "reply_tokens_per_s": result.reply_tokens / seconds[env.id],
            "successes": result.successes,
            "success_rate": result.success_rate,
            "mean_return": result.mean_return,
        }
    return {
        "backend": backend,
        "episodes": outcome.played,
        "wall_s": finished - called,
        "fixed_s": eval_started - called,
        "play_s": finished - eval_started,
        "cpu_wait": cpu_wait,
        "envs": envs,
    }


def context_tokens(store: ResultStore, eval_id: int, env_id: str) -> int:
    """Tokens the model had to run at least once over an env's episodes: each episode's last
    prompt and last reply (the whole episode, where the prompt holds it), or all its reply
    tokens if more."""
    total = 0
    for summary in store.episodes(eval_id, env_id):
        record = store.episode(summary.episode_id)
        last = record.turns[-1] if record.turns else None
        final = last.prompt_tokens + last.reply_tokens if last is not None else 0
        total += max(final, record.reply_tokens)
    return total


def matrix_parameters(config: Any) -> int:
    """Parameters a token's forward multiplies by, from a decoder's Hugging Face ``config``:
    every linear layer of every layer and the output head (the embedding is a lookup; norms
    are vectors)."""
    hidden, inter = config.hidden_size, config.intermediate_size
    head_dim = getattr(config, "head_dim", None) or hidden // config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    attention = 2 * hidden * config.num_attention_heads * head_dim  # q and o
    attention += 2 * hidden * kv_heads * head_dim  # k and v
    per_layer = attention + 3 * hidden * inter  # gate, up, down
    return config.num_hidden_layers * per_layer + config.vocab_size * hidden


def best_matmul_gflops(rows: int, hidden: int, inter: int, budget_s: float = 1.0) -> dict:
    """GFLOP/s of ``F.linear`` at this process's torch threads: float32 on a 2048-square
    product and on the decode step's ``rows x hidden -> inter``; bfloat16 on the latter."""
    import torch.nn.functional as F  # noqa: N812

    shapes = {
        "float32 2048x2048x2048": (2048, 2048, 2048, torch.float32),
        f"float32 {rows}x{hidden}x{inter}": (rows, hidden, inter, torch.float32),
        f"bfloat16 {rows}x{hidden}x{inter}": (rows, hidden, inter, torch.bfloat16),
    }
    speeds = {}
    for label, (m, k, n, dtype) in shapes.items():
        x, w = torch.randn(m, k).to(dtype), torch.randn(n, k).to(dtype)
        F.linear(x, w)  # warm-up
        count, clock = 0, time.perf_counter()
        while time.perf_counter() - clock < budget_s:
            F.linear(x, w)
            count += 1
        speeds[label] = 2 * m * k * n * count / (time.perf_counter() - clock) / 1e9
    return speeds


def parse_caps(text: str, parser: argparse.ArgumentParser) -> dict[str, int]:
    caps = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        env_id, _, count = item.partition("=")
        if not count.isdigit() or int(count) < 1:
            parser.error(f"--hf-cap {item!r}: write ENV=N with N >= 1")
        caps[env_id.strip()] = int(count)
    return caps


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line: this benchmark's flags, ``--json`` and ``--quick``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m", help="what plays (smollm2-135m)")
    parser.add_argument("--suite", default="core-v0", help="the suite sampled (core-v0)")
    parser.add_argument(
        "--per-env",
        type=int,
        default=32,
        help="our engine plays the first N seeds of each env (32)",
    )
    parser.add_argument(
        "--hf-per-env", type=int, default=16, help="HF generate plays the first N of those (16)"
    )
    parser.add_argument(
        "--envs", default="", help="comma-separated env ids to play (default: every env)"
    )
    parser.add_argument(
        "--hf-cap",
        default="",
        metavar="ENV=N,...",
        help="HF generate plays only the first N seeds of ENV (where it is very slow)",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=64,
        help="episodes played at once (64, roll-agent eval's)",
    )
    parser.add_argument(
        "--dtype",
        choices=["float32", "bfloat16"],
        default="float32",
        help="our engine's weights and cache (float32, roll-agent eval's; HF: float32)",
    )
    parser.add_argument(
        "--chunk", type=int, default=32, help="finished episodes stored together (32)"
    )
    parser.add_argument("--max-new-tokens", type=int, default=64, help="reply limit (64)")
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=600,
        metavar="SECONDS",
        help="before each measurement, wait up to this long for other work on the CPUs to end "
        "(600; 0: never wait)",
    )
    parser.add_argument(
        "--retries",
        type=int,
        default=1,
        help="measure an env's two arms again when tasks waited for a CPU over "
        f"{NOISY_WAIT * 100:.0f}%% of a call's time: other work competed (1)",
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help="play the whole suite with our engine only and report the real wall time "
        "(long: see the extrapolation of a default run first)",
    )
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "eval_throughput.json",
        quick=f"4 seeds of {QUICK_ENVS}, about 2 minutes plus 6 model loads",
    )
    quick = {"per_env": 4, "hf_per_env": 4, "envs": QUICK_ENVS, "quiet_wait": 60.0, "retries": 0}
    args = parse_arguments(parser, argv, quick)
    if args.full and args.json == parser.get_default("json"):
        args.json = RESULTS_DIR / "eval_throughput_full.json"
    args.hf_cap = parse_caps(args.hf_cap, parser)
    if min(args.per_env, args.hf_per_env, args.chunk, args.batch_size) < 1 or args.retries < 0:
        parser.error(
            "--per-env, --hf-per-env, --chunk and --batch-size must be >= 1, --retries >= 0"
        )
    return args


def measure_sample(
    args: argparse.Namespace, suite: Suite, env_ids: list[str], folder: Path
) -> dict[str, dict]:
    """Per env, both arms back to back (which goes first alternates), each its own
    ``evaluate_suite`` call on a one-env suite of that env's first seeds."""
    per_arm: dict[str, dict] = {OURS: {}, BASELINE: {}}
    counts = {env.id: len(env.seeds) for env in suite.envs}
    for index, env_id in enumerate(env_ids):
        n = min(args.per_env, counts[env_id])
        seeds = {OURS: n, BASELINE: min(n, args.hf_per_env, args.hf_cap.get(env_id, n))}
        attempts: list[dict[str, dict]] = []
        for attempt in range(1 + args.retries):
            pair = {}
            for backend in (OURS, BASELINE) if index % 2 == 0 else (BASELINE, OURS):
                waited = wait_for_quiet(args.quiet_wait)
                one = sample_suite(suite, {env_id: seeds[backend]}, folder, f"{index}-{backend}")
                run = run_eval(args, backend, one, folder / f"{backend}.db")
                env = run["envs"][env_id]
                pair[backend] = {
                    **env,
                    **{k: run[k] for k in ("fixed_s", "wall_s", "cpu_wait")},
                    "waited_for_quiet_s": waited,
                }
                wait = "" if run["cpu_wait"] is None else f", CPU wait {run['cpu_wait']:.0%}"
                print(
                    f"  [{index + 1}/{len(env_ids)}] {env_id}, {LABELS[backend]}: "
                    f"{env['episodes']} episodes in {env['seconds']:.1f} s "
                    f"({env['episodes_per_s']:.3f} episodes/s; load {run['fixed_s']:.0f} s{wait})",
                    flush=True,
                )
            attempts.append(pair)
            worst = _worst_wait(pair)
            if worst <= NOISY_WAIT or attempt == args.retries:
                break
            print(
                f"  {env_id}: other work competed for the CPUs ({worst:.0%} wait): measuring "
                "both arms again",
                flush=True,
            )
        best = min(attempts, key=_worst_wait)
        for backend, figures in best.items():
            discarded = [a[backend] for a in attempts if a is not best]
            per_arm[backend][env_id] = {**figures, "discarded_noisy_attempts": discarded}
    return per_arm


def _worst_wait(pair: dict[str, dict]) -> float:
    return max((arm["cpu_wait"] or 0.0) for arm in pair.values())


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    suite = load_suite(args.suite)
    wanted = [e.strip() for e in args.envs.split(",") if e.strip()] or [e.id for e in suite.envs]
    unknown = sorted(set(wanted) - {env.id for env in suite.envs})
    if unknown:
        raise SystemExit(f"--envs: {suite.label} has no env {', '.join(unknown)}")
    full_counts = {env.id: len(env.seeds) for env in suite.envs}
    env_ids = [env.id for env in suite.envs if env.id in wanted]  # the suite's order
    scope_episodes = sum(full_counts[e] for e in env_ids)
    sample = "all seeds"
    if not args.full:
        sample = f"the first {args.per_env} seeds of each env (HF: {args.hf_per_env})"
    print(
        f"{args.model}, {suite.label} ({', '.join(env_ids)}): {sample}, batch {args.batch_size}, "
        f"greedy, at most {args.max_new_tokens} new tokens, torch threads "
        f"{torch.get_num_threads()}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="eval_throughput-") as tmp:
        folder = Path(tmp)
        if args.full:
            wait_for_quiet(args.quiet_wait)
            whole = len(env_ids) == len(suite.envs)
            subset = {e: full_counts[e] for e in env_ids}
            played = suite if whole else sample_suite(suite, subset, folder, "full")
            run = run_eval(args, OURS, played, folder / "full.db")
            per_arm = {
                OURS: {
                    e: {**env, "fixed_s": run["fixed_s"], "cpu_wait": run["cpu_wait"]}
                    for e, env in run["envs"].items()
                }
            }
        else:
            run = None
            per_arm = measure_sample(args, suite, env_ids, folder)

    arms = list(per_arm)
    rows, per_env_report = [], {}
    full_s = {backend: {} for backend in arms}  # per env: its core-v0 seeds / its episodes/s
    for env_id in env_ids:
        figures = [per_arm[backend][env_id] for backend in arms]
        entry: dict[str, Any] = {"seeds_in_suite": full_counts[env_id]}
        for backend, env in zip(arms, figures, strict=True):
            entry[backend] = env
            full_s[backend][env_id] = full_counts[env_id] / env["episodes_per_s"]
            entry[f"extrapolated_full_s_{backend}"] = full_s[backend][env_id]
        capped = False
        if BASELINE in per_arm:
            ours, hf = per_arm[OURS][env_id], per_arm[BASELINE][env_id]
            entry["ratio_ours_vs_hf"] = ours["episodes_per_s"] / hf["episodes_per_s"]
            capped = entry["hf_capped"] = env_id in args.hf_cap
        per_env_report[env_id] = entry

        def both(key: str, fmt: str, figures: list[dict] = figures) -> str:
            return " / ".join("?" if env[key] is None else format(env[key], fmt) for env in figures)

        row = [
            env_id,
            f"{full_counts[env_id]}",
            both("episodes", "d") + (" (HF capped)" if capped else ""),
            both("mean_turns", ".1f"),
            both("prompt_tokens_per_episode", ",.0f"),
            both("reply_tokens_per_episode", ".0f"),
            both("successes", "d"),
            both("cpu_wait", ".0%"),
            f"{per_arm[OURS][env_id]['episodes_per_s']:.3f}",
        ]
        if BASELINE in per_arm:
            row += [
                f"{per_arm[BASELINE][env_id]['episodes_per_s']:.3f}",
                f"{entry['ratio_ours_vs_hf']:.2f}x",
            ]
        row.append(f"{full_s[OURS][env_id] / 60:.1f}")
        rows.append(row)

    # the fixed cost (model load, weights hash) once per eval: the median of the calls'
    fixed = {b: statistics.median(per_arm[b][e]["fixed_s"] for e in env_ids) for b in arms}
    minutes = {b: (sum(full_s[b].values()) + fixed[b]) / 60 for b in arms}
    # over the whole suite: its episodes / the time the extrapolation gives them (no fixed cost)
    rate = {b: scope_episodes / sum(full_s[b].values()) for b in arms}
    total = ["all" + ("" if args.full else " (suite-weighted)"), f"{scope_episodes}"]
    total += [" / ".join(f"{sum(per_arm[b][e]['episodes'] for e in env_ids)}" for b in arms)]
    total += ["", "", "", "", "", f"{rate[OURS]:.3f}"]
    summary: dict[str, Any] = {
        "episodes": scope_episodes,
        "fixed_s": fixed,
        "episodes_per_s": rate,
        "full_minutes": minutes,
    }
    if BASELINE in per_arm:
        summary["ratio_ours_vs_hf"] = rate[OURS] / rate[BASELINE]
        summary["ratio_ours_vs_hf_median_env"] = statistics.median(
            per_env_report[e]["ratio_ours_vs_hf"] for e in env_ids
        )
        total += [f"{rate[BASELINE]:.3f}", f"{summary['ratio_ours_vs_hf']:.2f}x"]
    total.append(f"{minutes[OURS]:.1f}")
    rows.append(total)

    arm_text = " / ".join("ours" if b == OURS else "HF" for b in arms)
    header = [
        "env",
        "seeds in suite",
        f"episodes ({arm_text})",
        f"turns/ep ({arm_text})",
        f"prompt tok/ep ({arm_text})",
        f"reply tok/ep ({arm_text})",
        f"solved ({arm_text})",
        f"CPU wait ({arm_text})",
        "ours ep/s",
    ]
    if BASELINE in per_arm:
        header += ["HF ep/s", "ours/HF"]
    header.append("full suite, ours (min)" if not args.full else "ours (min)")
    title = f"{suite.label} eval with {args.model}, episodes/s: our engine" + (
        "" if args.full else " vs HF generate (same run, each env back to back)"
    )
    print_table(header, rows, title)

    scope = f"the full {suite.label} eval ({suite.episodes} episodes)"
    if len(env_ids) < len(suite.envs):
        scope = f"{suite.label}'s {', '.join(env_ids)} ({scope_episodes} of {suite.episodes})"
    summary["scope"] = scope
    print(
        "fixed cost of an eval (loading the model, hashing its weights): "
        + ", ".join(f"{LABELS[b]} {fixed[b]:.0f} s" for b in arms)
    )
    if args.full:
        assert run is not None
        summary["measured_wall_minutes"] = run["wall_s"] / 60
        print(f"measured wall time of {scope} with our engine: {run['wall_s'] / 60:.1f} min")
    else:
        print(
            f"extrapolated wall time of {scope} with our engine: {minutes[OURS]:.1f} min "
            f"(HF generate: {minutes[BASELINE]:.1f} min); ours/HF over the suite "
            f"{summary['ratio_ours_vs_hf']:.2f}x"
        )
        if args.hf_per_env < args.per_env:
            print(
                f"HF generate played the first {args.hf_per_env} of the seeds our engine "
                "played (--hf-per-env), all of them in one batch: a smaller batch than ours"
            )
        capped_envs = [e for e in env_ids if per_env_report[e]["hf_capped"]]
        if capped_envs:
            print(
                f"HF generate played fewer seeds on {', '.join(capped_envs)} (--hf-cap, it is "
                "slow there): its episodes/s there come from fewer, smaller batches"
            )
        if args.per_env < 2 * args.batch_size:
            print(
                f"the sample plays {args.per_env} episodes an env, fewer than twice the batch "
                f"({args.batch_size}): the extrapolation errs long (the full eval keeps its "
                "batch full as episodes end)"
            )
    config = model_config(args.model)
    speeds = best_matmul_gflops(args.batch_size, config.hidden_size, config.intermediate_size)
    peak = max(speeds.values())
    weights = matrix_parameters(config)

    def over_suite(key: str) -> float:  # an episode's figure x the env's seeds, summed
        return sum(per_arm[OURS][e][key] * full_counts[e] for e in env_ids)

    tokens = {"reply": over_suite("reply_tokens_per_episode")}
    tokens["context"] = over_suite("context_tokens_per_episode")
    floor = {k: 2 * weights * n / (peak * 1e9) / 60 for k, n in tokens.items()}
    summary["floor"] = {
        "matrix_parameters": weights,
        "tokens": tokens,
        "matmul_gflops": speeds,
        "minutes": floor,
    }
    print(
        f"compute floor of {scope}, each token x 2 x {weights / 1e6:.1f} M matrix parameters "
        f"at this machine's best matrix product in this run, {peak:.0f} GFLOP/s ("
        + ", ".join(f"{k}: {v:.1f}" for k, v in speeds.items())
        + f"): the reply tokens alone ({tokens['reply'] / 1e6:.2f} M) {floor['reply']:.0f} "
        f"min; every episode's whole context, prompts and replies, once "
        f"({tokens['context'] / 1e6:.2f} M tokens) {floor['context']:.0f} min; attention, "
        "sampling and the envs not counted"
    )
    waits = [per_arm[b][e]["cpu_wait"] for b in arms for e in env_ids]
    if any(w is not None and w > NOISY_WAIT for w in waits):
        print(
            f"note: other work competed for the CPUs during some calls (CPU wait above "
            f"{NOISY_WAIT:.0%}): "
            "their episodes/s are low, and the ratio of that env is noisy"
        )
    report = {
        "model": args.model,
        "suite": suite.label,
        "suite_episodes": suite.episodes,
        "mode": "full" if args.full else "sample",
        "envs_played": env_ids,
        "per_env": None if args.full else args.per_env,
        "hf_per_env": None if args.full else args.hf_per_env,
        "noisy_cpu_wait": NOISY_WAIT,
        "hf_cap": args.hf_cap,
        "chunk": args.chunk,
        "batch_size": args.batch_size,
        "dtype": args.dtype,
        "max_new_tokens": args.max_new_tokens,
        "temperature": 0.0,
        "torch_threads": torch.get_num_threads(),
        "envs": per_env_report,
        "summary": summary,
    }
    write_report(args.json, report, ("torch", "transformers"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
