"""The code the README and the docs name exists: every dotted name of our packages in backticks
(``trainer.training.pipeline.Pipeline``) and every path of the repository (``trainer/cli/main.py``).

Names are resolved by reading the modules' source (their top-level definitions and imports, and
one level into a class), so the check imports nothing and needs no extra."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from tests.docs.doc_pages import REPO, pages

PACKAGES = ("rollenv", "environments", "trainer", "leaderboard", "sandboxes")
DOTTED = re.compile(r"`((?:" + "|".join(PACKAGES) + r")(?:\.[A-Za-z_]\w*)+)(?:\(\))?`")
PATH = re.compile(
    r"`((?:" + "|".join(PACKAGES) + r"|benchmarks|examples|tests|docs|\.ci)/[\w./-]*)(?::\w+)?`"
)


@functools.cache
def _module_names(path: Path) -> frozenset[str]:
    """The names a module defines or imports at its top level."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.If):  # TYPE_CHECKING blocks and optional imports
            for inner in node.body + node.orelse:
                if isinstance(inner, ast.ImportFrom | ast.Import):
                    names.update((a.asname or a.name).split(".")[0] for a in inner.names)
    return frozenset(names)


@functools.cache
def _class_members(path: Path, class_name: str) -> frozenset[str]:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            members = set()
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    members.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    members.add(item.target.id)
                elif isinstance(item, ast.Assign):
                    members.update(t.id for t in item.targets if isinstance(t, ast.Name))
            return frozenset(members)
    return frozenset()  # imported from elsewhere: not followed


def _module_file(parts: list[str]) -> Path | None:
    base = REPO.joinpath(*parts)
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` names a module of ours, or a name in one (one level into a class)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = _module_file(parts[:cut])
        if module is None:
            continue
        rest = parts[cut:]
        if not rest:
            return True
        if rest[0] not in _module_names(module):
            if "__getattr__" not in _module_names(module):
                return False
            # a lazy attribute (a module ``__getattr__``): asked of the module itself
            import importlib

            return hasattr(importlib.import_module(".".join(parts[:cut])), rest[0])
        if len(rest) == 1:
            return True
        members = _class_members(module, rest[0])
        return not members or rest[1] in members  # a class defined here: its member must be
    return False


def _references(pattern: re.Pattern[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for page in pages():
        if page.name == "changelog.md":  # names what a thing was called before, on purpose
            continue
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for match in pattern.finditer(line):
                found.setdefault(match.group(1), []).append(f"{page.relative_to(REPO)}:{number}")
    return found


def test_the_check_tells_a_real_name_from_a_stale_one() -> None:
    assert resolves("trainer.training.pipeline.Pipeline.train_step")
    assert resolves("rollenv.make") and resolves("trainer.cli")
    assert not resolves("trainer.pipeline.Pipeline")  # the module moved
    assert not resolves("trainer.training.pipeline.Pipeline.no_such_method")


#: dotted names in the docs that are not code: entry-point groups
NOT_CODE = {"rollenv.envs"}


def test_every_dotted_name_in_the_docs_exists() -> None:
    references = _references(DOTTED)
    assert len(references) > 20
    missing = {
        name: where
        for name, where in references.items()
        if name not in NOT_CODE and not resolves(name)
    }
    assert missing == {}


def _generated_pages() -> set[str]:
    """The pages the docs build writes (``docs/_build/gen_pages.py``), which no checkout holds."""
    import rollenv

    families = {spec.family or "other" for spec in rollenv.registry.values()}
    families |= {entry.family or "other" for entry in rollenv.registry.unavailable.values()}
    return {f"docs/environments/{family}.md" for family in families} | {
        "docs/reference/cli.md",
        "docs/reference/config.md",
    }


def test_every_repository_path_in_the_docs_exists() -> None:
    references = _references(PATH)
    assert len(references) > 20
    generated = _generated_pages()
    missing = {
        path: where
        for path, where in references.items()
        if "*" not in path
        and "<" not in path
        and not re.search(r"-v\d+$", path)  # an env id of a namespace (rollenv/MyGame-v0)
        and path not in generated
        and not (REPO / path.rstrip("/")).exists()
    }
    assert missing == {}
