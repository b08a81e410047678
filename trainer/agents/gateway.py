"""``Gateway``: the policy behind an OpenAI-compatible API, one session per agent episode, every
token recorded.

An agent program points an unmodified ``openai`` client (or any library built on it) at
``Gateway.base_url(session)``, ``http://127.0.0.1:<port>/sessions/<id>/v1``, and calls
``/chat/completions`` (streaming and tools included) or ``/completions`` as it would call any
server. The gateway answers from the in-process engine (:class:`~trainer.serving.engine.
ServingEngine`, the same endpoints as ``roll-agent serve``) and records each call in the
session (:class:`~trainer.agents.session.Session`): the prompt's ids as the policy read them,
the sampled ids, their log-probs and weight versions. Any model name is accepted (an agent
written for another model runs unchanged); ``n`` must be 1 (one reply a call is one thing to
train on).

A chat that re-sends its history gets the tokens it was given: the prompt is the earlier
call's prompt and sampled ids, then the new messages, tokenised once, exactly as the built-in
env manager builds a full-context episode (:class:`~trainer.rollout.chat_tokens.ChatTokens`).

A call to an ended session (its episode finished, passed its deadline, or made its
``max_calls``) is refused with 410 Gone, a status the ``openai`` client does not retry.

Example:
    >>> import openai
    >>> from trainer.generation.continuous import ContinuousGenerator
    >>> from trainer.models import load_model
    >>> model, tokenizer = load_model("tiny-random", seed=0)
    >>> engine = ServingEngine(ContinuousGenerator(model, tokenizer, max_batch_size=4))
    >>> with Gateway(engine) as gateway:
    ...     session = gateway.open_session()
    ...     client = openai.OpenAI(base_url=gateway.base_url(session), api_key="none")
    ...     reply = client.chat.completions.create(
    ...         model="any", messages=[{"role": "user", "content": "Push"}], max_tokens=3
    ...     )
    ...     [len(call.token_ids) for call in session.calls]
    [3]
    >>> engine.close()
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError

from rollenv.server.serving import serve_in_thread
from trainer.agents.session import RecordedCall, Session
from trainer.generation.base import SamplingParams
from trainer.rollout.chat_tokens import ChatTokens
from trainer.serving.engine import ServingEngine
from trainer.serving.openai_server import (
    ChatRequest,
    CompletionRequest,
    OpenAIEndpoints,
    OpenAIRequest,
    ReplyChoice,
)

__all__ = ["Gateway"]


class _GatewayEndpoints(OpenAIEndpoints):
    """The server's endpoints, with each request's prompt built from its session's history and
    each reply recorded in it (``context`` is the session)."""

    def __init__(
        self, engine: ServingEngine, tool_call_format: str, record_choices: int = 0
    ) -> None:
        super().__init__(engine, "policy", None, tool_call_format)
        self.record_choices = record_choices
        self.text_chat = ChatTokens(self.tokenizer)
        self.tool_chat = ChatTokens(self.tokenizer, tool_format=self.tool_format)

    def check_model(self, request: OpenAIRequest) -> None:
        if request.n != 1:
            raise HTTPException(
                status_code=400,
                detail=f"n={request.n}: the gateway records one reply a call; call it n times",
            )

    def sampling_for(
        self, context: Any, request: OpenAIRequest, prompt: list[int], where: str
    ) -> SamplingParams:
        params = self.sampling(request, prompt, where)
        if self.record_choices and params.grammar is not None:
            params = replace(params, record_choices=self.record_choices)
        session: Session = context
        if session.greedy:
            params = replace(params, temperature=0.0, seed=None)
        if session.max_tokens is not None and params.max_new_tokens > session.max_tokens:
            params = replace(params, max_new_tokens=session.max_tokens)
        return params

    def chat_prompt(
        self, context: Any, request: ChatRequest, messages: list[dict[str, Any]]
    ) -> list[int]:
        session: Session = context
        found = session.continued_chat(messages, request.tools)
        if found is None:
            return super().chat_prompt(context, request, messages)
        call, following = found
        ended = call.token_ids[-1:] == [self.tokenizer.eos_token_id]
        try:
            if request.uses_tools:
                more = self.tool_chat.next_messages(following, ended)
            elif len(following) == 1 and following[0]["role"] == "user":
                more = self.text_chat.next_turn(following[0].get("content") or "", ended)
            else:
                more = self.text_chat.next_messages(following, ended)
        except ValueError:  # the template re-renders earlier turns: rendered whole
            return super().chat_prompt(context, request, messages)
        return call.prompt_ids + call.token_ids + more

    def completion_prompt(self, context: Any, request: CompletionRequest) -> list[int]:
        session: Session = context
        call = session.continued_completion(request.prompt)
        if call is None:
            return super().completion_prompt(context, request)
        before = call.prompt_ids + call.token_ids
        if isinstance(request.prompt, str):
            rest = request.prompt[len(call.prompt_text or "") + len(call.reply_text) :]
            return before + self.tokenizer.encode(rest, add_special_tokens=False)
        return before + list(request.prompt[len(before) :])

    def replied(
        self, context: Any, request: OpenAIRequest, prompt: list[int], choices: list[ReplyChoice]
    ) -> None:
        session: Session = context
        (choice,) = choices
        is_chat = isinstance(request, ChatRequest)
        session.record(
            RecordedCall(
                index=-1,
                kind="chat" if is_chat else "completion",
                prompt_ids=list(prompt),
                token_ids=list(choice.reply.token_ids),
                logprobs=list(choice.reply.logprobs),
                weight_versions=list(choice.weight_versions),
                choices=list(choice.choices)
                if any(c is not None for c in choice.choices)
                else None,
                finish_reason=str(choice.finish_reason),
                ended_ns=0,  # set by record()
                continues=session.extended_by(prompt),
                messages=[m.model_dump(exclude_none=True) for m in request.messages]
                if is_chat
                else None,
                tools=request.tools if is_chat else None,
                reply_message=self.reply_message(request, choice) if is_chat else None,
                prompt_text=request.prompt
                if isinstance(request, CompletionRequest) and isinstance(request.prompt, str)
                else None,
                reply_text=choice.reply.text,
            )
        )


class Gateway:
    """Serves the policy to agent programs, a session per episode, on 127.0.0.1.

    Args:
        engine: runs the calls (its thread already going); :meth:`update_weights` loads new
            weights into it between two forward passes.
        tool_call_format: how the model writes tool calls (a registered name of
            :mod:`trainer.tool_call_formats`, or ``"auto"``).
        host: the address to listen on.
        port: the port (0: a free one).
        record_choices: for a reply sampled within a grammar (``tool_choice`` ``"required"``
            or a named function), record the tokens each token was sampled among where they
            are at most this many, and report its log-prob among them
            (``SamplingParams.record_choices``; :attr:`RecordedCall.choices`); 0 records none.

    Use it as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        engine: ServingEngine,
        *,
        tool_call_format: str = "auto",
        host: str = "127.0.0.1",
        port: int = 0,
        record_choices: int = 0,
    ) -> None:
        self.engine = engine
        self.sessions: dict[str, Session] = {}
        self._ended: dict[str, str] = {}  # the ids of ended sessions, and why: a late call gets 410
        self._ids = itertools.count()
        self._endpoints = _GatewayEndpoints(engine, tool_call_format, record_choices)
        self._stack = contextlib.ExitStack()
        self.url = self._stack.enter_context(serve_in_thread(self._app(), host, port))

    def _app(self) -> FastAPI:
        endpoints = self._endpoints
        app = FastAPI(title="rollenv agent gateway")
        app.add_exception_handler(HTTPException, endpoints.http_error)
        app.add_exception_handler(RequestValidationError, endpoints.invalid_request)

        async def health() -> dict[str, str]:
            return {"status": "ok"}

        async def models(session_id: str) -> dict[str, Any]:
            self._session(session_id)
            return await endpoints.models()

        async def chat(session_id: str, request: ChatRequest, http_request: Request) -> Any:
            session = self._admitted(session_id)
            return await endpoints.chat_completions(request, http_request, session)

        async def completions(
            session_id: str, request: CompletionRequest, http_request: Request
        ) -> Any:
            session = self._admitted(session_id)
            return await endpoints.completions(request, http_request, session)

        app.add_api_route("/health", health, methods=["GET"])
        app.add_api_route("/sessions/{session_id}/v1/models", models, methods=["GET"])
        app.add_api_route("/sessions/{session_id}/v1/chat/completions", chat, methods=["POST"])
        app.add_api_route("/sessions/{session_id}/v1/completions", completions, methods=["POST"])
        return app

    def _session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None and session_id in self._ended:
            raise HTTPException(
                status_code=410,
                detail=f"session {session_id} has ended ({self._ended[session_id]}): the "
                "gateway takes no more calls for it",
            )
        if session is None:
            raise HTTPException(
                status_code=404,
                detail=f"no session {session_id!r} on this gateway; an agent's base_url comes "
                "from Gateway.base_url(session)",
            )
        return session

    def _admitted(self, session_id: str) -> Session:
        session = self._session(session_id)
        refused = session.admit()
        if refused is not None:
            raise HTTPException(status_code=410, detail=refused)
        return session

    def open_session(
        self, *, max_calls: int | None = None, greedy: bool = False, max_tokens: int | None = None
    ) -> Session:
        """A new session (see :class:`~trainer.agents.session.Session` for the arguments)."""
        session = Session(
            f"s{next(self._ids)}", max_calls=max_calls, greedy=greedy, max_tokens=max_tokens
        )
        self.sessions[session.id] = session
        return session

    def end_session(self, session: Session, reason: str = "finished") -> Session:
        """Ends ``session`` (later calls get 410) and forgets it; returns it, calls and all."""
        session.close(reason)
        if self.sessions.pop(session.id, None) is not None:
            self._ended[session.id] = str(session.ended)
        return session

    def base_url(self, session: Session) -> str:
        """The ``base_url`` an ``openai`` client of this session's agent is given."""
        return f"{self.url}/sessions/{session.id}/v1"

    def update_weights(self, state_dict: Mapping[str, Any], version: int | None = None) -> None:
        """Loads the policy's new weights into the engine (see
        :meth:`~trainer.serving.engine.ServingEngine.update_weights`)."""
        self.engine.update_weights(state_dict, version)

    def close(self) -> None:
        """Stops serving (the engine is the caller's)."""
        for session in list(self.sessions.values()):
            self.end_session(session, "gateway closed")
        self._stack.close()

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
