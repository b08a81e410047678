"""Memory of a local Ray cluster running env manager actors.

Starts Ray on this machine (``ray.init``, as ``roll-agent`` does), launches ``--env-actors``
``EnvManagerActor`` actors with ``--envs-per-actor`` envs each and one ``GeneratorActor`` with
the tiny random model, plays one group per actor so every env exists, then sums the memory of
every process the driver started (Ray's own services and its workers), by role. RSS counts a
shared page once per process; PSS splits it between them, so PSS sums to what the machine holds.

Run (from the repository root)::

    python benchmarks/ray_memory.py
    python benchmarks/ray_memory.py --quick   # 2 env actors of 2 envs, well under a minute

It prints a table, the total against the goal (2.5 GB for Ray plus 8 env actors, the
generator's process left out), and writes JSON.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import psutil
from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

from trainer.generation import SamplingParams
from trainer.generation.actor import GeneratorActor
from trainer.rollout.env_actor import launch_env_managers
from trainer.rollout.scheduler import RolloutScheduler

GOAL_GB = 2.5
GOAL_ENV_ACTORS = 8  # the goal is for Ray plus this many env actors


def process_memory() -> list[dict]:
    """RSS and PSS of each process below this one, with a role from its command line."""
    rows = []
    for process in psutil.Process().children(recursive=True):
        try:
            info = process.memory_full_info()
            command = " ".join(process.cmdline())
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if "GeneratorActor" in command:
            role = "generator actor"
        elif "EnvManagerActor" in command:
            role = "env manager actor"
        elif "ray::" in command or "default_worker.py" in command:
            role = "idle Ray worker"
        else:
            role = "Ray services"
        rows.append({"pid": process.pid, "role": role, "rss": info.rss, "pss": info.pss})
    return rows


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line: this benchmark's flags, ``--json`` and ``--quick``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-actors", type=int, default=GOAL_ENV_ACTORS)
    parser.add_argument("--envs-per-actor", type=int, default=8)
    parser.add_argument("--env", default="Sokoban-v0")
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "ray_memory.json",
        quick="2 env actors of 2 envs (the goal is for 8 actors)",
    )
    return parse_arguments(parser, argv, {"env_actors": 2, "envs_per_actor": 2})


def main(argv: Sequence[str] | None = None) -> int:
    import ray

    args = parse_args(argv)

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        server = (
            ray.remote(num_cpus=0)(GeneratorActor)
            .options(name="GeneratorActor")
            .remote("tiny-random")
        )
        actors = launch_env_managers(
            args.env_actors,
            args.env,
            "tiny-random",
            server,
            num_cpus=1 / args.env_actors,
            max_envs=args.envs_per_actor,
            max_turns=2,
            sampling=SamplingParams(max_new_tokens=4),
        )
        scheduler = RolloutScheduler(actors, group_size=args.envs_per_actor)
        scheduler.rollout(list(range(args.env_actors)))  # every actor makes its envs
        rows = process_memory()
    finally:
        ray.shutdown()

    by_role: dict[str, dict[str, float]] = {}
    for row in rows:
        entry = by_role.setdefault(row["role"], {"processes": 0, "rss": 0, "pss": 0})
        entry["processes"] += 1
        entry["rss"] += row["rss"]
        entry["pss"] += row["pss"]
    without_generator = {k: v for k, v in by_role.items() if k != "generator actor"}
    total_rss = sum(v["rss"] for v in without_generator.values()) / 1e9
    total_pss = sum(v["pss"] for v in without_generator.values()) / 1e9
    table = [
        [role, str(v["processes"]), f"{v['rss'] / 1e9:.2f}", f"{v['pss'] / 1e9:.2f}"]
        for role, v in sorted(by_role.items())
    ]
    table.append(["Ray + env actors (no generator)", "", f"{total_rss:.2f}", f"{total_pss:.2f}"])
    print_table(
        ["processes", "count", "RSS GB", "PSS GB"],
        table,
        f"Local Ray with {args.env_actors} env actors x {args.envs_per_actor} envs",
        left_columns=1,
    )
    report = {
        "env_actors": args.env_actors,
        "envs_per_actor": args.envs_per_actor,
        "by_role": by_role,
        "total_rss_gb_without_generator": total_rss,
        "total_pss_gb_without_generator": total_pss,
        "goal_gb": GOAL_GB,
    }
    write_report(args.json, report, ("ray", "torch"))
    verdict = "PASS" if total_rss < GOAL_GB else "FAIL"
    if args.env_actors != GOAL_ENV_ACTORS:
        verdict += f" (the goal is for {GOAL_ENV_ACTORS} env actors)"
    print(
        f"RSS of Ray + {args.env_actors} env actors: {total_rss:.2f} GB (goal < {GOAL_GB}): "
        f"{verdict}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
