"""MkDocs hooks: a benchmark page's ``<!-- measured: benchmarks/results/X.json -->`` marker
becomes the line that says when, where and how those figures were measured, read from the JSON
(``timestamp``, ``machine``, ``command``, as ``benchmarks/report.py`` writes them) or, for an
older file without them, from git. The page's source keeps no date and no machine name, so it
cannot go stale apart from its results file."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"<!--\s*measured:\s*(?P<path>[^\s>]+)\s*-->")


def _committed(path: Path) -> str:
    result = subprocess.run(
        ["git", "log", "-1", "--format=%cs", "--", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    return result.stdout.strip() or "not committed yet"


def measured_line(relative: str, depth: int = 0) -> str:
    """What the marker for ``relative`` (a path from the repository root) becomes on a page
    ``depth`` folders below the docs root.

    Raises:
        FileNotFoundError: the marker names no file (the build fails: no page cites a result
            that is not there).
    """
    path = REPO / relative
    if not path.is_file():
        raise FileNotFoundError(f"<!-- measured: {relative} -->: no such results file")
    report: dict[str, Any] = {}
    if path.suffix == ".json":
        try:
            loaded = json.loads(path.read_text())
        except json.JSONDecodeError:
            loaded = None
        report = loaded if isinstance(loaded, dict) else {}
    when = str(report.get("timestamp") or "")[:10] or _committed(path)
    machine = report.get("machine") or {}
    where = ""
    if isinstance(machine, dict) and machine.get("cpu_model"):
        cores = machine.get("cpus_usable") or machine.get("cpu_count")
        features = ", ".join(machine.get("cpu_features") or [])
        where = f" on {machine['cpu_model']}" + (f", {cores} cores" if cores else "")
        where += f" ({features})" if features else ""
    command = report.get("command")
    if isinstance(command, list):
        command = " ".join(command)
    how = f"; `{command}`" if command else ""
    link = ""
    if relative.startswith("benchmarks/results/"):
        inside = relative.removeprefix("benchmarks/results/")
        link = f" Results: [{path.name}]({'../' * depth}results/{inside})."
    return f"*Measured {when}{where}{how}.{link}*"


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    depth = page.file.src_uri.count("/")
    return MARKER.sub(lambda match: measured_line(match.group("path"), depth), markdown)
