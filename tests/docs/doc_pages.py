"""The docs' pages and their code blocks, as the docs tests read them.

A page's ```` ```python ```` blocks run in order in one namespace, like a doctest; a block that
cannot run in CI (a GPU, the network, an hour) has ``<!-- skip: the reason -->`` on the line
before its fence. A ```` ```sh ```` block with ``<!-- runnable -->`` before it runs each of its
command lines in a shell.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"

FENCE = re.compile(
    r"(?:^[ \t]*<!--\s*(?P<marker>skip|runnable)\s*:?\s*(?P<reason>[^>]*?)\s*-->[ \t]*\n)?"
    r"^(?P<indent>[ \t]*)```(?P<language>[\w+-]*)[^\n]*\n(?P<code>.*?)^(?P=indent)```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)


@dataclass(frozen=True)
class CodeBlock:
    """One fenced block of a page.

    Attributes:
        page: the page it is on.
        line: the line of its first code line (1-based).
        language: the fence's language (``python``, ``sh``...).
        code: its text, dedented.
        marker: ``"skip"``, ``"runnable"`` or ``None``.
        reason: why it is skipped.
    """

    page: Path
    line: int
    language: str
    code: str
    marker: str | None
    reason: str


def pages() -> list[Path]:
    """README.md and every Markdown page of ``docs/`` (the build's own folder aside)."""
    found = [REPO / "README.md"]
    found += sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.relative_to(DOCS).parts)
    return found


def code_blocks(page: Path, text: str | None = None) -> list[CodeBlock]:
    """The fenced blocks of ``page`` (or of ``text``, read as that page), in order."""
    text = page.read_text(encoding="utf-8") if text is None else text
    blocks = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start("code")) + 1
        blocks.append(
            CodeBlock(
                page=page,
                line=line,
                language=match.group("language").lower(),
                code=textwrap.dedent(match.group("code")),
                marker=match.group("marker"),
                reason=match.group("reason") or "",
            )
        )
    return blocks


def python_blocks(page: Path, text: str | None = None) -> list[CodeBlock]:
    """The page's Python blocks that run (not marked skip)."""
    return [
        block
        for block in code_blocks(page, text)
        if block.language in ("python", "py") and block.marker != "skip"
    ]


def run_python_blocks(blocks: list[CodeBlock]) -> None:
    """Runs ``blocks`` in order in one namespace; a failure's traceback names the page and the
    block's line (``docs/x.md:12``)."""
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for block in blocks:
        # blank lines first, so the traceback's line numbers are the page's own
        source = "\n" * (block.line - 1) + block.code
        exec(compile(source, str(block.page.relative_to(REPO)), "exec"), namespace)  # noqa: S102
