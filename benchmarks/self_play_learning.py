"""What a self-play run learned: matches against fixed players at its start and end, and the
ratings of its checkpoints over the run.

It reads a finished run of the ``tictactoe-self-play`` preset (or any ``env.self_play`` run)::

    roll-agent train --env tictactoe-self-play          # one hour: runs/tictactoe-self-play

and measures it in two ways:

1. **Matches.** The model before training (the run's ``model.name``) and the run's last
   checkpoint (and, with ``--with-warm-start``, the warm start's last checkpoint) play
   ``--games`` greedy games in each seat against a random player and against the game's
   solver (what ``roll-agent eval --env tictactoe-self-play --model M --episodes N`` prints).
   The goal, over ``--games`` games in each seat: no loss to the random player in either seat,
   and at least half the games against the solver drawn (or won) as the first player.
2. **Ratings.** The model before training, the warm start's last checkpoint and every RL
   checkpoint meet the random player, the solver and each other in a round robin
   (``roll-agent leaderboard rate`` with ``--rate-games`` games a pair), into a database of
   its own beside the JSON; each player's OpenSkill rating (mu, sigma) is reported against
   the run minute its checkpoint was saved (0 for the model before training).

Each model's matches are written to the JSON as soon as they end, and a rerun skips those
already there: an interrupted measurement resumes. The PNG beside the JSON shows the run's own
evaluations (16 games a seat, every 15 minutes) and the ratings over the run.

Run (from the repository root)::

    python benchmarks/self_play_learning.py --quick   # trains a tiny random model for 1 step
    python benchmarks/self_play_learning.py           # runs/tictactoe-self-play, ~30 minutes
    python benchmarks/self_play_learning.py --with-warm-start
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

from trainer.config import Config, build_config
from trainer.evaluation.held_out import evaluate_model

QUICK = {"games": 2, "rate_games": 1}
OPPONENTS = ("random", "solver")
OUTCOMES = ("win", "draw", "loss")
GOAL_DRAWS_AS_FIRST = 0.5


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, help="the run folder (default: the preset's)")
    parser.add_argument("--games", type=int, default=200, help="games a seat and opponent (200)")
    parser.add_argument(
        "--rate-games", type=int, default=4, help="round robin: games per ordered pair (4)"
    )
    parser.add_argument(
        "--with-warm-start",
        action="store_true",
        help="also match the warm start's last checkpoint (about 14 more minutes)",
    )
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "self_play_tictactoe.json",
        quick="a tiny random model trained for one step, 2 games a seat",
    )
    return parse_arguments(parser, argv, QUICK)


def quick_run(folder: Path) -> Path:
    """One self-play step of the tiny random model in ``folder``, with its warm start."""
    command = [
        sys.executable, "-m", "trainer.cli", "train", "--env", "tictactoe-self-play",
        "--model", "tiny-random", "--output", str(folder), "--steps", "1",
        "--set", "sft.max_minutes=0.2", "--set", "train.eval_before=false",
        "--set", "train.eval_every_minutes=null", "--set", "env.groups_per_step=1",
        "--set", "env.group_size=2", "--set", "train.checkpoint_every=1",
        "--set", "model.trainable_layers=null", "--set", "sampling.max_new_tokens=4",
    ]  # fmt: skip
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return folder


def checkpoints(run: Path) -> list[dict[str, Any]]:
    """The run's finished checkpoints, warm start first: folder, phase, step, run minute."""
    found = []
    for phase, parent in (("warm start", run / "sft" / "checkpoints"), ("rl", run / "checkpoints")):
        for folder in parent.glob("step-*"):
            if not (folder / "COMPLETE").exists():
                continue  # an interrupted save: never trusted
            if phase == "warm start":
                elapsed = json.loads((folder / "sft_state.json").read_text())["run_elapsed_s"]
            else:
                state = torch.load(folder / "trainer_state.pt", weights_only=False)
                elapsed = state["run_elapsed_s"]
            step = int(folder.name.removeprefix("step-"))
            saved = (folder / "COMPLETE").stat().st_mtime
            found.append(
                {"model": str(folder / "model"), "phase": phase, "step": step,
                 "minute": elapsed / 60, "saved": saved}
            )  # fmt: skip
    return sorted(found, key=lambda c: (c["phase"] != "warm start", c["step"]))


def run_config(run: Path) -> Config:
    """The run's configuration, as its last RL checkpoint saved it."""
    saved = sorted(
        (run / "checkpoints").glob("step-*/config.json"), key=lambda p: p.stat().st_mtime
    )
    if not saved:
        raise SystemExit(f"{run} has no RL checkpoint: train it first (see --help)")
    return build_config(
        _set_fields(json.loads(saved[-1].read_text()), build_config({}).model_dump())
    )


def _set_fields(tree: Any, defaults: Any) -> Any:
    """The fields of a saved config that differ from the defaults (a saved config lists them
    all, and some are options of settings not chosen)."""
    if not isinstance(tree, dict) or not isinstance(defaults, dict):
        return tree
    return {
        key: _set_fields(value, defaults.get(key))
        for key, value in tree.items()
        if key not in defaults or value != defaults[key]
    }


def play_matches(config: Config, model: str, games: int, folder: Path) -> dict[str, Any]:
    """``games`` greedy games of ``model`` in each seat against each fixed player."""
    tree = _set_fields(config.model_dump(), build_config({}).model_dump())
    tree.setdefault("model", {})["name"] = model
    tree.setdefault("train", {})["output_dir"] = str(folder)
    metrics = evaluate_model(build_config(tree), games)
    return {
        f"{opponent}/{seat}": {o: metrics[f"eval/{opponent}/{seat}/{o}"] for o in OUTCOMES}
        for opponent in OPPONENTS
        for seat in ("player_0", "player_1")
        if f"eval/{opponent}/{seat}/win" in metrics
    }


def goal(matches: dict[str, Any]) -> dict[str, Any]:
    """The goal's two parts on one model's matches."""
    losses = max(matches[f"random/{seat}"]["loss"] for seat in ("player_0", "player_1"))
    first = matches["solver/player_0"]
    not_lost = first["draw"] + first["win"]
    return {
        "most_losses_to_random": losses,
        "draws_or_wins_vs_solver_first": not_lost,
        "met": losses == 0 and not_lost >= GOAL_DRAWS_AS_FIRST,
    }


def rate(game: str, kwargs: dict[str, Any], players: list[str], games: int, db: Path) -> None:
    """``roll-agent leaderboard rate`` over ``players``, its table printed as it ends."""
    command = [
        sys.executable, "-m", "trainer.cli", "leaderboard", "rate", game, *players,
        "--games", str(games), "--kwargs", json.dumps(kwargs), "--db", str(db),
    ]  # fmt: skip
    subprocess.run(command, check=True)


def ratings_of(db: Path, game: str) -> dict[str, dict[str, float]]:
    from leaderboard.store import ResultStore

    with ResultStore(db) as store:
        return {
            r.player: {"mu": r.mu, "sigma": r.sigma, "games": r.games} for r in store.ratings(game)
        }


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    points = report["run_evaluations"]
    minutes = [p["minutes"] for p in points]
    for key, label in (
        ("eval/random/player_0/loss", "loses to random, first"),
        ("eval/random/player_1/loss", "loses to random, second"),
        ("eval/solver/player_0/draw", "draws the solver, first"),
        ("eval/solver/player_1/draw", "draws the solver, second"),
    ):
        left.plot(minutes, [p.get(key, float("nan")) for p in points], marker="o", label=label)
    left.set(xlabel="run minute", ylabel="share of games", title="the run's evaluations")
    left.legend(fontsize=8)
    rated = [c for c in report["checkpoints"] if "rating" in c]
    if rated:
        right.errorbar(
            [c["minute"] for c in rated],
            [c["rating"]["mu"] for c in rated],
            yerr=[2 * c["rating"]["sigma"] for c in rated],
            marker="o",
            capsize=3,
            label="checkpoints (mu +- 2 sigma)",
        )
        for name, style in (("random", ":"), ("solver", "--")):
            if name in report["ratings"]:
                right.axhline(report["ratings"][name]["mu"], linestyle=style, label=name)
        right.set(xlabel="run minute", ylabel="OpenSkill mu", title="ratings over the run")
        right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    scratch = tempfile.TemporaryDirectory()
    run = args.run
    if run is None:
        run = (
            quick_run(Path(scratch.name) / "run")
            if args.quick
            else Path("runs/tictactoe-self-play")
        )
    config = run_config(run)
    found = checkpoints(run)
    warm = [c for c in found if c["phase"] == "warm start"]
    rl = [c for c in found if c["phase"] == "rl"]
    # a run is known by its folder and the times its checkpoints were saved: a new run in the
    # same folder (the preset's) is measured afresh, its ratings in a database of their own
    saves = {c["model"]: c["saved"] for c in found}
    report: dict[str, Any] = {}
    db = args.json.with_suffix(".db")
    if args.json.exists():
        report = json.loads(args.json.read_text()).get("figures", {})
        same_run = report.get("run") == str(run) and report.get("saves") == saves
        if not same_run or report.get("games") != args.games:
            report = {}  # another run's or another size's figures: start again
            db.unlink(missing_ok=True)
    report.update({"run": str(run), "game": config.env.id, "games": args.games, "saves": saves})
    report.setdefault("matches", {})
    evaluations = run / "evaluations.jsonl"
    told = evaluations.read_text().splitlines() if evaluations.exists() else []
    report["run_evaluations"] = [json.loads(line) for line in told]
    models = {"before training": config.model.name}
    if warm and args.with_warm_start:
        models["after the warm start"] = warm[-1]["model"]
    models["end of the run"] = rl[-1]["model"]
    for label, model in models.items():
        if label in report["matches"]:
            continue
        print(f"{label}: {model}, {args.games} games a seat against {', '.join(OPPONENTS)}...")
        with tempfile.TemporaryDirectory() as folder:
            matches = play_matches(config, model, args.games, Path(folder))
        report["matches"][label] = {"model": model, "results": matches, "goal": goal(matches)}
        write_report(args.json, {"figures": report}, announce=False)
    rows = []
    for label, entry in report["matches"].items():
        for key, shares in entry["results"].items():
            rows.append([label, *key.split("/"), *(f"{100 * shares[o]:.1f}%" for o in OUTCOMES)])
    print_table(
        ["policy", "against", "seat", "win", "draw", "loss"],
        rows,
        f"{config.env.id}: greedy, {args.games} games a seat against each player",
        left_columns=3,
    )

    # the model before training stands at minute 0 of the run
    start = {"model": config.model.name, "phase": "before training", "step": 0, "minute": 0.0}
    rated = [start, *warm[-1:], *rl]
    players = ["random", "solver", *(c["model"] for c in rated)]
    if "ratings" not in report:
        print(f"round robin of {len(players)} players, {args.rate_games} games a pair...")
        rate(config.env.id, config.env.kwargs, players, args.rate_games, db)
        report["ratings"] = ratings_of(db, config.env.id)
        write_report(args.json, {"figures": report}, announce=False)
    report["checkpoints"] = rated
    for checkpoint in report["checkpoints"]:
        if checkpoint["model"] in report["ratings"]:
            checkpoint["rating"] = report["ratings"][checkpoint["model"]]
    rows = [
        [name, f"{r['mu']:.2f}", f"{r['mu'] - 2 * r['sigma']:.2f}..{r['mu'] + 2 * r['sigma']:.2f}"]
        for name, r in sorted(report["ratings"].items(), key=lambda item: -item[1]["mu"])
    ]
    print_table(
        ["player", "mu", "mu +- 2 sigma"],
        rows,
        f"ratings: a round robin of {args.rate_games} games a pair",
    )
    final = report["matches"]["end of the run"]["goal"]
    print(
        f"goal (end of the run, {args.games} games a seat): losses to random "
        f"{100 * final['most_losses_to_random']:.1f}% (0 wanted), draws or wins against the "
        f"solver as the first player {100 * final['draws_or_wins_vs_solver_first']:.1f}% "
        f"(>= {GOAL_DRAWS_AS_FIRST:.0%} wanted): {'PASS' if final['met'] else 'FAIL'}"
    )
    write_report(args.json, {"figures": report})
    plot(report, args.json.with_suffix(".png"))
    scratch.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
