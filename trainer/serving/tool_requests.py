"""Tools in ``/v1/chat/completions``: the request's ``tools`` and ``tool_choice`` checked, and a
sampled reply turned into the assistant message (``tool_calls``) OpenAI returns.

``tool_choice`` ``"required"`` or a named function is kept by grammar-constrained decoding
(:func:`tool_grammar`): the reply is sampled within the grammar of calls to the tools (to the
named one alone), so it is calls, schema-valid, and nothing else. ``"auto"`` samples freely (the
model may answer in text) and ``"none"`` reads no calls.

A reply is read with the served model's tool-call format (``roll-agent serve
--tool-call-format``, ``auto`` by default: see :mod:`trainer.tool_call_formats`). Calls are
known only once a reply has ended, so a stream holds a reply back while tools are on and sends
it whole in its last chunk: the content, then each call with its id, name and arguments, as the
``openai`` client's stream accumulates them.

Example:
    >>> from trainer.tool_call_formats import tool_call_format
    >>> tools = [{"type": "function", "function": {"name": "move", "parameters": {
    ...     "type": "object", "properties": {"direction": {"type": "string"}}}}}]
    >>> check_tools(tools, "auto")
    >>> reply = tool_reply(tool_call_format("hermes"),
    ...     '<tool_call>{"name": "move", "arguments": {"direction": "Up"}}</tool_call>',
    ...     parallel=True)
    >>> reply.finish_reason, reply.message["tool_calls"][0]["function"]["arguments"]
    ('tool_calls', '{"direction": "Up"}')
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

from trainer.tool_call_formats import ToolCallFormat

__all__ = ["ToolReply", "ToolRequestError", "check_tools", "tool_grammar", "tool_reply"]

# OpenAI's rule for a function's name
_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


class ToolRequestError(ValueError):
    """A request whose ``tools`` or ``tool_choice`` cannot be served (a 400 with this text)."""


def check_tools(tools: list[Any] | None, tool_choice: Any) -> None:
    """Raises :class:`ToolRequestError` naming the first problem of ``tools`` and
    ``tool_choice``: an entry that is not a function, a bad name, a name given twice, a
    ``parameters`` that is not a JSON Schema, a choice that is not ``none``, ``auto``,
    ``required`` or a listed function."""
    import jsonschema

    names: list[str] = []
    for index, tool in enumerate(tools or []):
        where = f"tools[{index}]"
        if not isinstance(tool, dict) or tool.get("type") != "function":
            raise ToolRequestError(f'{where}: each tool must be {{"type": "function", ...}}')
        function = tool.get("function")
        if not isinstance(function, dict):
            raise ToolRequestError(f"{where}.function: must be an object with a name")
        name = function.get("name")
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ToolRequestError(
                f"{where}.function.name: must be 1 to 64 letters, digits, _ or -, got {name!r}"
            )
        if name in names:
            raise ToolRequestError(f"{where}.function.name: {name!r} is given twice")
        names.append(name)
        parameters = function.get("parameters", {"type": "object"})
        if not isinstance(parameters, dict):
            raise ToolRequestError(f"{where}.function.parameters: must be a JSON Schema object")
        try:
            jsonschema.validators.validator_for(parameters).check_schema(parameters)
        except jsonschema.SchemaError as error:
            raise ToolRequestError(
                f"{where}.function.parameters is not a valid JSON Schema: {error.message}"
            ) from None
    if tool_choice in (None, "none", "auto"):
        return
    if tool_choice == "required" or isinstance(tool_choice, dict):
        if not names:
            raise ToolRequestError(f"tool_choice {tool_choice!r} needs tools to call")
        if isinstance(tool_choice, dict):
            named = (tool_choice.get("function") or {}).get("name")
            if named not in names:
                raise ToolRequestError(
                    f"tool_choice names {named!r}, which is not among the tools ({names})"
                )
        return
    raise ToolRequestError(
        "tool_choice must be 'none', 'auto', 'required' or "
        f'{{"type": "function", "function": {{"name": ...}}}}, got {tool_choice!r}'
    )


def tool_grammar(
    fmt: ToolCallFormat, tools: list[Any] | None, tool_choice: Any, *, parallel: bool
) -> str | None:
    """The grammar a reply is sampled within (checked ``tools`` and ``tool_choice``): calls to
    the tools for ``"required"`` (one or more with ``parallel``), one call to the named function
    for a named choice, ``None`` (free sampling) otherwise.

    Example:
        >>> from trainer.tool_call_formats import tool_call_format
        >>> tools = [{"type": "function", "function": {"name": n}} for n in ("up", "down")]
        >>> grammar = tool_grammar(tool_call_format("hermes"), tools,
        ...                        {"type": "function", "function": {"name": "down"}},
        ...                        parallel=True)
        >>> '"down"' in grammar, '"up"' in grammar, tool_grammar(None, tools, "auto",
        ...                                                      parallel=True)
        (True, False, None)
    """
    if not tools or tool_choice in (None, "none", "auto"):
        return None
    if isinstance(tool_choice, dict):
        named = tool_choice["function"]["name"]
        chosen = [t for t in tools if t["function"]["name"] == named]
        return fmt.call_grammar(chosen, parallel=False)
    return fmt.call_grammar(tools, parallel=parallel)


@dataclass(frozen=True)
class ToolReply:
    """A reply as OpenAI returns it: the assistant message and the finish reason."""

    message: dict[str, Any]
    finish_reason: str | None

    def delta(self) -> dict[str, Any]:
        """The stream's one delta of the whole reply: content, then the calls with indexes."""
        delta: dict[str, Any] = {}
        if self.message.get("content"):
            delta["content"] = self.message["content"]
        if self.message.get("tool_calls"):
            delta["tool_calls"] = [
                {"index": index, **call} for index, call in enumerate(self.message["tool_calls"])
            ]
        return delta


def tool_reply(
    fmt: ToolCallFormat, text: str, *, parallel: bool, finish_reason: str | None = "stop"
) -> ToolReply:
    """The message ``text`` stands for: its calls (the first only unless ``parallel``), each
    with a fresh id, and ``finish_reason`` ``"tool_calls"``; text with no readable call is the
    content, with ``finish_reason`` as the engine gave it."""
    parsed = fmt.parse(text)
    if not parsed.calls:
        return ToolReply({"role": "assistant", "content": text}, finish_reason)
    calls = parsed.calls if parallel else parsed.calls[:1]
    message = {
        "role": "assistant",
        "content": parsed.content,
        "tool_calls": [
            {
                "id": f"call_{uuid.uuid4().hex[:24]}",
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in calls
        ],
    }
    return ToolReply(message, "tool_calls")
