"""``ToolCallFormat``: how one model family writes tool calls, and how its prompts show tools.

A format does two things:

* **Parse** the text a model sampled into an OpenAI assistant message (``content`` and
  ``tool_calls``), which a rollenv env in the ``tools`` format takes as its action. Text that
  holds no call, or a call that is not JSON, gives a message with no call and a ``problem``:
  the env then answers it as an invalid action (never an exception).
* **Render** a chat that holds ``tools``, assistant ``tool_calls`` and ``role: tool`` messages
  through a tokenizer's chat template. A template with a ``tools`` branch of its own gets them
  as they are; one without (SmolLM2's) gets plain messages written by the format: the tools
  listed in the system message, each call as the text the model would write, the results in a
  user message.

A format also gives the **grammar** of a reply made of calls only
(:meth:`ToolCallFormat.call_grammar`): the format's own syntax around a JSON Schema per call,
``name`` one of the tools' and the arguments their ``parameters``. Constrained decoding
samples within it (``tool_choice`` ``required`` or a named function), so every call is
schema-valid JSON from a model's first step.

Subclasses write the call syntax: :meth:`ToolCallFormat.write_calls`,
:meth:`ToolCallFormat.parse` and :meth:`ToolCallFormat.calls_grammar`; the rendering of a template
without tools is shared.
"""

from __future__ import annotations

import json
import weakref
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

Message = dict[str, Any]

__all__ = ["Call", "Message", "ParsedReply", "ToolCallFormat", "template_takes_tools"]

_PROBE_TOOL = "rollenv_probe_tool"
# calls sampled under a grammar are written as json.dumps writes them (and the prompts show)
_JSON_STYLE = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


_VALUES = ("enum", "const", "default", "examples")  # keywords whose values are data, not schemas


def closed_objects(schema: Any) -> Any:
    """``schema`` with ``additionalProperties: false`` on every object schema that lists
    ``properties`` and does not say whether others are allowed (a copy; the rest unchanged).

    Example:
        >>> closed_objects({"type": "object", "properties": {"a": {"type": "object"}}})
        {'type': 'object', 'properties': {'a': {'type': 'object'}}, 'additionalProperties': False}
    """
    if isinstance(schema, list):
        return [closed_objects(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    closed = {
        key: value if key in _VALUES else closed_objects(value) for key, value in schema.items()
    }
    if isinstance(schema.get("properties"), dict):  # its keys are names, not schemas
        closed["properties"] = {
            name: closed_objects(value) for name, value in schema["properties"].items()
        }
        closed.setdefault("additionalProperties", False)
    return closed


@dataclass(frozen=True)
class Call:
    """One tool call: the function's name and its arguments (a JSON object)."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ParsedReply:
    """What a sampled reply holds.

    Attributes:
        content: the text outside the calls (``None`` when there is none).
        calls: the calls, in order.
        problem: why a call-shaped part could not be read (``None`` when all could).
    """

    content: str | None
    calls: tuple[Call, ...] = ()
    problem: str | None = None

    def message(self, call_prefix: str = "call") -> Message:
        """The OpenAI assistant message, with an id per call (``call_1``, ``call_2``...)."""
        message: Message = {"role": "assistant", "content": self.content}
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": f"{call_prefix}_{number}",
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                }
                for number, call in enumerate(self.calls, start=1)
            ]
        return message


def template_takes_tools(tokenizer: PreTrainedTokenizerBase) -> bool:
    """Whether the tokenizer's chat template renders a ``tools`` list (it shows a probe tool's
    name); SmolLM2's ignores it. Probed once per tokenizer and template: every prompt asks."""
    known = _TAKES_TOOLS.setdefault(tokenizer, {})
    template = tokenizer.chat_template
    if template not in known:
        tools = [{"type": "function", "function": {"name": _PROBE_TOOL, "parameters": {}}}]
        try:
            text = tokenizer.apply_chat_template(
                [{"role": "user", "content": "u"}], tools=tools, tokenize=False
            )
        except Exception:  # noqa: BLE001 - a template that fails on tools does not take them
            text = ""
        known[template] = _PROBE_TOOL in text
    return known[template]


# tokenizer -> {chat template: whether it renders tools}; a tokenizer's entry goes with it
_TAKES_TOOLS: weakref.WeakKeyDictionary[Any, dict[str | None, bool]] = weakref.WeakKeyDictionary()


def calls_of(message: Mapping[str, Any]) -> list[Call]:
    """The calls of an OpenAI assistant message (arguments given as JSON text or an object)."""
    calls = []
    for entry in message.get("tool_calls") or []:
        function = entry["function"]
        arguments = function.get("arguments") or {}
        if isinstance(arguments, str):
            arguments = json.loads(arguments) if arguments.strip() else {}
        calls.append(Call(function["name"], arguments))
    return calls


@dataclass(frozen=True)
class ToolCallFormat(ABC):
    """One model family's tool-call syntax (see the module docstring).

    Attributes:
        name: the registry's name.
        description: one line for listings.
        always_own_rendering: render tools with the format's own messages even where the
            template has a ``tools`` branch.
    """

    name: str
    description: str
    always_own_rendering: bool = field(default=False)
    arguments_key: str = field(default="arguments")

    @abstractmethod
    def write_calls(self, calls: Sequence[Call]) -> str:
        """The text a model of this family writes to make ``calls``."""

    @abstractmethod
    def parse(self, text: str) -> ParsedReply:
        """The message a sampled reply stands for (never raises)."""

    @abstractmethod
    def calls_grammar(self, call: dict[str, Any], parallel: bool) -> str:
        """The grammar (llguidance's Lark dialect, ``%json`` for a JSON Schema) of a reply that
        is one call, or with ``parallel`` one or more, each call's JSON following the schema
        ``call``."""

    def call_grammar(self, tools: Sequence[Mapping[str, Any]], *, parallel: bool = True) -> str:
        """The grammar of a reply that is calls to ``tools`` and nothing else.

        Each call is the JSON object this format writes: ``name`` one of the tools' names and
        its arguments (under :attr:`arguments_key`) valid for that tool's ``parameters``.

        Example:
            >>> from trainer.tool_call_formats import tool_call_format
            >>> tools = [{"type": "function", "function": {"name": "move", "parameters": {
            ...     "type": "object", "properties": {"direction": {"enum": ["Up", "Down"]}}}}}]
            >>> grammar = tool_call_format("hermes").call_grammar(tools, parallel=False)
            >>> print(grammar.splitlines()[0])
            start: "<tool_call>\\n" call "\\n</tool_call>"
        """
        return self.calls_grammar(self.call_schema(tools), parallel)

    def call_schema(self, tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The JSON Schema of one call to any of ``tools``, as this format writes a call
        (``name``, and the arguments under :attr:`arguments_key`), with llguidance's
        ``x-guidance`` options for ``json.dumps``' spacing.

        An object that lists its ``properties`` and says nothing of others is closed
        (``additionalProperties: false``), as OpenAI's strict tools and xgrammar's strict mode
        read it: a sampler held to the schema alone would otherwise invent keys and never end.
        """
        if not tools:
            raise ValueError("a grammar of tool calls needs at least one tool")
        one_of = [
            {
                "type": "object",
                "properties": {
                    "name": {"const": tool["function"]["name"]},
                    self.arguments_key: closed_objects(
                        tool["function"].get("parameters") or {"type": "object"}
                    ),
                },
                "required": ["name", self.arguments_key],
                "additionalProperties": False,
            }
            for tool in tools
        ]
        return {"anyOf": one_of, "x-guidance": _JSON_STYLE}

    def write_message(self, message: Mapping[str, Any]) -> str:
        """The text a model of this family writes for an assistant message: its content, then
        its calls."""
        content = message.get("content") or ""
        if not message.get("tool_calls"):
            return content
        written = self.write_calls(calls_of(message))
        return f"{content}\n{written}" if content else written

    def tools_text(self, tools: Sequence[Mapping[str, Any]]) -> str:
        """The system message's part that lists the tools and says how to call them."""
        listed = "\n".join(json.dumps(tool["function"]) for tool in tools)
        example = self.write_calls([Call("name", {"argument": "value"})])
        return (
            "You may call these functions (JSON Schema of each function's arguments):\n"
            f"{listed}\nTo call one, write: {example}"
        )

    def tool_results_message(self, results: Sequence[Mapping[str, Any]]) -> Message:
        """``role: tool`` messages as one user message, for a template without tools."""
        parts = [
            f"<tool_response>\n{json.dumps({'name': r.get('name'), 'content': r['content']})}"
            "\n</tool_response>"
            if r.get("name")
            else f"<tool_response>\n{r['content']}\n</tool_response>"
            for r in results
        ]
        return {"role": "user", "content": "\n".join(parts)}

    def plain_messages(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None
    ) -> list[Message]:
        """The chat as messages any template renders: tools in the system message, each call
        written as text, consecutive tool results in one user message."""
        plain: list[Message] = []
        pending: list[Mapping[str, Any]] = []
        for message in messages:
            if message["role"] == "tool":
                pending.append(message)
                continue
            if pending:
                plain.append(self.tool_results_message(pending))
                pending = []
            if message["role"] == "assistant":
                content = self.write_message(message)
            else:
                content = message.get("content") or ""
            plain.append({"role": message["role"], "content": content})
        if pending:
            plain.append(self.tool_results_message(pending))
        if tools:
            listing = self.tools_text(tools)
            if plain and plain[0]["role"] == "system":
                plain[0] = {"role": "system", "content": f"{plain[0]['content']}\n\n{listing}"}
            else:
                plain.insert(0, {"role": "system", "content": listing})
        return plain

    def render(
        self,
        tokenizer: PreTrainedTokenizerBase,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        add_generation_prompt: bool = True,
    ) -> str:
        """The chat as prompt text: through the template's own ``tools`` branch where it has
        one, else through :meth:`plain_messages`."""
        if not self.always_own_rendering and template_takes_tools(tokenizer):
            return tokenizer.apply_chat_template(
                [dict(m) for m in messages],
                tools=list(tools) if tools else None,
                tokenize=False,
                add_generation_prompt=add_generation_prompt,
            )
        return tokenizer.apply_chat_template(
            self.plain_messages(messages, tools),
            tokenize=False,
            add_generation_prompt=add_generation_prompt,
        )
