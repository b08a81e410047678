"""The test program run in the sandbox: the candidate's code, then each test on its own.

``check(candidate)``'s top-level statements that hold an ``assert`` are the tests; the others
are set-up, run in order. Each test's outcome is printed as one JSON line the moment it is
known, so a run killed at its deadline still reports the tests before the one that hung.
"""

from __future__ import annotations

import ast
import functools
import marshal

from rollenv import thread_safe_ast

RESULT_PREFIX = "@@test-result-"

# Runs inside the sandbox. It imports only ``marshal`` and ``sys``, both built into the
# interpreter (``traceback`` when the candidate itself fails): the host splits ``check`` into
# statements (``check_statements``), so the program needs no ``ast``, and it reads its input with
# ``marshal`` and writes each result's text as hex, so it needs no ``json``, whose import (``re``,
# ``enum``) was a large share of a short program's run (benchmarks/sandbox.py).
_PROGRAM = rf"""
import marshal, sys
_candidate_source, _test_source, _entry, _nonce, _arg, _statements = marshal.loads(
    sys.stdin.buffer.read())
def _report(index, passed, detail="", _out=sys.__stdout__, _mark="{RESULT_PREFIX}" + _nonce + " "):
    _hex = detail[-2000:].encode("utf-8", "backslashreplace").hex()
    _out.write(_mark + str(index) + (" 1 " if passed else " 0 ") + _hex + "\n")
    _out.flush()
def _message(error):
    kind = type(error)
    name = kind.__qualname__ if kind.__module__ in ("builtins", "__main__") else (
        kind.__module__ + "." + kind.__qualname__)
    text = str(error)
    return name + ": " + text if text else name
del _nonce
_space = {{"__name__": "__candidate__"}}
try:
    exec(compile(_candidate_source, "solution.py", "exec"), _space)
    _candidate = _space[_entry]
except BaseException:
    import traceback
    _report(-1, False, traceback.format_exc(limit=3))
    raise SystemExit(0)
# the tests see the solution's module too: some call helpers the prompt defined
_tests = dict(_space, __name__="__tests__")
exec(compile(_test_source, "tests.py", "exec"), _tests)
_tests[_arg] = _candidate
_index = 0
for _code, _detail in _statements:
    try:
        exec(compile(_code, "check", "exec"), _tests)
        if _detail is not None:
            _report(_index, True)
    except BaseException as _error:
        if _detail is not None:
            _report(_index, False, _detail + "\n" + _message(_error))
    _index += _detail is not None
"""


def harness_program() -> str:
    """The program's source (it reads what ``harness_stdin`` wrote)."""
    return _PROGRAM


@functools.lru_cache(maxsize=256)  # a problem's tests are split once, not at every answer
def check_statements(test: str) -> tuple[str, tuple[tuple[str, str | None], ...]]:
    """``check``'s parameter name and its top-level statements, in order, each as its source
    and, for a test (a statement holding an ``assert``), the text a failure shows (else ``None``).

    Example:
        >>> check_statements("def check(f):\\n    x = 1\\n    assert f(x) == 2")
        ('f', (('x = 1', None), ('assert f(x) == 2', 'assert f(x) == 2')))
    """
    tree = thread_safe_ast.parse(test)
    check = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None
    )
    if check is None:
        return "candidate", ()
    arg = check.args.args[0].arg if check.args.args else "candidate"
    statements = []
    for statement in check.body:
        is_test = any(isinstance(n, ast.Assert) for n in ast.walk(statement))
        detail = (ast.get_source_segment(test, statement) or "").strip() if is_test else None
        statements.append((ast.unparse(statement), detail))
    return arg, tuple(statements)


def harness_stdin(candidate: str, test: str, entry_point: str, nonce: str) -> bytes:
    """The program's input, in ``marshal``'s format version 4 (read by any Python 3.4 or later);
    ``nonce`` marks its result lines (see ``parse_results``)."""
    arg, statements = check_statements(test)
    return marshal.dumps((candidate, test, entry_point, nonce, arg, statements), 4)


def count_tests(test: str) -> int:
    """Number of tests in a test source: top-level statements of ``check`` with an assert."""
    return sum(detail is not None for _, detail in check_statements(test)[1])


def parse_results(stdout: str, nonce: str) -> list[tuple[int, bool, str]]:
    """The per-test lines the program printed, in order.

    Result lines carry a fresh random ``nonce`` that the harness hides from the candidate's
    globals, so printing a fake "passed" line takes deliberate digging into the harness's
    frames, not a lucky guess. (The candidate runs in the harness's process, so a determined
    one can still find it.)
    """
    results = []
    mark = f"{RESULT_PREFIX}{nonce} "
    for line in stdout.splitlines():
        if line.startswith(mark):
            index, passed, detail = (line[len(mark) :].split(" ") + ["", ""])[:3]
            try:
                text = bytes.fromhex(detail).decode("utf-8", "replace")
                results.append((int(index), passed == "1", text))
            except ValueError:
                continue
    return results
