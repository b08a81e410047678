"""``thread_safe_ast.parse``: one thread parses at a time, and the hub parses only through it.

The race it guards against (python/cpython#106905) shows up about once in ten seconds of four
threads parsing while a fifth makes garbage with finalizers, too rarely to test directly. These
tests check the two things that prevent it instead.
"""

from __future__ import annotations

import ast
import threading
import time
from pathlib import Path

import pytest

from rollenv import thread_safe_ast

REPO = Path(__file__).resolve().parents[2]


def test_parses_from_many_threads_never_overlap(monkeypatch: pytest.MonkeyPatch) -> None:
    inside = 0
    most_inside = 0
    count_lock = threading.Lock()
    real_parse = ast.parse

    def slow_parse(*args: object, **kwargs: object) -> ast.AST:
        nonlocal inside, most_inside
        if threading.current_thread() is threading.main_thread():  # pytest's own parsing
            return real_parse(*args, **kwargs)
        with count_lock:
            inside += 1
            most_inside = max(most_inside, inside)
        time.sleep(0.01)  # long enough for every other thread to try to come in
        with count_lock:
            inside -= 1
        return real_parse(*args, **kwargs)

    monkeypatch.setattr(thread_safe_ast.ast, "parse", slow_parse)
    trees: list[ast.AST] = []
    threads = [
        threading.Thread(target=lambda: trees.append(thread_safe_ast.parse("x = 1")))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(trees) == 8
    assert most_inside == 1


def test_eval_mode_returns_an_expression() -> None:
    tree = thread_safe_ast.parse("2 ** 3", mode="eval")
    assert isinstance(tree, ast.Expression)
    assert eval(compile(tree, "<test>", "eval")) == 8


@pytest.mark.parametrize("package", ["rollenv", "environments", "sandboxes", "trainer"])
def test_no_module_calls_ast_parse_directly(package: str) -> None:
    allowed = {
        REPO / "rollenv" / "thread_safe_ast.py",
        REPO / "sandboxes" / "repl_driver.py",  # runs alone inside the sandbox, stdlib only
    }
    offenders = []
    for path in sorted((REPO / package).rglob("*.py")):
        if path in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "parse"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "ast"
            ):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == [], f"use rollenv.thread_safe_ast.parse: {offenders}"
