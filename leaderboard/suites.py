"""Eval suites: versioned data files naming envs and their held-out seeds.

A suite is a YAML file in ``leaderboard/suites/`` (or any path): a name, a version, and a list
of envs, each with its ``rollenv.make`` kwargs, its held-out seeds and its turn limit. A suite
is asked for by name (``core``: its newest version), by name and version (``core-v0``), or by
path. Seeds are below ``HELD_OUT_SEED_LIMIT``: the seeds ``roll-agent train`` draws start there
(``trainer.rollout.seeds.TRAIN_SEED_BASE``), so no suite episode was ever trained on.

A changed suite gets a new version: its ``fingerprint`` (a hash of its content) is stored with
every result, and the store refuses a known version whose fingerprint changed.

Example:
    >>> from leaderboard.suites import load_suite
    >>> suite = load_suite("smoke")
    >>> suite.name, suite.version, [env.id for env in suite.envs][:2]
    ('smoke', 0, ['SimpleSokoban-v0', 'FrozenLake-v0'])
    >>> suite.envs[0].seeds[:3]
    (0, 1, 2)
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "HELD_OUT_SEED_LIMIT",
    "SUITES_DIR",
    "Suite",
    "SuiteEnv",
    "SuiteError",
    "available_suites",
    "load_suite",
]

#: suite seeds are below this; training draws its seeds from here up (TRAIN_SEED_BASE)
HELD_OUT_SEED_LIMIT = 1_000_000
SUITES_DIR = Path(__file__).parent / "suites"
_NAME_VERSION = re.compile(r"^(?P<name>[A-Za-z0-9_.]+(?:-[A-Za-z0-9_.]+)*?)-v(?P<version>\d+)$")


class SuiteError(ValueError):
    """A suite that cannot be found or read; the message names the suite and the field."""


@dataclass(frozen=True)
class SuiteEnv:
    """One env of a suite.

    Attributes:
        id: the registered env id (``SimpleSokoban-v0``).
        kwargs: keyword arguments for ``rollenv.make``.
        seeds: the held-out reset seeds, one episode each.
        max_turns: turns before an episode is cut (``None``: the env's own limit, or 10).
        reset_option: when set, each seed is also passed as ``reset(options={reset_option:
            seed})`` (``index`` plays CodeSandbox-v0's problem number ``seed``, so a suite
            covers the dataset exactly instead of drawing problems at random).
    """

    id: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    seeds: tuple[int, ...] = ()
    max_turns: int | None = None
    reset_option: str | None = None


@dataclass(frozen=True)
class Suite:
    """A versioned list of envs and held-out seeds.

    Attributes:
        name: the suite's name (``core``).
        version: its version; results of different versions are never compared.
        description: one line on what it is for.
        envs: its envs, in the order the board shows them.
        fingerprint: a hash of its content.
        path: the file it came from.
    """

    name: str
    version: int
    description: str
    envs: tuple[SuiteEnv, ...]
    fingerprint: str
    path: Path

    @property
    def label(self) -> str:
        """``core-v0``."""
        return f"{self.name}-v{self.version}"

    @property
    def episodes(self) -> int:
        return sum(len(env.seeds) for env in self.envs)

    def env(self, env_id: str) -> SuiteEnv:
        for env in self.envs:
            if env.id == env_id:
                return env
        raise KeyError(env_id)


def available_suites() -> list[str]:
    """The labels of the suites shipped with rollenv (``core-v0``, ``smoke-v0``, ...)."""
    return sorted(path.stem for path in SUITES_DIR.glob("*.yaml"))


def load_suite(name_or_path: str | Path) -> Suite:
    """Reads a suite by label (``core-v0``), by name (its newest version), or from a path.

    Raises:
        SuiteError: no such suite (with the closest names), or a field that is wrong.
    """
    path = _find(str(name_or_path))
    import yaml

    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise SuiteError(f"cannot read suite {path}: {error}") from None
    return _parse(data, path)


def _find(text: str) -> Path:
    candidate = Path(text)
    if candidate.suffix in (".yaml", ".yml"):
        if not candidate.is_file():
            raise SuiteError(f"no suite file {text}")
        return candidate
    labels = available_suites()
    if text in labels:
        return SUITES_DIR / f"{text}.yaml"
    versions = [
        (int(match["version"]), label)
        for label in labels
        if (match := _NAME_VERSION.match(label)) and match["name"] == text
    ]
    if versions:
        return SUITES_DIR / f"{max(versions)[1]}.yaml"
    names = sorted({_NAME_VERSION.match(label)["name"] for label in labels} | set(labels))
    close = difflib.get_close_matches(text, names, n=3, cutoff=0.4)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise SuiteError(f"unknown suite {text!r}{hint} (suites: {', '.join(labels)}, or a .yaml path)")


def _parse(data: Any, path: Path) -> Suite:
    where = f"suite {path}"
    if not isinstance(data, dict):
        raise SuiteError(f"{where}: expected a mapping with name, version and envs")
    unknown = set(data) - {"name", "version", "description", "envs"}
    if unknown:
        raise SuiteError(
            f"{where}: unknown field {sorted(unknown)[0]!r} (allowed: name, "
            "version, description, envs)"
        )
    name = data.get("name")
    version = data.get("version")
    if not isinstance(name, str) or not name:
        raise SuiteError(f"{where}: 'name' must be a non-empty string")
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise SuiteError(f"{where}: 'version' must be a whole number >= 0, got {version!r}")
    envs = data.get("envs")
    if not isinstance(envs, list) or not envs:
        raise SuiteError(f"{where}: 'envs' must be a non-empty list")
    parsed = tuple(_parse_env(entry, f"{where}: envs[{i}]") for i, entry in enumerate(envs))
    ids = [env.id for env in parsed]
    if len(set(ids)) != len(ids):
        raise SuiteError(f"{where}: an env id appears twice in 'envs'")
    canonical = json.dumps(data, sort_keys=True, default=str)
    return Suite(
        name=name,
        version=version,
        description=str(data.get("description", "")),
        envs=parsed,
        fingerprint=hashlib.sha256(canonical.encode()).hexdigest()[:16],
        path=path,
    )


def _parse_env(entry: Any, where: str) -> SuiteEnv:
    if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
        raise SuiteError(f"{where}: expected a mapping with an 'id'")
    allowed = {"id", "kwargs", "seeds", "max_turns", "reset_option"}
    unknown = set(entry) - allowed
    if unknown:
        raise SuiteError(
            f"{where}: unknown field {sorted(unknown)[0]!r} (allowed: {', '.join(sorted(allowed))})"
        )
    import rollenv

    try:
        env_id = rollenv.spec(entry["id"]).id
    except rollenv.UnknownEnvError as error:
        raise SuiteError(f"{where}: {error}") from None
    kwargs = entry.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise SuiteError(f"{where}: 'kwargs' must be a mapping")
    max_turns = entry.get("max_turns")
    if max_turns is not None and (not isinstance(max_turns, int) or max_turns < 1):
        raise SuiteError(f"{where}: 'max_turns' must be a whole number >= 1, got {max_turns!r}")
    reset_option = entry.get("reset_option")
    if reset_option is not None and not isinstance(reset_option, str):
        raise SuiteError(f"{where}: 'reset_option' must be a string")
    return SuiteEnv(
        id=env_id,
        kwargs=kwargs,
        seeds=_parse_seeds(entry.get("seeds"), where),
        max_turns=max_turns,
        reset_option=reset_option,
    )


def _parse_seeds(value: Any, where: str) -> tuple[int, ...]:
    """``[0, 5, 9]`` or ``{start: 0, count: 400}``."""
    if isinstance(value, dict) and set(value) == {"start", "count"}:
        start, count = value["start"], value["count"]
        if not all(isinstance(v, int) and v >= 0 for v in (start, count)) or count == 0:
            raise SuiteError(f"{where}: 'seeds' start and count must be whole numbers, count >= 1")
        seeds = tuple(range(start, start + count))
    elif isinstance(value, list) and value and all(isinstance(s, int) for s in value):
        seeds = tuple(value)
    else:
        raise SuiteError(f"{where}: 'seeds' must be a list of whole numbers or {{start, count}}")
    if len(set(seeds)) != len(seeds):
        raise SuiteError(f"{where}: 'seeds' lists a seed twice")
    if min(seeds) < 0 or max(seeds) >= HELD_OUT_SEED_LIMIT:
        raise SuiteError(
            f"{where}: seeds must be in 0..{HELD_OUT_SEED_LIMIT - 1}: training draws its seeds "
            f"from {HELD_OUT_SEED_LIMIT} up, and a suite's seeds are held out from it"
        )
    return seeds
