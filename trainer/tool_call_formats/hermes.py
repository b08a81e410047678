"""Hermes-style calls (Qwen2.5, Qwen3, Hermes, and our rendering for SmolLM2): each call is a
JSON object inside ``<tool_call>...</tool_call>``.

Example:
    >>> from trainer.tool_call_formats.format import Call
    >>> hermes = HermesFormat("hermes", "tags")
    >>> text = hermes.write_calls([Call("move", {"direction": "Up"})])
    >>> text
    '<tool_call>\\n{"name": "move", "arguments": {"direction": "Up"}}\\n</tool_call>'
    >>> hermes.parse("I push up. " + text).calls
    (Call(name='move', arguments={'direction': 'Up'}),)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rollenv.actions import tag_contents
from trainer.tool_call_formats.format import Call, ParsedReply, ToolCallFormat

OPENING, CLOSING = "<tool_call>", "</tool_call>"


def read_call(text: str) -> Call | str:
    """One call's JSON (``name`` and ``arguments``, the arguments an object or its JSON text),
    or why it is not one."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return "a tool call is not JSON"
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return "a tool call needs a name"
    arguments = data.get("arguments", data.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return f"the arguments of {data['name']} are not JSON"
    if not isinstance(arguments, dict):
        return f"the arguments of {data['name']} are not an object"
    return Call(data["name"], arguments)


@dataclass(frozen=True)
class HermesFormat(ToolCallFormat):
    """Calls in ``<tool_call>`` tags (see the module docstring)."""

    def write_calls(self, calls: Sequence[Call]) -> str:
        return "\n".join(
            f"{OPENING}\n{json.dumps({'name': c.name, 'arguments': c.arguments})}\n</tool_call>"
            for c in calls
        )

    def calls_grammar(self, call: dict[str, Any], parallel: bool) -> str:
        one = r'"<tool_call>\n" call "\n</tool_call>"'
        start = f"start: {one}" + (rf' ("\n" {one})*' if parallel else "")
        return f"{start}\ncall: %json {json.dumps(call)}\n"

    def parse(self, text: str) -> ParsedReply:
        if OPENING not in text:
            return ParsedReply(text.strip() or None)
        calls, problem = [], None
        # tag_contents reads each tag once: a regex retries every opening without a closing
        for body in tag_contents(text, "tool_call"):
            call = read_call(body.strip())
            if isinstance(call, str):
                problem = problem or call
            else:
                calls.append(call)
        if text.count(OPENING) != text.count(CLOSING):
            problem = problem or "a <tool_call> is not closed"
        if problem is not None or not calls:
            return ParsedReply(text.strip() or None, (), problem or "a <tool_call> is empty")
        content = _outside_calls(text).strip()
        return ParsedReply(content or None, tuple(calls))


def _outside_calls(text: str) -> str:
    """``text`` without its ``<tool_call>...</tool_call>`` parts."""
    parts, at = [], 0
    while (start := text.find(OPENING, at)) != -1:
        end = text.find(CLOSING, start)
        parts.append(text[at:start])
        at = end + len(CLOSING)
    parts.append(text[at:])
    return "".join(parts)
