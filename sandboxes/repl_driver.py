"""The Python REPL that a ``Session`` runs inside the sandbox (stdlib only, run as a script).

Protocol: the host writes one JSON object per line, ``{"code": str, "max_output": int}``, on
stdin; the driver runs the code in one namespace kept across requests, with file descriptors 1
and 2 (so child processes too) redirected to capture files, and answers one JSON line
``{"stdout", "stderr", "exit_code", "truncated"}`` on a private copy of the original stdout.
Like a notebook cell, a final expression's ``repr`` is printed. Before the first request the
driver answers ``{"ready": true}``, so the host can start a call's deadline only once the
interpreter is up.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import sys
import traceback

MARK = "\x1esandbox-reply\x1e"


def _read_capped(path: str, limit: int) -> tuple[str, bool]:
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    return data[:limit].decode("utf-8", "replace"), len(data) > limit


def _run(code: str, namespace: dict) -> int:
    try:
        tree = ast.parse(code, "<cell>", "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, "<cell>", "exec"), namespace)
        if last is not None:
            value = eval(compile(last, "<cell>", "eval"), namespace)
            if value is not None:
                print(repr(value))
        return 0
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 1
    except BaseException as error:
        # drop the driver's own frame: the traceback starts in the cell
        tb = error.__traceback__.tb_next if error.__traceback__ else None
        traceback.print_exception(type(error), error, tb)
        return 1


def main() -> None:
    reply = os.fdopen(os.dup(1), "w", encoding="utf-8")
    requests = sys.stdin
    out_path, err_path = os.path.abspath(".repl-stdout"), os.path.abspath(".repl-stderr")
    namespace: dict = {"__name__": "__main__"}
    reply.write(MARK + json.dumps({"ready": True}) + "\n")
    reply.flush()
    for line in requests:
        request = json.loads(line)
        limit = int(request.get("max_output", 1 << 20))
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False, buffering=1)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False, buffering=1)  # noqa: SIM115
        exit_code = _run(request["code"], namespace)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        stdout, cut_out = _read_capped(out_path, limit)
        stderr, cut_err = _read_capped(err_path, limit)
        answer = {
            "stdout": stdout,
            "stderr": stderr,
            "exit_code": exit_code,
            "truncated": cut_out or cut_err,
        }
        reply.write(MARK + json.dumps(answer) + "\n")
        reply.flush()


if __name__ == "__main__":
    main()
