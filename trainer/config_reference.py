"""Every field of the training config, with its description, default and allowed values.

The descriptions are the fields' own docstrings in :mod:`trainer.config` (pydantic keeps them
in the JSON schema); this module walks the models and gives one :class:`FieldDoc` a field, for
``roll-agent config`` and the docs. Nothing is written twice: a field without a docstring has
no description, and a test fails on it.

Example:
    >>> docs = {doc.key: doc for doc in config_fields()}
    >>> docs["train.deepspeed.zero_stage"].allowed
    'int, 1 to 3'
    >>> docs["env.context"].allowed, docs["env.context"].default
    ("'full' or 'window'", "'full'")
    >>> docs["optim.lr"].description
    'Learning rate of the RL updates (constant).'
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from trainer.algorithms.registry import ALGORITHMS
from trainer.config import Config
from trainer.name_choices import listed
from trainer.strategy_registry import STRATEGIES


@dataclass(frozen=True)
class FieldDoc:
    """One config field.

    Attributes:
        key: its dotted name, as ``--set`` takes it (``train.deepspeed.zero_stage``).
        description: its docstring, whitespace joined.
        default: its default, as it would be written in YAML (``None`` as ``null``).
        allowed: its type and the values it takes, in words.
        section: it holds fields of its own (listed after it).
    """

    key: str
    description: str
    default: str
    allowed: str
    section: bool


def config_fields(model: type[BaseModel] = Config, prefix: str = "") -> list[FieldDoc]:
    """Every field of ``model`` and of its sections, depth first, in declaration order.

    Args:
        model: the config model to describe (default: the whole config).
        prefix: prepended to each key (``"train."`` for ``TrainConfig``'s fields).

    Returns:
        One :class:`FieldDoc` a field; a section's own entry comes before its fields.
    """
    return list(_walk(model, prefix))


def _walk(model: type[BaseModel], prefix: str) -> Iterator[FieldDoc]:
    for name, field in model.model_fields.items():
        key = prefix + name
        section = _section_model(field.annotation)
        yield FieldDoc(
            key=key,
            description=" ".join(inspect.cleandoc(field.description or "").split()),
            default=_default_text(field),
            allowed=_allowed(key, field, section),
            section=section is not None,
        )
        if section is not None:
            yield from _walk(section, key + ".")


def _section_model(annotation: Any) -> type[BaseModel] | None:
    """The model of a section field (``X`` or ``X | None``); ``None`` for a plain value."""
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _default_text(field: FieldInfo) -> str:
    if field.is_required():
        return "(required)"
    value = field.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        return "(section)"
    return value_text(value)


def value_text(value: Any) -> str:
    """A value as :class:`FieldDoc` writes defaults: ``null``, ``true``, ``'full'``, ``64``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def _allowed(key: str, field: FieldInfo, section: type[BaseModel] | None) -> str:
    optional = type(None) in typing.get_args(field.annotation)
    if section is not None:
        return "a section" + (", or null" if optional else "")
    if key == "algorithm.name":
        text = "a registered algorithm: " + ", ".join(ALGORITHMS)
    elif key == "train.strategy":
        text = "a registered strategy: " + ", ".join(STRATEGIES)
    else:
        text = _type_text(field.annotation, field.metadata)
    return text + (", or null" if optional and not text.endswith("null") else "")


def _type_text(annotation: Any, metadata: list[Any]) -> str:
    args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return listed([_type_text(arg, metadata) for arg in args])
    if typing.get_origin(annotation) is Literal:
        return listed([repr(value) for value in typing.get_args(annotation)])
    if typing.get_origin(annotation) is list:
        return f"a list of {_type_text(args[0], [])}" if args else "a list"
    if typing.get_origin(annotation) is dict:
        return "a mapping"
    if annotation is Any:
        return "any value"
    name = getattr(annotation, "__name__", str(annotation))
    bounds = _bounds(metadata)
    return f"{name}, {bounds}" if bounds else name


def _bounds(metadata: list[Any]) -> str:
    """Pydantic's numeric constraints in words: ``> 0``, ``1 to 3``, ``0 to < 1``."""
    low = high = ""
    for item in metadata:
        if isinstance(item, annotated_types.Gt):
            low = f"> {item.gt:g}"
        elif isinstance(item, annotated_types.Ge):
            low = f"{item.ge:g}"
        elif isinstance(item, annotated_types.Lt):
            high = f"< {item.lt:g}"
        elif isinstance(item, annotated_types.Le):
            high = f"{item.le:g}"
    if low and high:
        return f"{low} to {high}"
    if low:
        return low if low.startswith(">") else f">= {low}"
    if high:
        return high if high.startswith("<") else f"<= {high}"
    return ""
