"""The env server's wire format: OpenEnv's messages, extended with sessions and env ids.

OpenEnv (``openenv-core``) speaks ``POST /reset`` and ``POST /step`` with the reply
``{"observation": {...}, "reward": r, "done": d}``, ``GET /state``, ``/health``, ``/schema``, and
a WebSocket ``/ws`` whose messages are ``{"type": "reset" | "step" | "state" | "close",
"data": {...}}``, answered by ``{"type": "observation" | "state" | "error", "data": {...}}``.
rollenv's server keeps those shapes and adds what serving many envs takes:

* a reset names the env (``env_id``, ``kwargs``) and may pass ``seed``, ``options`` and
  OpenEnv's ``episode_id``; over HTTP it opens a session unless it names one (``session_id``);
* a step's action is OpenEnv's text action ``{"message": "<the agent's reply>"}`` (over HTTP
  the bare reply string is accepted too) and, over HTTP, names its ``session_id``;
* every reply carries, beside ``observation``/``reward``/``done``, ``terminated``,
  ``truncated``, the session's ids and step count, and an observation object holding the
  text, the env's instruction, the step's metrics and the whole ``info``
  (:func:`transition_reply`).

Requests are read strictly (a seed of ``"3"`` is an error, not 3) and an unknown field is an
error naming the allowed ones (:func:`parse_request`).

Example:
    >>> parse_request(StepRequest, b'{"session_id": "s1", "action": "<answer>Up</answer>"}').reply
    '<answer>Up</answer>'
    >>> parse_request(StepRequest, b'{"session_id": "s1", "action": 3}')
    Traceback (most recent call last):
    ...
    rollenv.server.errors.ServerError: bad request: action: must be the reply text, or an \
object {"message": <the reply text>} (got int)
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rollenv.server.errors import ErrorCode, ServerError
from rollenv.server.sessions import Transition

_STRICT = ConfigDict(extra="forbid", strict=True)
Request = TypeVar("Request", bound=BaseModel)


class TextAction(BaseModel):
    """OpenEnv's action for a text env: the agent's reply, as an LLM wrote it."""

    model_config = _STRICT

    message: str = Field(description="the agent's whole reply, e.g. '<answer>Up</answer>'")
    metadata: dict[str, Any] = Field(default_factory=dict, description="ignored by the env")


class EpisodeRequest(BaseModel):
    """A reset: which env (needed where no session or default env gives it), and its episode."""

    model_config = _STRICT

    env_id: str | None = Field(None, description="a rollenv id, e.g. 'Sokoban-v0'")
    kwargs: dict[str, Any] = Field(default_factory=dict, description="rollenv.make's kwargs")
    seed: int | None = Field(None, ge=0, description="reset's seed")
    options: dict[str, Any] | None = Field(None, description="reset's options")
    episode_id: str | None = Field(None, max_length=255, description="OpenEnv's episode id")


class ResetRequest(EpisodeRequest):
    """``POST /reset``: a new session (``env_id``), or a new episode in ``session_id``."""

    session_id: str | None = Field(None, description="reset this session instead of a new one")


class OpenRequest(BaseModel):
    """``POST /sessions``: a session with its env made, not yet reset."""

    model_config = _STRICT

    env_id: str
    kwargs: dict[str, Any] = Field(default_factory=dict)


class StepRequest(BaseModel):
    """``POST /step``: one reply in a session's episode."""

    model_config = _STRICT

    session_id: str
    action: str | TextAction = Field(description="the reply text, or {'message': reply}")

    @field_validator("action", mode="before")
    @classmethod
    def _text_or_object(cls, value: Any) -> Any:
        if not isinstance(value, str | dict):
            raise ValueError(
                'must be the reply text, or an object {"message": <the reply text>} '
                f"(got {_json_type(value)})"
            )
        return value

    @property
    def reply(self) -> str:
        return self.action if isinstance(self.action, str) else self.action.message


class TextObservation(BaseModel):
    """The ``observation`` object of every reply (documented by ``GET /schema``)."""

    text: str = Field(description="what the agent reads")
    instruction: str | None = Field(description="the rules, for a system prompt")
    metrics: dict[str, bool] | None = Field(
        description="success, action_is_valid, action_is_effective (None on reset)"
    )
    info: dict[str, Any] = Field(description="the env's info dict, as a local env returns it")


class SessionState(BaseModel):
    """``GET /state``: OpenEnv's ``State`` fields and the session's own."""

    episode_id: str | None
    step_count: int
    session_id: str
    env_id: str
    kwargs: dict[str, Any]
    episodes: int
    done: bool


def parse_request(model: type[Request], raw: bytes | str | dict[str, Any]) -> Request:
    """Reads a request body (JSON text or an already decoded object) as ``model``.

    Raises:
        ServerError: ``INVALID_JSON`` (400) for text that is not JSON; ``BAD_REQUEST`` (422)
            naming each wrong, missing or unknown field (and the allowed ones).
    """
    try:
        if isinstance(raw, dict):
            return model.model_validate(raw)
        return model.model_validate_json(raw or b"{}")
    except ValidationError as error:
        raise _request_error(model, error) from None


def decode_json(raw: bytes | str) -> Any:
    """JSON text as Python, or an ``INVALID_JSON`` error (400)."""
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ServerError(
            400, ErrorCode.INVALID_JSON, f"the body is not valid JSON: {error}"
        ) from None


def transition_reply(transition: Transition) -> dict[str, Any]:
    """The reply to a reset or a step: OpenEnv's three fields, then rollenv's."""
    info = json_safe(transition.info)
    state = transition.state
    return {
        "observation": {
            "text": json_safe(transition.observation),
            "instruction": transition.instruction,
            "metrics": info.get("metrics"),
            "info": info,
        },
        "reward": json_safe(transition.reward),
        "done": transition.done,
        "terminated": transition.terminated,
        "truncated": transition.truncated,
        "session_id": state.get("session_id"),
        "env_id": state.get("env_id"),
        "episode_id": state.get("episode_id"),
        "step_count": state.get("step_count"),
    }


def json_safe(value: Any) -> Any:
    """``value`` with only JSON's types: numpy values as Python's, tuples as lists, keys as
    strings, anything else as its ``str``.

    Example:
        >>> import numpy as np
        >>> json_safe({"a": (np.int64(2), np.float32(0.5)), 3: {1, 2}})
        {'a': [2, 0.5], '3': [1, 2]}
    """
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, dict):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    if isinstance(value, set | frozenset):
        return [json_safe(item) for item in sorted(value, key=repr)]
    to_list = getattr(value, "tolist", None)  # numpy scalars and arrays
    if callable(to_list):
        return json_safe(to_list())
    return str(value)


def _request_error(model: type[BaseModel], error: ValidationError) -> ServerError:
    problems = error.errors(include_url=False, include_context=False)
    if any(problem["type"] == "json_invalid" for problem in problems):
        return ServerError(
            400, ErrorCode.INVALID_JSON, f"the body is not valid JSON: {problems[0]['msg']}"
        )
    allowed = list(model.model_fields)
    lines = []
    for problem in problems:
        where = ".".join(str(part) for part in problem["loc"]) or "the body"
        kind = problem["type"]
        if kind == "extra_forbidden":
            lines.append(f"{where}: unknown field (allowed: {', '.join(allowed)})")
        elif kind == "missing":
            lines.append(f"{where}: required")
        elif kind == "value_error":
            lines.append(f"{where}: {problem['msg'].removeprefix('Value error, ')}")
        else:
            got = f" (got {_json_type(problem['input'])})" if "input" in problem else ""
            lines.append(f"{where}: {problem['msg'].lower()}{got}")
    return ServerError(
        422,
        ErrorCode.BAD_REQUEST,
        "bad request: " + "; ".join(lines),
        problems=[line.split(": ", 1)[0] for line in lines],
        allowed=allowed,
    )


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), type(value).__name__)
