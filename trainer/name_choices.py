"""One message for a name that is not among the registered ones (algorithms, strategies).

Standard library only: the CLI and the config read the registries before torch is imported.

Example:
    >>> listed(["fsdp2", "deepspeed", "megatron"])
    'fsdp2, deepspeed or megatron'
    >>> unknown_name_message("gren", ["red", "green", "blue"])
    "Input should be 'red', 'green' or 'blue' (got 'gren'; did you mean 'green'?)"
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence


def listed(names: Sequence[str], conjunction: str = "or") -> str:
    """``a``, ``a or b``, ``a, b or c`` (or ``and``), as the one-line errors list choices."""
    if len(names) == 1:
        return names[0]
    return f"{', '.join(names[:-1])} {conjunction} {names[-1]}"


def unknown_name_message(given: str, names: Sequence[str]) -> str:
    """What is allowed, in pydantic's words, and the registered names closest to ``given``.

    Args:
        given: the name that is not registered.
        names: the registered names, in registration order.

    Returns:
        One line: ``Input should be 'a', 'b' or 'c' (got 'x')``, with ``did you mean`` and the
        closest names inside the parentheses when some are close.
    """
    allowed = listed([repr(name) for name in names])
    close = difflib.get_close_matches(str(given), list(names), n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(name) for name in close)}?" if close else ""
    return f"Input should be {allowed} (got {given!r}{hint})"
