"""The test program run in the sandbox: the candidate's code, then each test on its own.

``check(candidate)``'s top-level statements that hold an ``assert`` are the tests; the others
are set-up, run in order. Each test's outcome is printed as one JSON line the moment it is
known, so a run killed at its deadline still reports the tests before the one that hung.
"""

from __future__ import annotations

import ast
import json

RESULT_PREFIX = "@@test-result-"

# Runs inside the sandbox; formatted with the candidate, test source and entry point (as JSON).
_PROGRAM = rf"""
import ast, json, sys, traceback
_candidate_source, _test_source, _entry, _nonce = json.loads(sys.stdin.read())
def _report(index, passed, detail="", _out=sys.__stdout__, _mark="{RESULT_PREFIX}" + _nonce + " "):
    _out.write(_mark + json.dumps([index, passed, detail[-2000:]]) + "\n")
    _out.flush()
del _nonce
_space = {{"__name__": "__candidate__"}}
try:
    exec(compile(_candidate_source, "solution.py", "exec"), _space)
    _candidate = _space[_entry]
except BaseException:
    _report(-1, False, traceback.format_exc(limit=3))
    raise SystemExit(0)
# the tests see the solution's module too: some call helpers the prompt defined
_tests = dict(_space, __name__="__tests__")
exec(compile(_test_source, "tests.py", "exec"), _tests)
_tree = ast.parse(_test_source)
_check = next(n for n in _tree.body if isinstance(n, ast.FunctionDef) and n.name == "check")
_arg = _check.args.args[0].arg if _check.args.args else "candidate"
_tests[_arg] = _candidate
_index = 0
for _statement in _check.body:
    _module = ast.Module(body=[_statement], type_ignores=[])
    _is_test = any(isinstance(n, ast.Assert) for n in ast.walk(_statement))
    try:
        exec(compile(_module, "check", "exec"), _tests)
        if _is_test:
            _report(_index, True)
    except BaseException as _error:
        if _is_test:
            _detail = ast.get_source_segment(_test_source, _statement) or ""
            _message = traceback.format_exception_only(type(_error), _error)[-1].strip()
            _report(_index, False, _detail.strip() + "\n" + _message)
    _index += _is_test
"""


def harness_program() -> str:
    """The program's source (it reads candidate, tests and entry point from stdin as JSON)."""
    return _PROGRAM


def harness_stdin(candidate: str, test: str, entry_point: str, nonce: str) -> str:
    """The JSON the program reads; ``nonce`` marks its result lines (see ``parse_results``)."""
    return json.dumps([candidate, test, entry_point, nonce])


def count_tests(test: str) -> int:
    """Number of tests in a test source: top-level statements of ``check`` with an assert."""
    tree = ast.parse(test)
    check = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None
    )
    if check is None:
        return 0
    return sum(any(isinstance(n, ast.Assert) for n in ast.walk(s)) for s in check.body)


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
            try:
                index, passed, detail = json.loads(line[len(mark) :])
                results.append((int(index), bool(passed), str(detail)))
            except (ValueError, TypeError):
                continue
    return results
