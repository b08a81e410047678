"""Llama 3.x JSON calls: the reply is the call itself, ``{"name": ..., "parameters": {...}}``
(several separated by ``;``), optionally after ``<|python_tag|>``.

Example:
    >>> llama = Llama3JsonFormat("llama3-json", "JSON")
    >>> llama.parse('{"name": "move", "parameters": {"direction": "Up"}}').calls
    (Call(name='move', arguments={'direction': 'Up'}),)
    >>> llama.parse("Up").calls
    ()
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trainer.tool_call_formats.format import Call, ParsedReply, ToolCallFormat
from trainer.tool_call_formats.hermes import read_call

PYTHON_TAG = "<|python_tag|>"


@dataclass(frozen=True)
class Llama3JsonFormat(ToolCallFormat):
    """Calls as bare JSON objects (see the module docstring)."""

    def write_calls(self, calls: Sequence[Call]) -> str:
        return "; ".join(json.dumps({"name": c.name, "parameters": c.arguments}) for c in calls)

    def calls_grammar(self, call: dict[str, Any], parallel: bool) -> str:
        start = 'start: call ("; " call)*' if parallel else "start: call"
        return f"{start}\ncall: %json {json.dumps(call)}\n"

    def parse(self, text: str) -> ParsedReply:
        body = text.strip().removeprefix(PYTHON_TAG).strip()
        if not body.startswith("{"):
            return ParsedReply(text.strip() or None)
        decoder, calls, at = json.JSONDecoder(), [], 0
        while at < len(body):
            try:
                _, end = decoder.raw_decode(body, at)
            except (ValueError, RecursionError):
                return ParsedReply(text.strip(), (), "a tool call is not JSON")
            call = read_call(body[at:end])
            if isinstance(call, str):
                return ParsedReply(text.strip(), (), call)
            calls.append(call)
            at = end
            while at < len(body) and body[at] in " \t\r\n;":
                at += 1
        return ParsedReply(None, tuple(calls))
