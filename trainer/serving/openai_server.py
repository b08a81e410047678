"""``roll-agent serve``: our generation engine behind an OpenAI-compatible HTTP API.

Endpoints: ``GET /v1/models``, ``POST /v1/completions`` (a text prompt or a list of token ids),
``POST /v1/chat/completions`` (messages rendered with the model's chat template), ``GET /health``
and ``GET /metrics`` (Prometheus, see :mod:`trainer.serving.metrics`).

Requests run on a :class:`~trainer.serving.engine.ServingEngine`: each joins the running batch
at the engine's next forward pass (continuous admission), a long prompt is read a chunk a pass
so the others keep decoding, and a request whose client disconnects is aborted at once. The
limits are vLLM's: a prompt plus ``max_tokens`` beyond ``--max-model-len`` is a 400 that says
both numbers, ``max_tokens`` omitted means "up to the context", and a request that waits longer
than the queue timeout for one of the ``--max-num-seqs`` sequences is a 503. On SIGTERM or
Ctrl-C the server stops accepting (new requests get 503), lets the running ones finish for the
grace period, aborts the rest and exits 0; a second signal exits at once.

Token in, token out, as vLLM does it: a completion request may send ``prompt`` as token ids
and ask for ``logprobs`` with ``return_tokens_as_token_ids: true``; each returned token is then
``"token_id:<id>"`` with its log-probability, so a client such as
:class:`~trainer.generation.openai_client.OpenAIGenerator` gets exactly the sampled ids.
``top_k``, ``stop_token_ids`` and ``include_stop_str_in_output`` are accepted as vLLM's extra
parameters.

``stream: true`` answers with server-sent events, as the ``openai`` client's ``stream=True``
reads them: a chunk as each piece of text is sampled, a last chunk with the finish reason, then
``data: [DONE]``. ``n`` samples several replies of one prompt; ``stop`` strings cut the reply
before the first one (after it, with ``include_stop_str_in_output``). ``top_logprobs`` is
refused with a 400 that says so.

Tools (:mod:`trainer.serving.tool_requests`): a chat request's ``tools`` and ``role: tool``
messages are rendered as the model's tool-call format expects (``--tool-call-format``), and a
reply that calls them returns ``tool_calls`` with ``finish_reason: "tool_calls"``.

Example:
    >>> serve("tiny-random", port=8000)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from rollenv.server.serving import listening_socket
from trainer.generation.base import SamplingParams
from trainer.serving.engine import (
    Busy,
    Draining,
    Finished,
    Refused,
    ServedRequest,
    ServingEngine,
    Token,
)
from trainer.serving.reply_text import ReplyText
from trainer.serving.tool_requests import (
    ToolRequestError,
    check_tools,
    tool_grammar,
    tool_reply,
)
from trainer.tool_call_formats import tool_call_format_for

__all__ = [
    "ChatRequest",
    "CompletionRequest",
    "OpenAIEndpoints",
    "OpenAIRequest",
    "ReplyChoice",
    "build_app",
    "listening_socket",
    "serve",
]


MAX_CHOICES = 16


class StreamOptions(BaseModel):
    include_usage: bool = False  # a last chunk with the token counts and no choices


class OpenAIRequest(BaseModel):
    """What completion and chat requests share: OpenAI's fields and vLLM's extra ones."""

    model_config = ConfigDict(extra="ignore")  # OpenAI clients send fields we do not use

    model: str
    max_tokens: int | None = Field(None, gt=0)
    temperature: float = Field(1.0, ge=0.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    top_k: int = Field(0, ge=-1)  # vLLM's extra parameter; -1 or 0 keep every token
    seed: int | None = None
    n: int = Field(1, ge=1, le=MAX_CHOICES)
    stop: str | list[str] | None = None
    stop_token_ids: list[int] = []
    ignore_eos: bool = False  # vLLM's extra parameter: go on past the end-of-turn token
    include_stop_str_in_output: bool = False  # vLLM's too: a reply keeps its stop string
    stream: bool = False
    stream_options: StreamOptions | None = None
    tools: list[Any] | None = None

    @property
    def stop_strings(self) -> list[str]:
        stops = [self.stop] if isinstance(self.stop, str) else list(self.stop or [])
        return [stop for stop in stops if stop]

    @property
    def reply_limit(self) -> int | None:
        return self.max_tokens


class CompletionRequest(OpenAIRequest):
    prompt: str | list[int]
    logprobs: int | None = Field(None, ge=0, le=1)
    return_tokens_as_token_ids: bool = False


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None  # an assistant's earlier calls
    tool_call_id: str | None = None  # the call a tool message answers
    name: str | None = None


class ChatRequest(OpenAIRequest):
    messages: list[ChatMessage] = Field(min_length=1)
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0)
    max_completion_tokens: int | None = Field(None, gt=0)  # the chat API's newer name
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool = True

    @property
    def uses_tools(self) -> bool:
        """Whether the chat holds tools, calls or tool results (rendered by the format)."""
        return bool(self.tools) or any(m.role == "tool" or m.tool_calls for m in self.messages)

    @property
    def reads_calls(self) -> bool:
        """Whether the reply is read for calls: tools given and ``tool_choice`` not none."""
        return bool(self.tools) and self.tool_choice != "none"

    @property
    def reply_limit(self) -> int | None:
        return self.max_completion_tokens or self.max_tokens


@dataclass
class ReplyChoice:
    """One of a request's ``n`` replies: its engine request and its text so far."""

    index: int
    served: ServedRequest
    reply: ReplyText
    finish_reason: str | None = None
    weight_versions: list[int] = field(default_factory=list)  # of each sampled token
    # what each sampled token was sampled among (SamplingParams.record_choices), or None each
    choices: list[tuple[int, ...] | None] = field(default_factory=list)
    tool_reply: Any = None  # its calls, once read (OpenAIEndpoints.calls_of)


async def _until_disconnected(http_request: Any) -> None:
    """Returns when the client has gone (uvicorn reports ``http.disconnect``)."""
    while True:
        message = await http_request.receive()
        if message["type"] == "http.disconnect":
            return


class OpenAIEndpoints:
    """The server's endpoints over one engine, and the steps they share: a request checked,
    its replies started, run (streamed or collected) and aborted when the client leaves."""

    def __init__(
        self, engine: ServingEngine, model_name: str, metrics: Any, tool_call_format: str
    ) -> None:
        self.engine = engine
        self.tokenizer = engine.tokenizer
        self.tool_format = tool_call_format_for(tool_call_format, engine.tokenizer)
        self.context = engine.max_context
        self.model_name = model_name
        self.metrics = metrics
        self.created = int(time.time())

    # errors in OpenAI's shape, so clients show the message; a bad field is a 400 that names it
    def error(self, status: int, message: str) -> JSONResponse:
        kind = "invalid_request_error" if status < 500 else "server_error"
        body = {"error": {"message": message, "type": kind, "code": status}}
        return JSONResponse(body, status_code=status)

    async def http_error(self, request: Request, exc: HTTPException) -> JSONResponse:
        return self.error(exc.status_code, str(exc.detail))

    async def invalid_request(self, request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [
            f"the request body is not valid JSON: {e['ctx']['error']}"
            if e["type"] == "json_invalid"
            else f"{'.'.join(str(p) for p in e['loc'] if p != 'body') or 'body'}: {e['msg']}"
            for e in exc.errors()
        ]
        return self.error(400, "; ".join(problems))

    def check_model(self, request: OpenAIRequest) -> None:
        if request.model != self.model_name:
            raise HTTPException(
                status_code=404,
                detail=f"model {request.model!r} is not served here; this server has "
                f"{self.model_name!r} (GET /v1/models)",
            )

    def check_request(self, request: OpenAIRequest) -> None:
        self.check_model(request)
        if isinstance(request, CompletionRequest) and request.tools:
            raise HTTPException(
                status_code=400,
                detail="tools are served by /v1/chat/completions; a completion samples text",
            )
        if isinstance(request, ChatRequest):
            try:
                check_tools(request.tools, request.tool_choice)
            except ToolRequestError as problem:
                raise HTTPException(status_code=400, detail=str(problem)) from None
        if getattr(request, "top_logprobs", None):
            raise HTTPException(
                status_code=400,
                detail="top_logprobs is not supported by this server; logprobs=true gives "
                "each sampled token's log-probability",
            )

    def sampling(self, request: OpenAIRequest, prompt: list[int], where: str) -> SamplingParams:
        """The request's sampling; refuses (400) a prompt and reply beyond the context."""
        limit = request.reply_limit
        asked = len(prompt) + (limit or 1)
        if asked > self.context:
            reply = f"{limit} in the completion" if limit else "at least 1 to generate"
            raise HTTPException(
                status_code=400,
                detail=f"This model's maximum context length is {self.context} tokens. However, "
                f"you requested {asked} tokens ({len(prompt)} in the {where}, {reply}). Please "
                f"reduce the length of the {where} or completion.",
            )
        eos = [] if request.ignore_eos else [self.tokenizer.eos_token_id]
        stops = tuple(dict.fromkeys([*eos, *request.stop_token_ids]))
        grammar = None
        if isinstance(request, ChatRequest):
            grammar = tool_grammar(
                self.tool_format,
                request.tools,
                request.tool_choice,
                parallel=request.parallel_tool_calls,
            )
            if grammar is not None and request.ignore_eos:
                raise HTTPException(
                    status_code=400,
                    detail="ignore_eos cannot go with tool_choice 'required' or a named "
                    "function: a reply of calls ends at the stop token",
                )
        return SamplingParams(
            max_new_tokens=limit or self.context - len(prompt),
            temperature=request.temperature,
            top_p=request.top_p,
            top_k=max(request.top_k, 0),
            stop_token_ids=stops,
            seed=request.seed,
            ignore_eos=request.ignore_eos,
            grammar=grammar,
        )

    def start(
        self, request: OpenAIRequest, prompt: list[int], params: SamplingParams
    ) -> list[ReplyChoice]:
        """Submits the request's ``n`` replies (a seeded request seeds each one apart)."""
        choices: list[ReplyChoice] = []
        try:
            for index in range(request.n):
                seed = None if request.seed is None else request.seed + index
                served = self.engine.submit(prompt, replace(params, seed=seed))
                choices.append(
                    ReplyChoice(
                        index,
                        served,
                        ReplyText(
                            self.tokenizer, request.stop_strings, request.include_stop_str_in_output
                        ),
                    )
                )
        except (Draining, Busy) as refused:
            for choice in choices:
                self.engine.abort(choice.served)
            raise HTTPException(status_code=503, detail=str(refused)) from None
        except ValueError as bad:
            raise HTTPException(status_code=400, detail=str(bad)) from None
        return choices

    async def pump(
        self, choice: ReplyChoice, out: asyncio.Queue[tuple[ReplyChoice, str, Any]]
    ) -> None:
        """Feeds ``out`` with ``(choice, text, end)``: ``end`` is None while it runs, then its
        finish reason, or a :class:`Refused`."""
        async for event in choice.served.events():
            if isinstance(event, Token):
                if not choice.reply.stopped:
                    choice.weight_versions.append(event.weight_version)
                    choice.choices.append(event.choices)
                piece = choice.reply.add(event.token_id, event.logprob)
                if choice.reply.stopped:
                    self.engine.abort(choice.served)  # a stop string: no need to go on
                if piece:
                    out.put_nowait((choice, piece, None))
            elif isinstance(event, Finished):
                choice.finish_reason = (
                    "stop" if choice.reply.stopped else event.output.finish_reason
                )
                out.put_nowait((choice, choice.reply.finish(), choice.finish_reason))
            else:
                out.put_nowait((choice, "", event))

    async def run(
        self, choices: list[ReplyChoice], http_request: Request
    ) -> AsyncIterator[tuple[ReplyChoice, str, Any]]:
        """The choices' pieces as they come; every choice is aborted if the client leaves (or
        the caller stops reading)."""
        out: asyncio.Queue[tuple[ReplyChoice, str, Any]] = asyncio.Queue()
        pumps = [asyncio.create_task(self.pump(choice, out)) for choice in choices]
        gone = asyncio.create_task(_until_disconnected(http_request))
        ended = 0
        try:
            while ended < len(choices):
                item = asyncio.create_task(out.get())
                await asyncio.wait({item, gone}, return_when=asyncio.FIRST_COMPLETED)
                if not item.done():
                    item.cancel()
                    return  # the client went away: the finally clause aborts its requests
                piece = item.result()
                if piece[2] is not None:
                    ended += 1
                yield piece
        finally:
            gone.cancel()
            for choice, task in zip(choices, pumps, strict=True):
                self.engine.abort(choice.served)
                task.cancel()

    def refusal(self, end: Any) -> HTTPException | None:
        if isinstance(end, Refused):
            return HTTPException(status_code=end.status, detail=end.message)
        return None

    async def collect(self, choices: list[ReplyChoice], http_request: Request) -> None:
        """Runs the choices to their end; raises the first refusal as an HTTP error."""
        async with contextlib.aclosing(self.run(choices, http_request)) as pieces:
            async for _, _, end in pieces:
                if (problem := self.refusal(end)) is not None:
                    raise problem  # closing the pieces aborts the other choices
        if any(c.finish_reason is None for c in choices):
            return  # the client left
        if any(c.finish_reason == "abort" for c in choices):
            made = sum(len(c.reply.token_ids) for c in choices)
            raise HTTPException(
                status_code=503,
                detail=f"the server is shutting down: the request was aborted after {made} tokens",
            )

    async def event_stream(
        self,
        choices: list[ReplyChoice],
        http_request: Request,
        chunk: Any,
        last: Any = None,
        on_end: Any = None,
    ) -> StreamingResponse | JSONResponse:
        """Streams ``chunk(choice, text, finish_reason)`` events, then ``last()`` if given (the
        usage chunk); a request refused before its first piece is an HTTP error instead.
        ``on_end()`` is called once every choice has ended, before the last events."""
        pieces = self.run(choices, http_request)
        first = await anext(pieces, None)
        if first is not None and (problem := self.refusal(first[2])) is not None:
            await pieces.aclose()
            return self.error(problem.status_code, problem.detail)

        async def events() -> AsyncIterator[str]:
            try:
                for head in [c for c in (chunk(choice, None, None) for choice in choices) if c]:
                    yield f"data: {json.dumps(head)}\n\n"
                items = [] if first is None else [first]
                while True:
                    for choice, text, end in items:
                        if (problem := self.refusal(end)) is not None:
                            message, code = problem.detail, problem.status_code
                            body = {"error": {"message": message, "code": code}}
                            yield f"data: {json.dumps(body)}\n\n"
                            return
                        # a chunk of None is held back (a reply read for tool calls)
                        if text and (piece := chunk(choice, text, None)) is not None:
                            yield f"data: {json.dumps(piece)}\n\n"
                        if end is not None:
                            yield f"data: {json.dumps(chunk(choice, '', end))}\n\n"
                    following = await anext(pieces, None)
                    if following is None:
                        break
                    items = [following]
                if on_end is not None and all(c.finish_reason for c in choices):
                    on_end()
                if last is not None:
                    yield f"data: {json.dumps(last())}\n\n"
                yield "data: [DONE]\n\n"
            finally:
                await pieces.aclose()

        return StreamingResponse(events(), media_type="text/event-stream")

    def usage(self, prompt: list[int], choices: list[ReplyChoice]) -> dict[str, int]:
        n = sum(len(c.reply.kept()[0]) for c in choices)
        return {
            "prompt_tokens": len(prompt),
            "completion_tokens": n,
            "total_tokens": len(prompt) + n,
        }

    def usage_chunk(
        self,
        request: OpenAIRequest,
        head: dict[str, Any],
        prompt: list[int],
        choices: list[ReplyChoice],
    ) -> Any:
        """The stream's last chunk when ``stream_options.include_usage``: no choices, the
        token counts (built once the replies have ended)."""
        if request.stream_options is None or not request.stream_options.include_usage:
            return None
        return lambda: {**head, "choices": [], "usage": self.usage(prompt, choices)}

    async def health(
        self,
    ) -> JSONResponse:
        if self.engine.draining:
            return JSONResponse({"status": "draining"}, status_code=503)
        return JSONResponse({"status": "ok"})

    async def prometheus(
        self,
    ) -> Response:
        if self.metrics is None:
            raise HTTPException(status_code=404, detail="this server keeps no metrics")
        from trainer.serving.metrics import CONTENT_TYPE_LATEST

        return Response(self.metrics.render(), media_type=CONTENT_TYPE_LATEST)

    async def models(
        self,
    ) -> dict[str, Any]:
        return {
            "object": "list",
            "data": [
                {
                    "id": self.model_name,
                    "object": "model",
                    "created": self.created,
                    "owned_by": "rollenv",
                    "max_model_len": self.context,
                }
            ],
        }

    def replied(
        self, context: Any, request: OpenAIRequest, prompt: list[int], choices: list[Any]
    ) -> None:
        """Called once every choice of a request has ended (``context``: what the route gave
        :meth:`answer`); a gateway records the call here. Nothing by default."""

    def sampling_for(
        self, context: Any, request: OpenAIRequest, prompt: list[int], where: str
    ) -> SamplingParams:
        """The sampling of a request (a gateway may override it per session)."""
        return self.sampling(request, prompt, where)

    async def answer(
        self,
        request: OpenAIRequest,
        http_request: Request,
        prompt: list[int],
        where: str,
        head: dict[str, Any],
        chunk: Any,
        choice_body: Any,
        context: Any = None,
    ) -> Any:
        """Runs the request's choices (``where``: what its prompt is called in a 400): a
        stream of ``chunk(head, choice, text, finish_reason)``, or once they end, the body with
        ``choice_body(choice)`` for each. ``context`` goes to :meth:`replied`."""
        choices = self.start(request, prompt, self.sampling_for(context, request, prompt, where))
        if request.stream:
            return await self.event_stream(
                choices, http_request, lambda *a: chunk(head, *a),
                self.usage_chunk(request, head, prompt, choices),
                lambda: self.replied(context, request, prompt, choices),
            )  # fmt: skip
        await self.collect(choices, http_request)
        if any(c.finish_reason is None for c in choices):
            return Response(status_code=499)  # the client left; nobody reads this
        self.replied(context, request, prompt, choices)
        body = [
            {"index": c.index, "finish_reason": c.finish_reason, **choice_body(c)} for c in choices
        ]
        return {**head, "choices": body, "usage": self.usage(prompt, choices)}

    def headed(self, kind: str, prefix: str) -> dict[str, Any]:
        """What every response and chunk of one request starts with."""
        return {
            "id": f"{prefix}-{uuid.uuid4().hex}",
            "object": kind,
            "created": int(time.time()),
            "model": self.model_name,
        }

    def completion_prompt(self, context: Any, request: CompletionRequest) -> list[int]:
        """A completion request's prompt as token ids."""
        if isinstance(request.prompt, str):
            return self.tokenizer.encode(request.prompt, add_special_tokens=False)
        return list(request.prompt)

    def chat_prompt(
        self, context: Any, request: ChatRequest, messages: list[dict[str, Any]]
    ) -> list[int]:
        """A chat request's prompt as token ids: the messages rendered by the chat template
        (by the tool-call format where the chat holds tools)."""
        if request.uses_tools:
            text = self.tool_format.render(self.tokenizer, messages, request.tools)
        else:
            text = self.tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
        return self.tokenizer.encode(text, add_special_tokens=False)

    async def completions(
        self, request: CompletionRequest, http_request: Request, context: Any = None
    ) -> Any:
        self.check_request(request)
        prompt = self.completion_prompt(context, request)
        vocab = len(self.tokenizer)
        if not prompt or any(not 0 <= t < vocab for t in prompt):
            raise HTTPException(
                status_code=400, detail=f"prompt must be text or token ids in [0, {vocab})"
            )

        def chunk(head: dict, choice: ReplyChoice, text: str | None, finish: str | None) -> Any:
            if text is None:
                return None  # completions have no opening chunk
            return {
                **head,
                "choices": [{"index": choice.index, "text": text, "finish_reason": finish}],
            }

        def choice_body(choice: ReplyChoice) -> dict[str, Any]:
            logprobs = None
            if request.logprobs is not None:
                ids, values = choice.reply.kept()
                as_ids = request.return_tokens_as_token_ids
                logprobs = {
                    "tokens": [
                        f"token_id:{t}" if as_ids else self.tokenizer.decode([t]) for t in ids
                    ],
                    "token_logprobs": values,
                    "top_logprobs": None,
                    "text_offset": None,
                }
            return {"text": choice.reply.text, "logprobs": logprobs}

        head = self.headed("text_completion", "cmpl")
        return await self.answer(
            request, http_request, prompt, "prompt", head, chunk, choice_body, context
        )

    def calls_of(self, request: ChatRequest, choice: ReplyChoice) -> Any:
        """The calls a chat choice read for them answers with (a ``ToolReply``), built once:
        its call ids are made then, and every later look sees the same."""
        if choice.tool_reply is None:
            choice.tool_reply = tool_reply(
                self.tool_format,
                choice.reply.text,
                parallel=request.parallel_tool_calls,
                finish_reason=choice.finish_reason,
            )
        return choice.tool_reply

    def reply_message(self, request: ChatRequest, choice: ReplyChoice) -> dict[str, Any]:
        """The assistant message a chat choice answers with (its calls, where it is read for
        them)."""
        if request.reads_calls:
            return self.calls_of(request, choice).message
        return {"role": "assistant", "content": choice.reply.text}

    async def chat_completions(
        self, request: ChatRequest, http_request: Request, context: Any = None
    ) -> Any:
        self.check_request(request)
        messages = [m.model_dump(exclude_none=True) for m in request.messages]
        prompt = self.chat_prompt(context, request, messages)

        def chunk(head: dict, choice: ReplyChoice, text: str | None, finish: str | None) -> Any:
            delta = {"role": "assistant", "content": ""} if text is None else {}
            if request.reads_calls and text is not None:
                if finish is None:
                    return None  # calls are known once the reply ends: sent whole then
                reply = self.calls_of(request, choice)
                delta, finish = reply.delta(), reply.finish_reason
            elif text:
                delta["content"] = text
            return {
                **head,
                "choices": [{"index": choice.index, "delta": delta, "finish_reason": finish}],
            }

        def choice_body(choice: ReplyChoice) -> dict[str, Any]:
            logprobs = None
            if request.logprobs:
                ids, values = choice.reply.kept()
                logprobs = {
                    "content": [
                        {"token": self.tokenizer.decode([t]), "logprob": lp, "top_logprobs": []}
                        for t, lp in zip(ids, values, strict=True)
                    ]
                }
            body = {"message": self.reply_message(request, choice), "logprobs": logprobs}
            if request.reads_calls:  # a reply of calls ends with "tool_calls"
                body["finish_reason"] = self.calls_of(request, choice).finish_reason
            return body

        kind = "chat.completion.chunk" if request.stream else "chat.completion"
        head = self.headed(kind, "chatcmpl")
        return await self.answer(
            request, http_request, prompt, "messages", head, chunk, choice_body, context
        )


def build_app(
    engine: ServingEngine,
    model_name: str,
    *,
    metrics: Any = None,
    tool_call_format: str = "auto",
) -> FastAPI:
    """The FastAPI app serving ``engine``'s model as ``model_name``.

    Args:
        engine: runs the requests (its thread is already going).
        model_name: the id ``/v1/models`` lists and requests must name.
        metrics: a :class:`~trainer.serving.metrics.ServeMetrics` for ``GET /metrics``
            (``None``: the endpoint answers 404).
        tool_call_format: how the model writes tool calls and its prompts show tools (a
            registered name of :mod:`trainer.tool_call_formats`, or ``"auto"``).
    """
    endpoints = OpenAIEndpoints(engine, model_name, metrics, tool_call_format)
    app = FastAPI(title=f"rollenv: {model_name}")
    app.add_exception_handler(HTTPException, endpoints.http_error)
    app.add_exception_handler(RequestValidationError, endpoints.invalid_request)
    app.add_api_route("/health", endpoints.health, methods=["GET"])
    app.add_api_route("/metrics", endpoints.prometheus, methods=["GET"])
    app.add_api_route("/v1/models", endpoints.models, methods=["GET"])
    app.add_api_route("/v1/completions", endpoints.completions, methods=["POST"])
    app.add_api_route("/v1/chat/completions", endpoints.chat_completions, methods=["POST"])
    return app


def _resident_bytes() -> int:
    """This process's resident memory now (Linux), else its peak so far."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def serve(
    model: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    name: str | None = None,
    sock: socket.socket | None = None,
    dtype: str | None = None,
    quantize: str | None = None,
    max_model_len: int | None = None,
    max_num_seqs: int | None = None,
    kv_cache_memory: str | None = None,
    max_step_tokens: int = 512,
    queue_timeout_s: float = 60.0,
    max_waiting: int = 1024,
    shutdown_grace_s: float = 5.0,
    tool_call_format: str = "auto",
) -> None:
    """Serves ``model`` until SIGTERM or Ctrl-C (then drains for ``shutdown_grace_s``).

    Args:
        model: a name :func:`trainer.models.load_model` accepts.
        host, port: where to listen (ignored when ``sock`` is given).
        name: the model id clients use (default: ``model``).
        sock: an already listening socket (tests pass one bound to a free port).
        dtype: ``"bfloat16"`` or ``None`` (the model's float32); see
            :class:`~trainer.generation.continuous.ContinuousGenerator`.
        quantize: ``"int4"``: decode steps of up to 32 sequences run on 4-bit copies of the
            layers (more tokens a second for few clients; see
            :class:`~trainer.generation.continuous.ContinuousGenerator`), or ``None``.
        max_model_len: the most tokens a request holds, prompt and reply (default: the
            model's context).
        max_num_seqs: requests generated at once (default: 64, lowered to fit the KV budget).
        kv_cache_memory: the KV cache's budget: a size (``"4GB"``, ``"512MiB"``) or a fraction
            of the machine's memory (``"0.25"``, the default).
        max_step_tokens: the most tokens one forward pass runs (the prefill chunk).
        queue_timeout_s: a request not admitted within this many seconds gets a 503.
        max_waiting: the most requests waiting for a sequence; one more gets a 503 at once.
        shutdown_grace_s: after SIGTERM or Ctrl-C, how long running requests may finish
            before they are aborted.
        tool_call_format: how the model writes tool calls and its prompts show tools
            (``hermes``, ``llama3-json``, ``mistral``, ``smollm2``, or ``auto``).

    Raises:
        ServePlanError: the limits cannot fit (one line that names the numbers and the knob).
    """
    import uvicorn

    from trainer.serving.metrics import ServeMetrics

    generator, plan = _planned_generator(
        model,
        dtype=dtype,
        quantize=quantize,
        max_model_len=max_model_len,
        max_num_seqs=max_num_seqs,
        kv_cache_memory=kv_cache_memory,
        max_step_tokens=max_step_tokens,
        max_waiting=max_waiting,
    )
    engine = ServingEngine(
        generator,
        max_step_tokens=plan.max_step_tokens,
        queue_timeout_s=queue_timeout_s,
        max_waiting=plan.max_waiting,
        own_thread=False,  # this (main) thread steps it; HTTP is served from another
    )
    metrics = ServeMetrics(engine.stats, cache_positions=plan.cache_rows * plan.max_model_len)
    engine.on_finished, engine.on_refused = metrics.request_finished, metrics.request_refused
    app = build_app(engine, name or model, metrics=metrics, tool_call_format=tool_call_format)
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=shutdown_grace_s + 5,
        )
    )
    _run_until_stopped(
        engine, server, sock or listening_socket(host, port), name or model, shutdown_grace_s
    )


def _planned_generator(
    model: str,
    *,
    dtype: str | None,
    quantize: str | None,
    max_model_len: int | None,
    max_num_seqs: int | None,
    kv_cache_memory: str | None,
    max_step_tokens: int,
    max_waiting: int,
) -> tuple[Any, Any]:
    """Loads ``model``, plans the serving limits against the memory budget (printing the
    plan), and builds the generator with its cache and weight copies allocated up front.

    Returns:
        The :class:`~trainer.generation.continuous.ContinuousGenerator` and the
        :class:`~trainer.serving.plan.ServePlan` it was built by.
    """
    from trainer.generation.continuous import ContinuousGenerator
    from trainer.models import load_model
    from trainer.serving.plan import parse_memory, plan_serving

    budget = parse_memory(kv_cache_memory or "0.25")
    policy, tokenizer = load_model(model)
    config = policy.config
    layers, heads = config.num_hidden_layers, config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    served_bytes = 2 if dtype == "bfloat16" else 4
    n_params = sum(p.numel() for p in policy.parameters())
    plan = plan_serving(
        layers=layers,
        kv_heads=kv_heads,
        head_dim=head_dim,
        heads=heads,
        hidden=config.hidden_size,
        intermediate=config.intermediate_size,
        vocab=config.vocab_size,
        model_context=int(config.max_position_embeddings),
        weight_bytes=n_params * served_bytes,
        dtype_bytes=served_bytes,
        max_model_len=max_model_len,
        max_num_seqs=max_num_seqs,
        kv_cache_memory=budget,
        max_step_tokens=max_step_tokens,
        max_waiting=max_waiting,
    )
    generator = ContinuousGenerator(
        policy,
        tokenizer,
        max_batch_size=plan.max_num_seqs,
        cache_rows=plan.cache_rows,
        dtype=dtype,
        quantize=quantize,
        max_context=plan.max_model_len,
        preallocate_cache=True,
    )
    # the cache is allocated (and zeroed, so resident) with the generator
    print(plan.describe(_resident_bytes(), generator.weight_copy_bytes()), flush=True)
    generator.make_weight_copies()  # counted in the plan; made before the first request
    return generator, plan


def _run_until_stopped(
    engine: ServingEngine, server: Any, sock: socket.socket, name: str, shutdown_grace_s: float
) -> None:
    """Serves HTTP from a thread and steps the engine on this one until SIGTERM or Ctrl-C:
    then new requests get 503, running ones may finish for ``shutdown_grace_s``, and a second
    signal exits at once."""
    import threading

    def serve_http() -> None:
        try:
            server.run(sockets=[sock])
        finally:
            engine.close()  # the engine loop on the main thread returns

    stopping: list[int] = []

    def on_signal(sig: int, frame: Any) -> None:
        if stopping:  # a second signal: exit at once
            print("Second signal: exiting now", file=sys.stderr, flush=True)
            os._exit(1)
        stopping.append(sig)
        print(
            f"Stopping: new requests get 503; running ones may finish for {shutdown_grace_s:g} s "
            "(a second Ctrl-C exits at once)",
            file=sys.stderr,
            flush=True,
        )
        engine.drain()
        timer = threading.Timer(shutdown_grace_s, engine.abort_all)
        timer.daemon = True
        timer.start()
        server.should_exit = True  # uvicorn stops accepting and waits for the open requests

    host, port = sock.getsockname()[:2]
    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    http = threading.Thread(target=serve_http, name="rollenv-http", daemon=True)
    http.start()
    print(f"Serving {name} at http://{host}:{port}/v1 (Ctrl-C stops)", flush=True)
    try:
        engine.run()
    finally:
        engine.close()
        http.join(timeout=shutdown_grace_s + 10)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
