"""Stubs: functions that ignore the problem, which a code reward must not pay.

Many HumanEval asserts pass on a function that returns a constant (``assert not
candidate(...)`` passes on ``None``), so a pass *rate* pays a stub. The code env therefore
rewards all-or-nothing (pass@1), and its optional partial credit counts only the asserts that
none of these stubs passes. ``rollenv.check_reward`` plays them as the family's task-ignoring
replies.

Example:
    >>> print(stub_source("add", "None"))
    def add(*args, **kwargs):
        return None
"""

from __future__ import annotations

#: what each stub returns, by name: constants of every common type, and the input handed back
STUB_RETURNS: dict[str, str] = {
    "stub returning None": "None",
    "stub returning True": "True",
    "stub returning False": "False",
    "stub returning 0": "0",
    "stub returning []": "[]",
    "stub returning ''": "''",
    "stub returning its input": "args[0] if args else None",
}


def stub_source(entry_point: str, returns: str) -> str:
    """A function named ``entry_point`` that takes any arguments and returns ``returns``."""
    return f"def {entry_point}(*args, **kwargs):\n    return {returns}"
