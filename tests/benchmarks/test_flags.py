"""Every benchmark script takes the shared flags ``--json PATH`` and ``--quick``.

The scripts are found by globbing ``benchmarks/*.py`` for a ``__main__`` block, so a new
benchmark whose flags differ fails here. ``report`` (the flags) and ``provenance`` (the JSON
writer) are tested on their own below.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO_ROOT / "benchmarks"

#: Scripts another change is moving to the shared flags: xfail (strict, so the mark must go
#: once they take them).
NOT_YET_MOVED: dict[str, str] = {}


def benchmark_scripts() -> list[Path]:
    """Every ``benchmarks/*.py`` that runs as a script (it has a ``__main__`` block)."""
    return sorted(
        path
        for path in BENCHMARKS.glob("*.py")
        if re.search(r"""^if __name__ == ["']__main__["']:""", path.read_text(), re.MULTILINE)
    )


def script_params() -> list:
    """One param per script, the ones not yet moved marked xfail(strict=True)."""
    params = []
    for path in benchmark_scripts():
        reason = NOT_YET_MOVED.get(path.name)
        marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
        params.append(pytest.param(path, id=path.stem, marks=marks))
    return params


def test_the_glob_finds_the_benchmarks() -> None:
    names = {path.stem for path in benchmark_scripts()}
    expected = {"async_rollout", "env_throughput", "generation", "learning_sokoban"}
    assert expected | {"ray_memory", "trainer_step", "sandbox"} <= names
    assert not names & {"report", "provenance", "table"}  # modules, not scripts


@pytest.mark.slow
@pytest.mark.parametrize("script", script_params())
def test_script_takes_json_and_quick(script: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(script), "--help"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert re.search(r"--json\b", result.stdout), result.stdout
    assert re.search(r"--quick\b", result.stdout), result.stdout
    assert not re.search(r"--out\b", result.stdout), "--out is --json (or a named folder flag)"


# --------------------------------------------------------------------------- the modules
@pytest.fixture
def benchmark_module(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], ModuleType]:
    """Imports a module of ``benchmarks/`` by its bare name, as the scripts do."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))

    def load(name: str) -> ModuleType:
        return importlib.import_module(name)

    return load


def make_parser(report: ModuleType, default_json: Path) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--model", default="big")
    report.add_common_arguments(parser, default_json=default_json, quick="1 repeat")
    return parser


def test_quick_sets_its_defaults_and_given_flags_win(benchmark_module, tmp_path: Path) -> None:
    report = benchmark_module("report")
    parser = make_parser(report, tmp_path / "bench.json")
    quick = {"repeats": 1, "model": "tiny"}

    full = report.parse_arguments(parser, [], quick)
    assert (full.quick, full.repeats, full.model, full.json) == (
        False,
        5,
        "big",
        tmp_path / "bench.json",
    )
    short = report.parse_arguments(parser, ["--quick"], quick)
    assert (short.repeats, short.model, short.json) == (1, "tiny", tmp_path / "bench_quick.json")
    given = ["--repeats", "3", "--quick", "--json", str(tmp_path / "mine.json")]
    mixed = report.parse_arguments(parser, given, quick)
    assert (mixed.repeats, mixed.model, mixed.json) == (3, "tiny", tmp_path / "mine.json")
    assert report.parse_arguments(parser, [], quick).repeats == 5  # the parser is unchanged


def test_quick_defaults_must_name_flags(benchmark_module, tmp_path: Path) -> None:
    report = benchmark_module("report")
    parser = make_parser(report, tmp_path / "bench.json")
    with pytest.raises(ValueError, match="repeat"):
        report.parse_arguments(parser, ["--quick"], {"repeat": 1})


def test_help_names_both_flags_and_the_defaults(benchmark_module) -> None:
    report = benchmark_module("report")
    text = make_parser(report, report.RESULTS_DIR / "bench.json").format_help()
    assert "--json PATH" in text and "--quick" in text
    assert "benchmarks/results/bench.json" in text
    assert "benchmarks/results/bench_quick.json" in text


def test_write_report_adds_the_provenance(
    benchmark_module, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    provenance = benchmark_module("provenance")
    path = tmp_path / "deeper" / "bench.json"
    written = provenance.write_report(path, {"figure": 1.5, "where": tmp_path}, ["not-a-dist"])

    on_disk = json.loads(path.read_text())
    assert on_disk == json.loads(json.dumps(written, default=str))
    assert on_disk["figure"] == 1.5 and on_disk["where"] == str(tmp_path)
    assert set(provenance.PROVENANCE_KEYS) <= set(on_disk)
    assert {"python", "rollenv", "not-a-dist"} <= set(on_disk["versions"])
    assert on_disk["versions"]["not-a-dist"] is None
    assert on_disk["machine"]["cpu_count"] >= 1
    assert on_disk["revision"] is None or len(on_disk["revision"]["commit"]) == 40
    assert capsys.readouterr().out == f"raw numbers: {path}\n"

    provenance.write_report(path, {"figure": 2}, announce=False)
    assert capsys.readouterr().out == ""
    assert json.loads(path.read_text())["figure"] == 2


def test_write_report_refuses_a_provenance_key(benchmark_module, tmp_path: Path) -> None:
    provenance = benchmark_module("provenance")
    with pytest.raises(ValueError, match="machine"):
        provenance.write_report(tmp_path / "bench.json", {"machine": "mine"})
    assert not (tmp_path / "bench.json").exists()


def test_report_hands_on_the_one_writer(benchmark_module) -> None:
    assert benchmark_module("report").write_report is benchmark_module("provenance").write_report
