"""Code, docstrings, presets and ``--help`` keep the reasons for a choice, not its history: no
issue numbers, dates or machine names, which go stale (figures belong to the benchmark that
measured them; the changelog keeps the history)."""

from __future__ import annotations

import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("rollenv", "environments", "trainer", "sandboxes", "leaderboard")
HISTORY = re.compile(
    r"\bissue #?\d+"  # an issue number
    r"|\b20\d\d-\d\d-\d\d\b"  # a date
    r"|\b(H100|H200|EPYC|Xeon)\b"  # a machine
    r"|\blent (a |an )?(GPU|H100|H200|machine)",
    re.IGNORECASE,
)


def _sources() -> list[Path]:
    return sorted(
        path
        for package in PACKAGES
        for pattern in ("*.py", "*.yaml")
        for path in (REPO_ROOT / package).rglob(pattern)
        if "__pycache__" not in path.parts
    )


def _history(text: str, pattern: re.Pattern[str] = HISTORY) -> list[str]:
    return [
        f"line {number}: {line.strip()}"
        for number, line in enumerate(text.splitlines(), 1)
        if pattern.search(line)
    ]


def test_the_pattern_finds_history() -> None:
    number = 27  # written apart, so this file holds no issue number itself
    assert _history(f"# fixed in issue {number}\nok\n# seen on a lent H100 (2026-11-26)\n") == [
        f"line 1: # fixed in issue {number}",
        "line 3: # seen on a lent H100 (2026-11-26)",
    ]
    assert _history("an issue with the tokenizer; H100-sized layers? no: 100 rows") == [
        "line 1: an issue with the tokenizer; H100-sized layers? no: 100 rows"
    ]  # a machine named as a size is a machine too
    assert _history("the issue: a reply of 20 tokens, seeds 2026 and 11") == []


def test_no_issue_numbers_dates_or_machines_in_code_docstrings_or_presets() -> None:
    sources = _sources()
    assert len(sources) > 200 and any(p.suffix == ".yaml" for p in sources)
    found = {
        str(path.relative_to(REPO_ROOT)): lines
        for path in sources
        if (lines := _history(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_no_history_in_the_command_line_help() -> None:
    from trainer.cli.main import build_parser

    parser = build_parser()
    texts = [parser.format_help()]
    for action in parser._subparsers._group_actions if parser._subparsers else []:
        texts += [sub.format_help() for sub in action.choices.values()]
    assert len(texts) > 5  # every command's help was read
    assert _history("\n".join(texts)) == []


DOC_HISTORY = re.compile(
    r"\bissue #?\d+"  # an issue number
    r"|\b20\d\d-\d\d-\d\d\b"  # a date
    r"|\b(January|February|March|April|May|June|July|August|September|October|November"
    r"|December) (\d{1,2}, )?20\d\d\b"
    r"|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b",  # a commit hash
    re.IGNORECASE,
)


def test_the_docs_pattern_finds_hashes_issue_numbers_and_dates() -> None:
    number = 5  # written apart, so this file holds no issue number itself
    text = f"fixed in c726af0\nsee issue {number}\non 2026-12-06\nin December 2026\n"
    text += "ok: 1e-5, 4096, decade, a1b2c3\n"
    assert [line.split(":")[0] for line in _history(text, DOC_HISTORY)] == [
        "line 1",
        "line 2",
        "line 3",
        "line 4",
    ]


def test_readme_and_docs_hold_no_hashes_issue_numbers_or_dates_outside_the_changelog() -> None:
    docs = REPO_ROOT / "docs"
    files = [REPO_ROOT / "README.md", REPO_ROOT / "mkdocs.yml"]
    files += [p for p in docs.rglob("*") if p.suffix in (".md", ".py", ".yml", ".yaml")]
    files = [p for p in files if p.name != "changelog.md"]
    assert len(files) > 20
    found = {
        str(path.relative_to(REPO_ROOT)): lines
        for path in files
        if (lines := _history(path.read_text(encoding="utf-8"), DOC_HISTORY))
    }
    assert found == {}
