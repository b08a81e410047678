"""The docs' generated pages, written by ``mkdocs-gen-files`` at build time.

* ``environments/<family>.md``: one page a family, from the registry and the env classes'
  docstrings: ids, kwargs, the random and oracle success of ``benchmarks/hub_success.py``
  (where its JSON holds them), one oracle episode rendered, and the ids unavailable here.
* ``reference/cli.md``: every ``roll-agent`` command's ``--help``, from its parser.
* ``reference/config.md``: every config field, from the schema's field docstrings.
* ``results/``: the files of ``benchmarks/results/``, so pages can show plots and link JSON.
* ``SUMMARY.md``: the navigation (``mkdocs-literate-nav``): the hand-written pages in reading
  order, then every other page of each folder, so no page is left out.

Nothing here is a figure: every number comes from the registry, a parser, the schema or a
results file.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import shutil
import signal
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mkdocs_gen_files

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
HUB_SUCCESS = REPO / "benchmarks" / "results" / "hub_success.json"
#: families whose example episode is not played at build time, and why
NO_EXAMPLE = {
    "webshop": "its HTML variant needs a browser; WebShop-v0's pages are long",
    "judged_answer": "its reward needs an LLM judge",
    "mcp": "it starts an MCP server",
    "rollenv": "a mixture plays the other families' episodes",
}
EXAMPLE_TURNS = 6
EXAMPLE_SECONDS = 20

#: the hand-written pages, in reading order: (title, path) or (section, [entries])
NAV: list[tuple[str, Any]] = [
    ("Home", "index.md"),
    (
        "Getting started",
        [
            ("Install", "getting-started/install.md"),
            ("The main job", "getting-started/main-job.md"),
            ("Your first environment", "getting-started/first-env.md"),
            ("Your first training run", "getting-started/first-training.md"),
            ("A model of your own", "getting-started/own-model.md"),
            ("On GPUs", "getting-started/gpus.md"),
        ],
    ),
    (
        "Environments",
        [
            ("Overview", "environments/index.md"),
            ("The env contract", "environments/contract.md"),
            ("Rewards", "environments/rewards.md"),
            ("Envs over the network", "environments/over-the-network.md"),
            ("Tool-calling agents", "environments/tool-calls.md"),
            ("Multi-agent games and self-play", "environments/multi-agent.md"),
            ("Families", "@families"),
        ],
    ),
    (
        "Training",
        [
            ("Algorithms", "training/algorithms.md"),
            ("Presets", "training/presets.md"),
            ("Agent programs", "training/agent-programs.md"),
            ("Ray rollouts", "training/ray.md"),
            ("Asynchronous training", "training/async-training.md"),
            ("Train workers and strategies", "training/strategies.md"),
            ("Checkpoints and resume", "training/checkpoints.md"),
            ("Reward workers and the judge", "training/reward-workers.md"),
        ],
    ),
    (
        "Serving",
        [
            ("A model: roll-agent serve", "serving/openai-server.md"),
            ("An env: HTTP, OpenEnv, MCP", "serving/env-server.md"),
            ("The leaderboard", "leaderboard.md"),
        ],
    ),
    (
        "Extending",
        [
            ("Add an environment", "extending/add-env.md"),
            ("Add an algorithm or a strategy", "extending/algorithm-and-strategy.md"),
            ("Add a reward worker", "extending/reward-worker.md"),
        ],
    ),
    (
        "Reference",
        [
            ("Command line", "reference/cli.md"),
            ("Config", "reference/config.md"),
            ("Python API", "reference/api.md"),
        ],
    ),
    ("Benchmarks", [("Summary", "benchmarks/index.md"), ("@rest", "benchmarks/")]),
    ("Changelog", "changelog.md"),
]


# ---------------------------------------------------------------------------------- families
def _hub_success() -> dict[str, dict[str, Any]]:
    """``benchmarks/hub_success.py``'s figures by id (``random`` and ``oracle``: success,
    episodes), and under ``"__command__"`` the command that measured them."""
    if not HUB_SUCCESS.is_file():
        return {}
    report = json.loads(HUB_SUCCESS.read_text())
    rows = dict(report.get("per_id", {}))
    rows["__command__"] = {"command": report.get("command", "python benchmarks/hub_success.py")}
    return rows


def _success(figures: dict[str, Any] | None) -> str:
    if not figures:
        return "-"
    return f"{100 * figures['success']:.0f}% of {figures['episodes']}"


@contextlib.contextmanager
def _time_limit(seconds: int) -> Iterator[None]:
    def stop(*_: Any) -> None:
        raise TimeoutError(f"longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _example_episode(env_id: str) -> str | None:
    """One oracle episode on seed 0, up to ``EXAMPLE_TURNS`` turns, as text; ``None`` where
    the family has no oracle or the episode cannot be played here."""
    import rollenv
    from rollenv.policies import has_oracle, oracle_for

    spec = rollenv.spec(env_id)
    if not has_oracle(spec):
        return None
    lines = []
    try:
        with _time_limit(EXAMPLE_SECONDS):
            env = rollenv.make(env_id)
            try:
                observation, info = env.reset(seed=0)
                policy = oracle_for(env)
                for turn in range(1, EXAMPLE_TURNS + 1):
                    action = policy.act(observation, info)
                    lines += [f"--- observation {turn}", observation.rstrip(), f">>> {action}"]
                    observation, reward, terminated, truncated, info = env.step(action)
                    lines.append(f"reward {reward:+.2f}")
                    if terminated or truncated:
                        lines += ["--- last observation", observation.rstrip(), "(episode over)"]
                        break
                else:
                    lines.append(f"(first {EXAMPLE_TURNS} turns shown)")
            finally:
                env.close()
    except Exception:  # noqa: BLE001 - a page without an example is better than no docs
        return None
    return "\n".join(lines)


def _class_of(spec: Any) -> type | None:
    try:
        entry = spec.load_entry_point()
    except Exception:  # noqa: BLE001 - a page without the class's docstring still lists the id
        return None
    return entry if inspect.isclass(entry) else None


def _family_docstring(family: str) -> str:
    import importlib

    name = "rollenv.mixture" if family == "rollenv" else f"environments.{family}"
    try:
        return inspect.getdoc(importlib.import_module(name)) or ""
    except ImportError:
        return ""


def _docstring_blocks(doc: str) -> list[str]:
    """A class docstring on a page: its first paragraph as prose, the rest (argument lists,
    notes, indented as written) as preformatted text."""
    first, _, rest = doc.partition("\n\n")
    return [first] if not rest.strip() else [first, "", "```text", rest.rstrip(), "```"]


def _kwargs(kwargs: dict[str, Any]) -> str:
    if not kwargs:
        return "-"
    return ", ".join(f"`{key}={value!r}`" for key, value in sorted(kwargs.items()))


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def family_page(family: str, specs: list[Any], unavailable: list[Any], hub: dict) -> str:
    """The page of one family."""
    out = [f"# {family}", ""]
    doc = _family_docstring(family)
    if doc:
        out += [doc, ""]
    out += [
        f"{len(specs)} ids here"
        + (f", {len(unavailable)} more unavailable here." if unavailable else "."),
        "",
        "| id | description | max turns | kwargs | random | oracle |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for spec in specs:
        row = hub.get(spec.id, {})
        turns = "-" if spec.max_episode_steps is None else str(spec.max_episode_steps)
        out.append(
            f"| `{spec.id}` | {_cell(spec.description)} | {turns} | {_kwargs(spec.kwargs)} | "
            f"{_success(row.get('random'))} | {_success(row.get('oracle'))} |"
        )
    command = hub.get("__command__", {}).get("command")
    out += [""]
    if command:
        out += [
            f"Random and oracle success: `{command}` (seeds 0 to N-1, greedy where it applies)."
        ]
    else:
        out += [
            "Random and oracle success: not measured in this build; "
            f"`python benchmarks/hub_success.py --family {family}` measures them."
        ]
    out += [""]
    if unavailable:
        out += ["## Unavailable here", "", "| id | why |", "| --- | --- |"]
        out += [f"| `{entry.id}` | {_cell(entry.reason)} |" for entry in unavailable]
        out += [""]
    classes: dict[type, list[str]] = defaultdict(list)
    for spec in specs:
        cls = _class_of(spec)
        if cls is not None:
            classes[cls].append(spec.id)
    out += ["## Environments", ""]
    for cls, ids in classes.items():
        out += [f"### `{cls.__name__}`", "", f"Ids: {', '.join(f'`{i}`' for i in ids[:12])}"]
        if len(ids) > 12:
            out[-1] += f" and {len(ids) - 12} more"
        out += ["", *_docstring_blocks(inspect.getdoc(cls) or "(no docstring)"), ""]
    if family in NO_EXAMPLE:
        out += ["## An example episode", "", f"Not played for this page: {NO_EXAMPLE[family]}.", ""]
    else:
        example = next(
            (text for spec in specs[:3] if (text := _example_episode(spec.id)) is not None), None
        )
        if example is not None:
            shown = next(spec.id for spec in specs[:3])
            out += [
                "## An example episode",
                "",
                f"The family's oracle on seed 0 of an id of the family (`roll-agent play {shown} "
                "--policy oracle` shows one live):",
                "",
                "```text",
                example,
                "```",
                "",
            ]
    return "\n".join(out)


def write_family_pages() -> list[str]:
    import rollenv

    hub = _hub_success()
    by_family: dict[str, list[Any]] = defaultdict(list)
    missing: dict[str, list[Any]] = defaultdict(list)
    for spec in rollenv.registry.values():
        by_family[spec.family or "other"].append(spec)
    for entry in rollenv.registry.unavailable.values():
        missing[entry.family or "other"].append(entry)
    pages = []
    for family in sorted(set(by_family) | set(missing)):
        specs = sorted(by_family[family], key=lambda spec: spec.id)
        unavailable = sorted(missing[family], key=lambda entry: entry.id)
        path = f"environments/{family}.md"
        with mkdocs_gen_files.open(path, "w") as page:
            page.write(family_page(family, specs, unavailable, hub))
        pages.append(path)
    return pages


# ---------------------------------------------------------------------------------- reference
def write_cli_reference() -> None:
    """Every command's ``--help``, as the parser prints it at 100 columns."""
    os.environ["COLUMNS"] = "100"
    from trainer.cli.main import build_parser

    parser = build_parser()
    out = [
        "# Command line",
        "",
        "`roll-agent` is the one command; each section is a subcommand's `--help`, generated "
        "from its parser. `roll-agent COMMAND --help` prints the same.",
        "",
        "```text",
        parser.format_help().rstrip(),
        "```",
        "",
    ]
    commands = parser._subparsers._group_actions[0].choices  # noqa: SLF001 - argparse's own
    for name, command in commands.items():
        out += [f"## `roll-agent {name}`", "", "```text", command.format_help().rstrip(), "```"]
        nested = getattr(command, "_subparsers", None)
        if nested is not None:
            for sub_name, sub in nested._group_actions[0].choices.items():  # noqa: SLF001
                out += [
                    "",
                    f"### `roll-agent {name} {sub_name}`",
                    "",
                    "```text",
                    sub.format_help().rstrip(),
                    "```",
                ]
        out.append("")
    with mkdocs_gen_files.open("reference/cli.md", "w") as page:
        page.write("\n".join(out))


def write_config_reference() -> None:
    """Every config field, section by section, from the schema's docstrings."""
    from trainer.config_reference import config_fields

    out = [
        "# Config",
        "",
        "Every field of the training config, generated from the schema's own field "
        "descriptions (`trainer/config.py`). Set any of them in a YAML file (`--config`) or on "
        "the command line (`--set KEY=VALUE`); `roll-agent config KEY` prints the same, and "
        "`roll-agent config --env sokoban` a preset's values.",
        "",
    ]
    table_open = False
    for field in config_fields():
        if field.section:
            out += ["", f"## `{field.key}`", "", field.description, ""]
            out += ["| key | default | allowed | description |", "| --- | --- | --- | --- |"]
            table_open = True
            continue
        if not table_open:
            out += ["| key | default | allowed | description |", "| --- | --- | --- | --- |"]
            table_open = True
        out.append(
            f"| `{field.key}` | `{_cell(field.default)}` | {_cell(field.allowed)} | "
            f"{_cell(field.description)} |"
        )
    with mkdocs_gen_files.open("reference/config.md", "w") as page:
        page.write("\n".join(out) + "\n")


# ---------------------------------------------------------------------------------- results
def copy_results() -> None:
    """``benchmarks/results/**`` as ``results/**`` of the site."""
    root = REPO / "benchmarks" / "results"
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in {".png", ".json", ".svg", ".log"}:
            target = f"results/{path.relative_to(root).as_posix()}"
            with mkdocs_gen_files.open(target, "wb") as copy, path.open("rb") as source:
                shutil.copyfileobj(source, copy)


# ---------------------------------------------------------------------------------- navigation
def _title(path: Path) -> str:
    for line in path.read_text().splitlines():
        if line.startswith("# "):
            return line[2:].strip().strip("`")
    return path.stem.replace("-", " ").replace("_", " ")


def write_summary(family_pages: list[str]) -> None:
    """``SUMMARY.md``: the reading order of ``NAV``, then the rest of each folder."""
    listed: set[str] = set()

    def entry(title: str, target: Any, depth: int) -> list[str]:
        pad = "    " * depth
        if isinstance(target, list):
            lines = [f"{pad}* {title}"]
            for sub_title, sub_target in target:
                lines += entry(sub_title, sub_target, depth + 1)
            return lines
        if target == "@families":
            lines = [f"{pad}* {title}"]
            for path in family_pages:
                listed.add(path)
                lines.append(f"{pad}    * [{Path(path).stem}]({path})")
            return lines
        if title == "@rest":
            folder = DOCS / target
            lines = []
            rest = [
                p
                for p in sorted(folder.glob("*.md"))
                if p.relative_to(DOCS).as_posix() not in listed
            ]
            for path in sorted(rest, key=_title):
                relative = path.relative_to(DOCS).as_posix()
                listed.add(relative)
                lines.append(f"{pad}* [{_title(path)}]({relative})")
            return lines
        listed.add(target)
        return [f"{pad}* [{title}]({target})"]

    lines: list[str] = []
    for title, target in NAV:
        lines += entry(title, target, 0)
    others = [
        path.relative_to(DOCS).as_posix()
        for path in sorted(DOCS.rglob("*.md"))
        if not path.relative_to(DOCS).as_posix().startswith("_")
        and path.relative_to(DOCS).as_posix() not in listed
        and path.name != "SUMMARY.md"
        and "results" not in path.relative_to(DOCS).parts
    ]
    if others:
        lines.append("* More")
        lines += [f"    * [{_title(DOCS / path)}]({path})" for path in others]
    with mkdocs_gen_files.open("SUMMARY.md", "w") as nav:
        nav.write("\n".join(lines) + "\n")


families = write_family_pages()
write_cli_reference()
write_config_reference()
copy_results()
write_summary(families)
