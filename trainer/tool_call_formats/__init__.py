"""Tool-call formats per model family, in a registry: ``env.tool_call_format`` names one.

* ``hermes``: ``<tool_call>{"name", "arguments"}</tool_call>`` (Qwen2.5, Qwen3, Hermes).
* ``llama3-json``: the reply is ``{"name", "parameters"}`` (Llama 3.1 to 3.3).
* ``mistral``: ``[TOOL_CALLS] [{"name", "arguments"}]``.
* ``smollm2``: Hermes' tags with rollenv's own rendering (tools in the system message, results
  in a user message): SmolLM2's chat template has no ``tools`` branch.

A format renders through the template's own ``tools`` branch where it has one
(:func:`template_takes_tools`), else with its own plain messages.

Example:
    >>> fmt = tool_call_format("smollm2")
    >>> fmt.parse('<tool_call>{"name": "move", "arguments": {"direction": "Up"}}</tool_call>'
    ...           ).message()["tool_calls"][0]["function"]["name"]
    'move'
    >>> try:
    ...     tool_call_format("hermse")
    ... except LookupError as error:
    ...     print(str(error).split("(")[1])
    got 'hermse'; did you mean 'hermes'?)
"""

from __future__ import annotations

from typing import Any

from trainer.named_registry import NamedRegistry
from trainer.tool_call_formats.format import (
    Call,
    ParsedReply,
    ToolCallFormat,
    template_takes_tools,
)
from trainer.tool_call_formats.hermes import HermesFormat
from trainer.tool_call_formats.llama3 import Llama3JsonFormat
from trainer.tool_call_formats.mistral import MistralFormat

__all__ = [
    "TOOL_CALL_FORMATS",
    "Call",
    "ParsedReply",
    "ToolCallFormat",
    "register_tool_call_format",
    "template_takes_tools",
    "tool_call_format",
    "tool_call_format_for",
]

_REGISTRY = NamedRegistry[ToolCallFormat]("tool-call format", LookupError)
#: every registered format by name (read-only)
TOOL_CALL_FORMATS = _REGISTRY.view


def register_tool_call_format(fmt: ToolCallFormat, *, replace: bool = False) -> ToolCallFormat:
    """Adds a format (a :class:`ToolCallFormat` subclass instance) under its name."""
    return _REGISTRY.add(fmt, replace=replace)


def tool_call_format(name: str) -> ToolCallFormat:
    """The format called ``name``; an unknown name lists the registered ones."""
    return _REGISTRY.get(name)


def tool_call_format_for(name: str, tokenizer: Any) -> ToolCallFormat:
    """``name``'s format, or for ``"auto"``: ``hermes`` where the tokenizer's chat template has
    a tools branch of its own, else ``smollm2`` (rollenv's rendering for templates without)."""
    if name != "auto":
        return tool_call_format(name)
    return tool_call_format("hermes" if template_takes_tools(tokenizer) else "smollm2")


register_tool_call_format(HermesFormat("hermes", "<tool_call> tags (Qwen2.5, Qwen3, Hermes)"))
register_tool_call_format(
    Llama3JsonFormat("llama3-json", "bare JSON calls (Llama 3.1-3.3)", arguments_key="parameters")
)
register_tool_call_format(MistralFormat("mistral", "[TOOL_CALLS] and a JSON list (Mistral)"))
register_tool_call_format(
    HermesFormat(
        "smollm2",
        "<tool_call> tags, tools in the system message (SmolLM2: no tools in its template)",
        always_own_rendering=True,
    )
)
