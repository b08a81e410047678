"""``ActionTool``: one action of an env offered as an OpenAI tool, and the builders families
use (``choice_tool``, ``text_tool``, ``templated_tool``). ``rollenv.tool_calls`` plays them.

Example:
    >>> tool = choice_tool("move", "Moves the player.", "direction", ["Up", "Down"])
    >>> tool.openai()["function"]["parameters"]["properties"]
    {'direction': {'type': 'string', 'enum': ['Up', 'Down']}}
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ActionTool", "choice_tool", "templated_tool", "text_tool"]

#: how much of a schema error a reply shows
SHOWN_CHARACTERS = 200


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_CHARACTERS else text[:SHOWN_CHARACTERS] + "..."


@dataclass(frozen=True)
class ActionTool:
    """One tool an env offers, and how a call to it maps to the env's answer text.

    Attributes:
        name: the function's name.
        description: what it does, for the model.
        parameters: the JSON Schema of its arguments (an ``object``).
        to_answer: a call's arguments (valid against ``parameters``) as the text the env reads
            inside its answer tag (``{"direction": "Up"}`` -> ``"Up"``).
        from_answer: the other way: an answer text as arguments, or ``None`` if the text is
            not a call to this tool (reference policies' replies become calls through it).
        whole_reply: ``to_answer`` writes the whole reply rather than the answer tag's text
            (a math env's ``<python>`` block); such a call is the only one of its message.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    to_answer: Callable[[dict[str, Any]], str] = field(compare=False, repr=False)
    from_answer: Callable[[str], dict[str, Any] | None] = field(compare=False, repr=False)
    whole_reply: bool = False

    def openai(self) -> dict[str, Any]:
        """The tool as an entry of OpenAI's ``tools`` list."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }

    def problem(self, arguments: Any) -> str | None:
        """Why ``arguments`` break the schema, or ``None`` when they hold."""
        try:
            error = next(_validator(_schema_key(self.parameters)).iter_errors(arguments), None)
        except RecursionError:
            return "the arguments nest too deeply"
        if error is None:
            return None
        where = "/".join(str(part) for part in error.absolute_path)
        message = _cut(error.message)
        return f"{where}: {message}" if where else message


def _schema_key(schema: Mapping[str, Any]) -> str:
    return json.dumps(schema, sort_keys=True)


@functools.lru_cache(maxsize=4096)
def _validator(schema_json: str) -> Any:
    import jsonschema

    schema = json.loads(schema_json)
    validator = jsonschema.validators.validator_for(schema)
    return validator(schema)


def _object(properties: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(properties),
        "additionalProperties": False,
    }


def choice_tool(name: str, description: str, argument: str, choices: Sequence[str]) -> ActionTool:
    """A tool with one argument drawn from the env's action words (an ``enum``).

    Example:
        >>> tool = choice_tool("move", "Moves the player.", "direction", ["Up", "Down"])
        >>> tool.to_answer({"direction": "Up"}), tool.from_answer("down")
        ('Up', {'direction': 'Down'})
    """
    words = list(dict.fromkeys(choices))
    by_lower = {word.lower(): word for word in reversed(words)}
    return ActionTool(
        name,
        description,
        _object({argument: {"type": "string", "enum": words}}),
        to_answer=lambda arguments: arguments[argument],
        from_answer=lambda text: (
            {argument: by_lower[text.lower()]} if text.lower() in by_lower else None
        ),
    )


def text_tool(
    name: str, description: str, argument: str, *, pattern: str | None = None
) -> ActionTool:
    """A tool with one free-text argument (code, a query, a move a game judges).

    Args:
        pattern: a regular expression the text must match, where the grammar has one.

    Example:
        >>> tool = text_tool("submit", "Submits a program.", "code")
        >>> tool.to_answer({"code": "print(1)"}), tool.from_answer("print(1)")
        ('print(1)', {'code': 'print(1)'})
    """
    schema: dict[str, Any] = {"type": "string", "minLength": 1}
    if pattern is not None:
        schema["pattern"] = pattern
    return ActionTool(
        name,
        description,
        _object({argument: schema}),
        to_answer=lambda arguments: arguments[argument],
        from_answer=lambda text: {argument: text} if text.strip() else None,
    )


_FIELD = re.compile(r"\{(\w+)\}")


def templated_tool(
    name: str, description: str, template: str, properties: Mapping[str, Mapping[str, Any]]
) -> ActionTool:
    """A tool whose answer text fills a template: ``search[{query}]``, ``reveal {row} {col}``.

    Integer arguments read back as integers; a string argument matches any text up to what
    follows it in the template.

    Example:
        >>> tool = templated_tool("click", "Clicks a button or a product.", "click[{target}]",
        ...                       {"target": {"type": "string"}})
        >>> tool.to_answer({"target": "Buy Now"}), tool.from_answer("click[Buy Now]")
        ('click[Buy Now]', {'target': 'Buy Now'})
    """
    names = _FIELD.findall(template)
    if sorted(names) != sorted(properties):
        raise ValueError(
            f"template {template!r} names {names}, the properties are {sorted(properties)}"
        )
    parts, start = [], 0
    for match in _FIELD.finditer(template):
        parts.append(re.escape(template[start : match.start()]))
        kind = properties[match.group(1)].get("type")
        parts.append(
            rf"(?P<{match.group(1)}>-?\d+)" if kind == "integer" else rf"(?P<{match.group(1)}>.+?)"
        )
        start = match.end()
    parts.append(re.escape(template[start:]))
    pattern = re.compile("".join(parts), re.IGNORECASE | re.DOTALL)

    def from_answer(text: str) -> dict[str, Any] | None:
        match = pattern.fullmatch(text.strip())
        if match is None:
            return None
        return {
            key: int(value) if properties[key].get("type") == "integer" else value
            for key, value in match.groupdict().items()
        }

    return ActionTool(
        name,
        description,
        _object(properties),
        to_answer=lambda arguments: template.format(**arguments),
        from_answer=from_answer,
    )
