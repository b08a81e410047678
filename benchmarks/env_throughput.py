"""Throughput of rollenv's Sokoban and FrozenLake envs next to the peer libraries.

What is measured, for every Sokoban and FrozenLake id in ``rollenv.registry`` and, at the
settings they share with rollenv, for three peers (gym-sokoban 0.0.6, GEM 0.1.0, TextArena 0.7.4):

* **resets/s, p50 and p99 reset latency**: ``reset`` with seeds ``0..N-1``, each call timed on
  its own with ``time.perf_counter``; resets/s is ``N / sum(latencies)``. A reset includes
  producing the first text observation.
* **steps/s with text**: random valid moves (pre-generated before the clock starts), resetting
  whenever an episode ends. Only the step calls are timed, never the resets between episodes.
  Each step includes producing the text an LLM agent would read; for a peer whose step returns
  something else, the adapter's own text rendering is inside the timed call.

Each figure is the median over ``--repeats`` runs (each run re-uses the same seeds).

How each peer is driven (the way an LLM trainer would drive it):

* gym-sokoban (the generator RAGEN and ROLL build on): ``SokobanEnv(dim_room, num_boxes,
  max_steps=100)``; seeded like RAGEN does (Python's and numpy's global RNGs), then
  ``env.reset()``; its ``room_state`` grid is rendered to characters with RAGEN's vocabulary.
  Its ``reset`` and ``step`` always also render a 16-px-per-cell RGB frame (the library offers no
  way to skip it), which is part of the timed call.
* GEM: ``gem.make("game:Sokoban-v0-easy", dim_room=..., num_boxes=..., max_turns=100)``; the text
  is the returned observation plus ``info["suffix"]`` (the board), as GEM's own wrapper joins
  them. GEM 0.1.0 has no FrozenLake.
* TextArena: the *raw* envs (``Sokoban-v0-raw``, ``FrozenLake-v0-raw``). Its default wrappers
  (``LLMObservationWrapper`` and the ``-train`` ones) keep every message of every episode and
  never clear them on reset, so a long-lived env gets slower and its prompt longer with each
  episode; a trainer re-using env instances uses the raw env and formats the messages it drains
  with ``get_observation()``, which is what is timed here.

Settings shared with rollenv: Sokoban 6x6 with 1 box, Sokoban 10x10 with 2 boxes, FrozenLake 4x4
(TextArena only). Peers' episode limit is 100 turns; rollenv's ids keep their own limits (only
the number of untimed resets in the step loop depends on it).

Caveats: the generators do not produce the same levels (rollenv draws a level whose optimal plan
fits its turn limit; the peers reverse-play for box displacement), so resets/s compares the cost
of handing an agent a fresh level of that size, not of the same level. A second 10x10 rollenv row
draws levels with optimal plans of up to 40 moves, nearer the peers' long levels. The peers'
10x10 reset times have a long tail, so their resets/s there depends on how many seeds are run
(``--quick`` runs fewer). gym-sokoban imports ``pkg_resources``, which setuptools 82 removed:
it needs ``setuptools<82``.

Run (from the repository root; peers: ``pip install 'rollenv[bench]'``)::

    python benchmarks/env_throughput.py --quick          # about a minute
    python benchmarks/env_throughput.py                  # full run, a few minutes
    python benchmarks/env_throughput.py --only peers --repeats 1 --json /tmp/peers.json
    python benchmarks/env_throughput.py --only webshop --quick   # WebShop text vs HTML mode

A WebShop section (``--only webshop``, also part of ``ours`` and ``all``) times random available
actions in WebShop-v0 (text, in process) and WebShopHTML-v0 (uvicorn + headless Chromium) and
prints the ratio of their steps/s: the HTML mode's cost.

It prints one table, the ratios of rollenv to each peer at each shared setting and the goals
(PASS/FAIL, informational: the script always exits 0), and writes every raw number to JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import random
import statistics
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

REPO_ROOT = Path(__file__).resolve().parents[1]
# Benchmark the checkout this script lives in, not some other installed copy.
sys.path.insert(0, str(REPO_ROOT))

PEER_INSTALL_COMMAND = "pip install 'rollenv[bench]'"
ROLLENV_INSTALL_COMMAND = "pip install -e . from the repository root"
PEER_MAX_TURNS = 100

SOKOBAN_SMALL = "Sokoban 6x6, 1 box"
SOKOBAN_LARGE = "Sokoban 10x10, 2 boxes"
FROZENLAKE_4X4 = "FrozenLake 4x4"
#: Sokoban sizes the peers are measured at: (side, boxes) -> setting.
PEER_SOKOBAN_SETTINGS = {(6, 1): SOKOBAN_SMALL, (10, 2): SOKOBAN_LARGE}

#: The issue's goals: setting -> (minimum rollenv/gym-sokoban resets/s ratio, p99 limit in ms).
RESET_GOALS = {SOKOBAN_SMALL: (5.0, 5.0), SOKOBAN_LARGE: (50.0, 50.0)}

#: gym-sokoban's room_state codes -> the characters RAGEN shows an LLM (6 = player on target).
GYM_SOKOBAN_CHARACTERS = {0: "#", 1: "_", 2: "O", 3: "√", 4: "X", 5: "P", 6: "S"}
GYM_SOKOBAN_PLAYER, GYM_SOKOBAN_TARGET, GYM_SOKOBAN_PLAYER_ON_TARGET = 5, 2, 6
#: gym-sokoban actions 1..4 are "push up/down/left/right" (they also move), as RAGEN uses them.
GYM_SOKOBAN_MOVES = (1, 2, 3, 4)


# --------------------------------------------------------------------------- sizes of a run
@dataclass(frozen=True)
class Budget:
    """How much work one measurement does.

    Envs whose reset generates a Sokoban level of 8x8 or more ("heavy") get fewer resets:
    gym-sokoban needs up to a second for one 10x10 level. The step loop stops after
    ``steps`` steps or ``step_loop_seconds`` of wall time (resets between episodes included),
    whichever comes first.
    """

    resets: int
    heavy_resets: int
    steps: int
    step_loop_seconds: float

    @classmethod
    def for_run(cls, quick: bool) -> Budget:
        if quick:
            return cls(resets=100, heavy_resets=20, steps=2_000, step_loop_seconds=1.0)
        return cls(resets=1_000, heavy_resets=100, steps=20_000, step_loop_seconds=10.0)


# --------------------------------------------------------------------------- adapters
class EnvAdapter(ABC):
    """One env of one library behind a uniform text-in, text-out interface.

    Attributes:
        library: "rollenv", "gym-sokoban", "GEM" or "TextArena".
        name: the row label (the library's env id or class).
        config: the arguments it was built with (written to the JSON).
        setting: the shared setting it is compared at, or ``None`` (rollenv-only settings).
        heavy: whether a reset generates a large Sokoban level (see ``Budget``).
        actions: the four moves in the library's own action encoding.
    """

    library: str
    name: str
    config: dict[str, Any]
    setting: str | None
    heavy: bool
    actions: Sequence[Any]

    @abstractmethod
    def reset(self, seed: int) -> str:
        """Starts an episode from ``seed`` and returns the text observation."""

    @abstractmethod
    def step(self, action: Any) -> tuple[str, bool]:
        """Plays one move; returns the text observation and whether the episode is over."""

    def counters(self) -> dict[str, int]:
        """Library-specific counts worth reporting (e.g. level-generation retries)."""
        return {}


class RollenvAdapter(EnvAdapter):
    """A rollenv id built with ``rollenv.make`` (Gymnasium's standard wrappers included)."""

    library = "rollenv"

    def __init__(
        self, rollenv_module: Any, env_id: str, label: str | None = None, **kwargs: Any
    ) -> None:
        self.env = rollenv_module.make(env_id, **kwargs)
        self.name = label or env_id
        self.config = {
            "kwargs": dict(self.env.spec.kwargs),
            "max_episode_steps": self.env.spec.max_episode_steps,
        }
        unwrapped = self.env.unwrapped
        self.setting, self.heavy = rollenv_setting(unwrapped)
        self.actions = tuple(unwrapped.answer_format.wrap(word) for word in unwrapped.action_words)

    def reset(self, seed: int) -> str:
        observation, _ = self.env.reset(seed=seed)
        return observation

    def step(self, action: str) -> tuple[str, bool]:
        observation, _, terminated, truncated, _ = self.env.step(action)
        return observation, terminated or truncated


def rollenv_setting(unwrapped: Any) -> tuple[str | None, bool]:
    """The shared setting a rollenv env matches (or ``None``), and whether it is heavy.

    Read from the built env, so it follows whatever size an id's kwargs give it.
    """
    if hasattr(unwrapped, "num_boxes"):
        rows, cols = unwrapped.dim_room
        setting = PEER_SOKOBAN_SETTINGS.get((rows, unwrapped.num_boxes)) if rows == cols else None
        return setting, rows * cols >= 64
    side = getattr(unwrapped, "nrow", None) or getattr(unwrapped, "size", None)
    slippery = bool(getattr(unwrapped, "is_slippery", False))
    return (FROZENLAKE_4X4 if side == 4 and not slippery else None), False


class GymSokobanAdapter(EnvAdapter):
    """gym-sokoban's ``SokobanEnv``, seeded and rendered to text the way RAGEN does."""

    library = "gym-sokoban"

    def __init__(self, sokoban_env_class: type, numpy_module: Any, side: int, boxes: int) -> None:
        self.env = sokoban_env_class(
            dim_room=(side, side), num_boxes=boxes, max_steps=PEER_MAX_TURNS, reset=False
        )
        self.np = numpy_module
        self.name = "SokobanEnv"
        self.config = {"dim_room": [side, side], "num_boxes": boxes, "max_steps": PEER_MAX_TURNS}
        self.setting = PEER_SOKOBAN_SETTINGS[(side, boxes)]
        self.heavy = side * side >= 64
        self.actions = GYM_SOKOBAN_MOVES
        self.generator_log = io.StringIO()  # gym-sokoban prints each internal generation retry
        self.reseeded_resets = 0

    def reset(self, seed: int) -> str:
        # Its reset already retries a failed generation itself (printing "[SOKOBAN] Retry");
        # an error that still escapes (e.g. RecursionError) is retried with the next seed.
        for attempt in range(10):
            random.seed(seed + attempt)
            self.np.random.seed(seed + attempt)
            try:
                with contextlib.redirect_stdout(self.generator_log):
                    self.env.reset()
                return self._text()
            except (RuntimeError, RuntimeWarning):
                self.reseeded_resets += 1
        raise RuntimeError(f"gym-sokoban could not generate a level from seeds {seed}..{seed + 9}")

    def step(self, action: int) -> tuple[str, bool]:
        _, _, done, _ = self.env.step(action)
        return self._text(), done

    def _text(self) -> str:
        state = self.env.room_state
        player_on_target = (state == GYM_SOKOBAN_PLAYER) & (
            self.env.room_fixed == GYM_SOKOBAN_TARGET
        )
        grid = self.np.where(player_on_target, GYM_SOKOBAN_PLAYER_ON_TARGET, state).tolist()
        return "\n".join("".join(GYM_SOKOBAN_CHARACTERS[int(cell)] for cell in row) for row in grid)

    def counters(self) -> dict[str, int]:
        return {
            "generator_retries": self.generator_log.getvalue().count("[SOKOBAN] Retry"),
            "resets_retried_with_next_seed": self.reseeded_resets,
        }


class GemSokobanAdapter(EnvAdapter):
    """GEM's text Sokoban (``game:Sokoban-v0-easy`` with the size overridden)."""

    library = "GEM"
    env_id = "game:Sokoban-v0-easy"

    def __init__(self, gem_module: Any, side: int, boxes: int) -> None:
        self.env = gem_module.make(
            self.env_id, dim_room=(side, side), num_boxes=boxes, max_turns=PEER_MAX_TURNS
        )
        self.name = self.env_id
        self.config = {"dim_room": [side, side], "num_boxes": boxes, "max_turns": PEER_MAX_TURNS}
        self.setting = PEER_SOKOBAN_SETTINGS[(side, boxes)]
        self.heavy = side * side >= 64
        self.actions = tuple(f"\\boxed{{{move}}}" for move in ("up", "down", "left", "right"))

    def reset(self, seed: int) -> str:
        observation, info = self.env.reset(seed=seed)
        return f"{observation}\n{info['suffix']}"

    def step(self, action: str) -> tuple[str, bool]:
        observation, _, terminated, truncated, info = self.env.step(action)
        return f"{observation}\n{info['suffix']}", terminated or truncated


class TextArenaAdapter(EnvAdapter):
    """A raw TextArena env; the text is the messages ``get_observation()`` drains, joined."""

    library = "TextArena"

    def __init__(self, textarena_module: Any, env_id: str, setting: str, **kwargs: Any) -> None:
        self.env = textarena_module.make(f"{env_id}-raw", **kwargs)
        self.name = f"{env_id}-raw"
        self.config = kwargs
        self.setting = setting
        self.heavy = kwargs.get("dim_room", (0, 0))[0] >= 8
        self.actions = ("[up]", "[down]", "[left]", "[right]")

    def reset(self, seed: int) -> str:
        self.env.reset(num_players=1, seed=seed)
        return self._drain_text()

    def step(self, action: str) -> tuple[str, bool]:
        done, _ = self.env.step(action)
        return self._drain_text(), done

    def _drain_text(self) -> str:
        _, messages = self.env.get_observation()
        return "\n\n".join(message for _, message, _ in messages)


@dataclass(frozen=True)
class Unavailable:
    """A row that could not be measured, and why."""

    library: str
    name: str
    setting: str | None
    reason: str


AdapterOrUnavailable = EnvAdapter | Unavailable


def import_failure_reason(error: BaseException, module: str, install_command: str) -> str:
    """Why ``module`` could not be imported, said so that the fix is obvious.

    A missing dependency is told apart from a missing package: gym-sokoban, for one, imports
    ``pkg_resources``, which setuptools 82 removed.
    """
    if isinstance(error, ModuleNotFoundError):
        if error.name is not None and error.name.split(".")[0] == module:
            return f"not installed ({install_command})"
        return f"missing dependency {error.name!r} ({install_command})"
    return f"import failed: {type(error).__name__}: {error}"


def build(
    library: str, name: str, setting: str | None, constructor: Callable[[], EnvAdapter]
) -> AdapterOrUnavailable:
    """Runs ``constructor``; an env that cannot even be built becomes an ``Unavailable`` row."""
    try:
        return constructor()
    except Exception as error:  # noqa: BLE001 - one broken env must not stop the others
        return Unavailable(library, name, setting, f"make failed: {type(error).__name__}: {error}")


def rollenv_adapters() -> list[AdapterOrUnavailable]:
    """Every Sokoban and FrozenLake id of ``rollenv.registry``."""
    try:
        import rollenv
    except Exception as error:  # noqa: BLE001 - any import failure is reported, never raised
        return [
            Unavailable(
                "rollenv",
                "(all)",
                None,
                import_failure_reason(error, "rollenv", ROLLENV_INSTALL_COMMAND),
            )
        ]
    ids = sorted(
        spec.id
        for spec in rollenv.registry.values()
        if "Sokoban" in spec.id or "FrozenLake" in spec.id
    )
    if not ids:
        return [
            Unavailable(
                "rollenv",
                "(all)",
                None,
                "no Sokoban/FrozenLake ids registered (is rollenv pip-installed?)",
            )
        ]
    adapters = [
        build("rollenv", env_id, None, lambda env_id=env_id: RollenvAdapter(rollenv, env_id))
        for env_id in ids
    ]
    # The ids draw levels whose optimal plan fits their 10-move budget; the peers' levels are
    # longer. This row draws 10x10 levels with plans of up to 40 moves, for a like-for-like cost.
    long_plans = "LargerSokoban-v0 (plans up to 40 moves)"
    adapters.append(
        build(
            "rollenv",
            long_plans,
            None,
            lambda: RollenvAdapter(
                rollenv,
                "LargerSokoban-v0",
                label=long_plans,
                max_solution_length=40,
                max_actions=100,
                max_episode_steps=100,
            ),
        )
    )
    return adapters


def gym_sokoban_adapters() -> list[AdapterOrUnavailable]:
    """gym-sokoban at both shared Sokoban sizes (it has no FrozenLake)."""
    try:
        import numpy

        # gym 0.26 prints a notice about being unmaintained on import; keep the output readable.
        with contextlib.redirect_stderr(io.StringIO()):
            from gym_sokoban.envs.sokoban_env import SokobanEnv
    except Exception as error:  # noqa: BLE001
        reason = import_failure_reason(error, "gym_sokoban", PEER_INSTALL_COMMAND)
        return [
            Unavailable("gym-sokoban", "SokobanEnv", s, reason)
            for s in PEER_SOKOBAN_SETTINGS.values()
        ]
    return [
        build(
            "gym-sokoban",
            "SokobanEnv",
            setting,
            lambda side=side, boxes=boxes: GymSokobanAdapter(SokobanEnv, numpy, side, boxes),
        )
        for (side, boxes), setting in PEER_SOKOBAN_SETTINGS.items()
    ]


def gem_adapters() -> list[AdapterOrUnavailable]:
    """GEM's Sokoban at both shared sizes (GEM 0.1.0 has no FrozenLake)."""
    try:
        import gem
    except Exception as error:  # noqa: BLE001
        reason = import_failure_reason(error, "gem", PEER_INSTALL_COMMAND)
        return [
            Unavailable("GEM", GemSokobanAdapter.env_id, s, reason)
            for s in PEER_SOKOBAN_SETTINGS.values()
        ]
    return [
        build(
            "GEM",
            GemSokobanAdapter.env_id,
            setting,
            lambda side=side, boxes=boxes: GemSokobanAdapter(gem, side, boxes),
        )
        for (side, boxes), setting in PEER_SOKOBAN_SETTINGS.items()
    ]


def textarena_adapters() -> list[AdapterOrUnavailable]:
    """TextArena's raw Sokoban at both shared sizes and its 4x4 FrozenLake (3 holes)."""
    try:
        import textarena
    except Exception as error:  # noqa: BLE001
        reason = import_failure_reason(error, "textarena", PEER_INSTALL_COMMAND)
        return [
            Unavailable("TextArena", "Sokoban-v0-raw", s, reason)
            for s in PEER_SOKOBAN_SETTINGS.values()
        ] + [Unavailable("TextArena", "FrozenLake-v0-raw", FROZENLAKE_4X4, reason)]
    adapters = [
        build(
            "TextArena",
            "Sokoban-v0-raw",
            setting,
            lambda side=side, boxes=boxes, setting=setting: TextArenaAdapter(
                textarena,
                "Sokoban-v0",
                setting,
                dim_room=(side, side),
                num_boxes=boxes,
                max_turns=PEER_MAX_TURNS,
            ),
        )
        for (side, boxes), setting in PEER_SOKOBAN_SETTINGS.items()
    ]
    adapters.append(
        build(
            "TextArena",
            "FrozenLake-v0-raw",
            FROZENLAKE_4X4,
            lambda: TextArenaAdapter(textarena, "FrozenLake-v0", FROZENLAKE_4X4),
        )
    )
    return adapters


PEER_ADAPTER_FACTORIES: tuple[Callable[[], list[AdapterOrUnavailable]], ...] = (
    gym_sokoban_adapters,
    gem_adapters,
    textarena_adapters,
)


# --------------------------------------------------------------------------- WebShop
#: Steps per repeat of the HTML mode (each drives Chromium), quick and full.
WEBSHOP_HTML_STEPS = {True: 40, False: 200}


def time_webshop_steps(env: Any, steps: int, wall_limit_s: float) -> tuple[int, float]:
    """Plays random available actions (``action_words``, chosen untimed); times ``step`` only.

    The episode is reset, untimed, with fresh seeds whenever it ends.
    """
    rng = random.Random(0)
    inner = env.unwrapped
    next_seed = 1_000_000
    env.reset(seed=next_seed)
    stepping = 0.0
    deadline = time.perf_counter() + wall_limit_s
    for index in range(steps):
        reply = f"<answer>{rng.choice(inner.action_words)}</answer>"
        start = time.perf_counter()
        _, _, terminated, truncated, _ = env.step(reply)
        end = time.perf_counter()
        stepping += end - start
        if end > deadline:
            return index + 1, stepping
        if terminated or truncated:
            next_seed += 1
            env.reset(seed=next_seed)
    return steps, stepping


def webshop_section(budget: Budget, repeats: int, quick: bool) -> dict[str, Any]:
    """Steps/s of WebShop-v0 (text, in process) and WebShopHTML-v0 (server + Chromium)."""
    rows: dict[str, Any] = {}
    for env_id, steps in (
        ("WebShop-v0", budget.steps),
        ("WebShopHTML-v0", WEBSHOP_HTML_STEPS[quick]),
    ):
        try:
            import rollenv

            env = rollenv.make(env_id)
        except Exception as error:  # noqa: BLE001 - a missing extra or browser is a row
            rows[env_id] = {"status": f"make failed: {type(error).__name__}: {error}"}
            continue
        print(f"measuring rollenv: {env_id} ...", file=sys.stderr, flush=True)
        try:
            env.reset(seed=2_000_000)
            env.step(f"<answer>{env.unwrapped.action_words[0]}</answer>")
            runs = [
                time_webshop_steps(env, steps, budget.step_loop_seconds * 3) for _ in range(repeats)
            ]
        except Exception as error:  # noqa: BLE001
            rows[env_id] = {"status": f"error: {type(error).__name__}: {error}"}
            continue
        finally:
            env.close()
        rates = [count / seconds for count, seconds in runs]
        rows[env_id] = {
            "status": "ok",
            "steps_timed": [count for count, _ in runs],
            "steps_per_s": rates,
            "median_steps_per_s": statistics.median(rates),
        }
    text, html = rows.get("WebShop-v0", {}), rows.get("WebShopHTML-v0", {})
    ratio = None
    if text.get("status") == "ok" and html.get("status") == "ok":
        ratio = text["median_steps_per_s"] / html["median_steps_per_s"]
    return {"rows": rows, "text_to_html_steps_ratio": ratio}


def print_webshop(section: dict[str, Any], repeats: int) -> None:
    lines = []
    for env_id, row in section["rows"].items():
        if row["status"] != "ok":
            lines.append([env_id, row["status"], "-"])
            continue
        lines.append(
            [env_id, f"{sum(row['steps_timed']):,}", format_rate(row["median_steps_per_s"])]
        )
    print_table(
        ["env", "steps timed", "steps/s"],
        lines,
        f"WebShop steps/s (random available actions, median of {repeats})",
        left_columns=1,
    )
    ratio = section["text_to_html_steps_ratio"]
    if ratio is None:
        print("  HTML mode's cost: not measured (both modes are needed)")
    else:
        print(
            f"  HTML mode's cost: WebShop-v0 (text) steps {ratio:,.0f}x as fast as "
            "WebShopHTML-v0 (server + headless Chromium)"
        )


# --------------------------------------------------------------------------- measuring
@dataclass
class RunFigures:
    """The figures of one repeat."""

    resets_per_s: float
    p50_ms: float
    p99_ms: float
    steps_per_s: float
    resets_timed: int
    steps_timed: int


@dataclass
class RowResult:
    """One table row: a library's env at one setting, measured or not."""

    library: str
    name: str
    setting: str | None
    status: str = "ok"
    config: dict[str, Any] = field(default_factory=dict)
    runs: list[RunFigures] = field(default_factory=list)
    median: dict[str, float] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)


def time_resets(adapter: EnvAdapter, count: int) -> list[float]:
    """Latency in seconds of ``reset(seed)`` for seeds ``0..count-1``."""
    latencies = []
    for seed in range(count):
        start = time.perf_counter()
        adapter.reset(seed)
        latencies.append(time.perf_counter() - start)
    return latencies


def time_steps(adapter: EnvAdapter, count: int, wall_limit_s: float) -> tuple[int, float]:
    """Plays up to ``count`` random moves; returns (steps timed, seconds spent in ``step``).

    The episode is reset, untimed, with fresh seeds whenever it ends; the loop also stops when
    ``wall_limit_s`` of wall time (resets included) has passed.
    """
    rng = random.Random(0)
    moves = [adapter.actions[rng.randrange(len(adapter.actions))] for _ in range(count)]
    next_seed = 1_000_000
    adapter.reset(next_seed)
    stepping = 0.0
    deadline = time.perf_counter() + wall_limit_s
    for index, move in enumerate(moves):
        start = time.perf_counter()
        _, done = adapter.step(move)
        end = time.perf_counter()
        stepping += end - start
        if end > deadline:
            return index + 1, stepping
        if done:
            next_seed += 1
            adapter.reset(next_seed)
    return len(moves), stepping


def measure_once(adapter: EnvAdapter, budget: Budget) -> RunFigures:
    latencies = time_resets(adapter, budget.heavy_resets if adapter.heavy else budget.resets)
    cut_points = statistics.quantiles(latencies, n=100, method="inclusive")
    steps, step_seconds = time_steps(adapter, budget.steps, budget.step_loop_seconds)
    return RunFigures(
        resets_per_s=len(latencies) / sum(latencies),
        p50_ms=cut_points[49] * 1e3,
        p99_ms=cut_points[98] * 1e3,
        steps_per_s=steps / step_seconds,
        resets_timed=len(latencies),
        steps_timed=steps,
    )


def measure(adapter: EnvAdapter, budget: Budget, repeats: int) -> RowResult:
    """Warms the env up (one untimed reset and step), then takes ``repeats`` measurements."""
    row = RowResult(adapter.library, adapter.name, adapter.setting, config=adapter.config)
    try:
        adapter.reset(2_000_000)
        adapter.step(adapter.actions[0])
        row.runs = [measure_once(adapter, budget) for _ in range(repeats)]
    except Exception as error:  # noqa: BLE001 - a failing env is a row, not a crash
        row.status = f"error: {type(error).__name__}: {error}"
        return row
    for metric in ("resets_per_s", "p50_ms", "p99_ms", "steps_per_s"):
        row.median[metric] = statistics.median(getattr(run, metric) for run in row.runs)
    row.counters = adapter.counters()
    return row


# --------------------------------------------------------------------------- reporting
def format_rate(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:,.2f}"


def format_ms(value: float) -> str:
    return f"{value:,.3f}" if value < 1 else f"{value:,.2f}"


def table_rows(rows: Sequence[RowResult]) -> list[list[str]]:
    """The table's cells; a row that was not measured says why in place of its label."""
    lines = []
    for row in rows:
        label = f"{row.name} [{row.setting}]" if row.setting else row.name
        if row.status != "ok":
            lines.append([row.library, f"{label}: {row.status}", "-", "-", "-", "-"])
            continue
        m = row.median
        lines.append(
            [
                row.library,
                label,
                format_rate(m["resets_per_s"]),
                format_ms(m["p50_ms"]),
                format_ms(m["p99_ms"]),
                format_rate(m["steps_per_s"]),
            ]
        )
    return lines


TABLE_HEADER = ["library", "env [shared setting]", "resets/s", "p50 ms", "p99 ms", "steps/s (text)"]


def measured(rows: Sequence[RowResult]) -> list[RowResult]:
    return [row for row in rows if row.status == "ok"]


def compare(rows: Sequence[RowResult]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Ratios of each rollenv env to the peers at its setting, and the issue's goals."""
    ratios: list[dict[str, Any]] = []
    goals: list[dict[str, Any]] = []
    ours = [row for row in measured(rows) if row.library == "rollenv" and row.setting]
    for row in ours:
        peers = [p for p in measured(rows) if p.library != "rollenv" and p.setting == row.setting]
        if not peers:
            continue
        fastest = max(peers, key=lambda p: p.median["steps_per_s"])
        ratios.append(
            {
                "env": row.name,
                "setting": row.setting,
                "resets_per_s_ratio": {
                    p.library: row.median["resets_per_s"] / p.median["resets_per_s"] for p in peers
                },
                "steps_per_s_ratio_to_fastest_peer": row.median["steps_per_s"]
                / fastest.median["steps_per_s"],
                "fastest_peer_steps": fastest.library,
            }
        )
        gym_sokoban = next((p for p in peers if p.library == "gym-sokoban"), None)
        if row.setting in RESET_GOALS:
            min_ratio, p99_limit = RESET_GOALS[row.setting]
            if gym_sokoban is not None:
                ratio = row.median["resets_per_s"] / gym_sokoban.median["resets_per_s"]
                goals.append(
                    {
                        "env": row.name,
                        "setting": row.setting,
                        "goal": f"resets/s >= {min_ratio:g}x gym-sokoban",
                        "value": f"{ratio:,.1f}x",
                        "passed": ratio >= min_ratio,
                    }
                )
            goals.append(
                {
                    "env": row.name,
                    "setting": row.setting,
                    "goal": f"p99 reset < {p99_limit:g} ms",
                    "value": f"{row.median['p99_ms']:,.2f} ms",
                    "passed": row.median["p99_ms"] < p99_limit,
                }
            )
        steps_ratio = row.median["steps_per_s"] / fastest.median["steps_per_s"]
        goals.append(
            {
                "env": row.name,
                "setting": row.setting,
                "goal": f"steps/s with text >= fastest peer ({fastest.library})",
                "value": f"{steps_ratio:,.2f}x",
                "passed": steps_ratio >= 1.0,
            }
        )
    return ratios, goals


def print_comparison(ratios: Sequence[dict[str, Any]], goals: Sequence[dict[str, Any]]) -> None:
    print("\nRatios (rollenv / peer, at the same setting):")
    if not ratios:
        print("  none: needs rollenv and at least one peer measured at a shared setting")
    for entry in ratios:
        resets = ", ".join(
            f"{ratio:,.1f}x {library}" for library, ratio in entry["resets_per_s_ratio"].items()
        )
        print(
            f"  {entry['env']} [{entry['setting']}]: resets/s {resets}; steps/s "
            f"{entry['steps_per_s_ratio_to_fastest_peer']:,.2f}x the fastest peer "
            f"({entry['fastest_peer_steps']})"
        )
    print("\nGoals (informational):")
    if not goals:
        print("  none evaluated: needs rollenv and the peers measured")
    for goal in goals:
        verdict = "PASS" if goal["passed"] else "FAIL"
        print(
            f"  {verdict}  {goal['env']} [{goal['setting']}]: {goal['goal']} "
            f"(measured {goal['value']})"
        )


# --------------------------------------------------------------------------- main
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line: this benchmark's flags, ``--json`` and ``--quick``."""
    parser = argparse.ArgumentParser(
        description="Resets/s, reset latency and steps/s (with text) of rollenv's Sokoban and "
        "FrozenLake envs and of gym-sokoban, GEM and TextArena."
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="measurements per env; the median is reported (default 3)",
    )
    parser.add_argument(
        "--only",
        choices=("ours", "peers", "all", "webshop"),
        default="all",
        help="measure only rollenv, only the peers, both (default), or only WebShop "
        "(text and HTML modes; part of 'ours' and 'all')",
    )
    add_common_arguments(
        parser,
        default_json=RESULTS_DIR / "env_throughput.json",
        quick="100 resets (20 of large levels) and at most 2,000 steps or 1 s per env "
        "(about a minute)",
    )
    args = parse_arguments(parser, argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    budget = Budget.for_run(args.quick)
    factories: list[Callable[[], list[AdapterOrUnavailable]]] = []
    if args.only in ("ours", "all"):
        factories.append(rollenv_adapters)
    webshop = None
    if args.only in ("ours", "all", "webshop"):
        webshop = webshop_section(budget, args.repeats, args.quick)
    if args.only in ("peers", "all"):
        factories.extend(PEER_ADAPTER_FACTORIES)

    rows: list[RowResult] = []
    for factory in factories:
        for adapter in factory():
            if isinstance(adapter, Unavailable):
                rows.append(
                    RowResult(adapter.library, adapter.name, adapter.setting, status=adapter.reason)
                )
                continue
            print(f"measuring {adapter.library}: {adapter.name} ...", file=sys.stderr, flush=True)
            rows.append(measure(adapter, budget, args.repeats))

    mode = "quick" if args.quick else "full"
    ratios, goals = compare(rows)
    if args.only != "webshop":
        print_table(
            TABLE_HEADER,
            table_rows(rows),
            f"Env throughput ({mode}, median of {args.repeats}, "
            f"{os.cpu_count()} CPUs, Python {platform.python_version()})",
            left_columns=2,
        )
        print_comparison(ratios, goals)
    if webshop is not None:
        print()
        print_webshop(webshop, args.repeats)

    report = {
        "mode": mode,
        "repeats": args.repeats,
        "budget": asdict(budget),
        "peer_max_turns": PEER_MAX_TURNS,
        "results": [asdict(row) for row in rows],
        "ratios": ratios,
        "goals": goals,
        "webshop": webshop,
    }
    print()
    write_report(
        args.json, report, ("gym-sokoban", "gym", "gem-llm", "textarena", "gymnasium", "numpy")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
