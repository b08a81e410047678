"""Mistral's calls: ``[TOOL_CALLS]`` and a JSON list of ``{"name", "arguments"}`` objects.

Example:
    >>> mistral = MistralFormat("mistral", "[TOOL_CALLS]")
    >>> mistral.parse('[TOOL_CALLS] [{"name": "move", "arguments": {"direction": "Up"}}]').calls
    (Call(name='move', arguments={'direction': 'Up'}),)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trainer.tool_call_formats.format import Call, ParsedReply, ToolCallFormat
from trainer.tool_call_formats.hermes import read_call

MARKER = "[TOOL_CALLS]"


@dataclass(frozen=True)
class MistralFormat(ToolCallFormat):
    """Calls after ``[TOOL_CALLS]`` (see the module docstring)."""

    def write_calls(self, calls: Sequence[Call]) -> str:
        listed = [{"name": c.name, "arguments": c.arguments} for c in calls]
        return f"{MARKER} {json.dumps(listed)}"

    def calls_grammar(self, call: dict[str, Any], parallel: bool) -> str:
        # the list is one JSON value: its commas are the JSON's own, as json.dumps writes them
        style = call.get("x-guidance", {})
        calls = {"type": "array", "items": call, "minItems": 1, "x-guidance": style}
        if not parallel:
            calls["maxItems"] = 1
        return f'start: "{MARKER} " calls\ncalls: %json {json.dumps(calls)}\n'

    def parse(self, text: str) -> ParsedReply:
        before, marker, after = text.partition(MARKER)
        if not marker:
            return ParsedReply(text.strip() or None)
        try:
            listed = json.loads(after)
        except (ValueError, RecursionError):
            return ParsedReply(text.strip(), (), "the tool calls are not JSON")
        if not isinstance(listed, list) or not listed:
            return ParsedReply(text.strip(), (), "[TOOL_CALLS] needs a list of calls")
        calls = []
        for entry in listed:
            call = read_call(json.dumps(entry))
            if isinstance(call, str):
                return ParsedReply(text.strip(), (), call)
            calls.append(call)
        return ParsedReply(before.strip() or None, tuple(calls))
