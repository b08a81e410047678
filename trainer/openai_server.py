"""``roll-agent serve``: our generation engine behind an OpenAI-compatible HTTP API.

Endpoints: ``GET /v1/models``, ``POST /v1/completions`` (a text prompt or a list of token ids)
and ``POST /v1/chat/completions`` (messages rendered with the model's chat template). Requests
that arrive together are sampled in one batch by a
:class:`~trainer.generation.actor.GeneratorActor` running in the server's event loop.

Token in, token out, as vLLM does it: a completion request may send ``prompt`` as token ids
and ask for ``logprobs`` with ``return_tokens_as_token_ids: true``; each returned token is then
``"token_id:<id>"`` with its log-probability, so a client such as
:class:`~trainer.generation.openai_client.OpenAIGenerator` gets exactly the sampled ids.
``top_k`` and ``stop_token_ids`` are accepted as vLLM's extra parameters.

``stream: true`` answers with server-sent events, as the ``openai`` client's ``stream=True``
reads them: one chunk per decoded piece of text, a last chunk with the finish reason, then
``data: [DONE]``. The chunks are sent once the reply is sampled (the engine returns whole
replies), so streaming gives the client's protocol, not earlier first tokens. ``n`` samples
several replies of one prompt in one batch; ``stop`` strings cut the reply before the first one.
``tools`` and ``top_logprobs`` are refused with a 400 that says so.

Example:
    >>> app = build_app(GeneratorActor("tiny-random"), "tiny-random")  # doctest: +SKIP
    >>> serve("tiny-random", port=8000)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rollenv.server.serving import listening_socket
from trainer.generation.actor import GeneratorActor
from trainer.generation.base import GenerationOutput, SamplingParams

__all__ = ["build_app", "serve"]


MAX_CHOICES = 16


class _Request(BaseModel):
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
    stream: bool = False
    tools: list[Any] | None = None

    @property
    def stop_strings(self) -> list[str]:
        stops = [self.stop] if isinstance(self.stop, str) else list(self.stop or [])
        return [stop for stop in stops if stop]


class CompletionRequest(_Request):
    prompt: str | list[int]
    logprobs: int | None = Field(None, ge=0, le=1)
    return_tokens_as_token_ids: bool = False


class ChatMessage(BaseModel):
    role: Literal["system", "user", "assistant", "tool"]
    content: str


class ChatRequest(_Request):
    messages: list[ChatMessage] = Field(min_length=1)
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0)


def build_app(server: GeneratorActor, model_name: str, *, max_tokens: int = 256) -> Any:
    """The FastAPI app serving ``server``'s model as ``model_name``.

    Args:
        server: the engine (its ``generate`` batches concurrent requests).
        model_name: the id ``/v1/models`` lists and requests must name.
        max_tokens: the reply length when a request gives none.
    """
    from fastapi import FastAPI, HTTPException, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, StreamingResponse

    tokenizer = server.tokenizer
    app = FastAPI(title=f"rollenv: {model_name}")
    created = int(time.time())

    # errors in OpenAI's shape, so clients show the message; a bad field is a 400 that names it
    def error(status: int, message: str) -> JSONResponse:
        body = {"error": {"message": message, "type": "invalid_request_error", "code": status}}
        return JSONResponse(body, status_code=status)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        return error(exc.status_code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [
            f"{'.'.join(str(p) for p in e['loc'] if p != 'body')}: {e['msg']}" for e in exc.errors()
        ]
        return error(400, "; ".join(problems))

    def check_request(request: _Request) -> None:
        if request.model != model_name:
            raise HTTPException(
                status_code=404,
                detail=f"model {request.model!r} is not served here; this server has "
                f"{model_name!r} (GET /v1/models)",
            )
        if request.tools:
            raise HTTPException(
                status_code=400,
                detail="tools are not supported by this server: it samples plain text "
                "(describe the tools in the messages and parse the reply instead)",
            )
        if getattr(request, "top_logprobs", None):
            raise HTTPException(
                status_code=400,
                detail="top_logprobs is not supported by this server; logprobs=true gives "
                "each sampled token's log-probability",
            )

    async def sample(request: _Request, prompt: list[int]) -> list[GenerationOutput]:
        """``request.n`` replies, sampled together (a seeded request seeds each one apart)."""
        params = sampling(request)
        seeds = [None if request.seed is None else request.seed + i for i in range(request.n)]
        outputs = await asyncio.gather(
            *(server.generate(prompt, replace(params, seed=seed)) for seed in seeds)
        )
        return [cut_at_stop(output, request.stop_strings) for output in outputs]

    def prefix_texts(output: GenerationOutput) -> list[str]:
        """The reply's text after each of its tokens (where stop strings and chunks begin)."""
        ids = output.token_ids
        return [
            tokenizer.decode(ids[:end], skip_special_tokens=True) for end in range(1, len(ids) + 1)
        ]

    def cut_at_stop(output: GenerationOutput, stops: list[str]) -> GenerationOutput:
        """The reply up to (not including) the first stop string, finishing with "stop"."""
        text = text_of(output)
        cuts = [text.find(stop) for stop in stops if stop in text]
        if not cuts:
            return output
        end = min(cuts)
        prefixes = prefix_texts(output)
        kept = next((i for i, prefix in enumerate(prefixes) if len(prefix) > end), len(prefixes))
        return GenerationOutput(output.token_ids[:kept], output.logprobs[:kept], "stop")

    def pieces(output: GenerationOutput) -> list[str]:
        """The reply's text in the pieces its tokens add (multi-byte characters kept whole)."""
        found, before = [], ""
        for text in prefix_texts(output):
            if len(text) > len(before) and not text.endswith("\ufffd"):
                found.append(text[len(before) :])
                before = text
        return found

    def event_stream(chunks: list[dict[str, Any]]) -> StreamingResponse:
        async def events() -> AsyncIterator[str]:
            for chunk in chunks:
                yield f"data: {json.dumps(chunk)}\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    def sampling(request: _Request) -> SamplingParams:
        stops = tuple(dict.fromkeys([tokenizer.eos_token_id, *request.stop_token_ids]))
        return SamplingParams(
            max_new_tokens=request.max_tokens or max_tokens,
            temperature=request.temperature,
            top_p=request.top_p,
            top_k=max(request.top_k, 0),
            stop_token_ids=stops,
            seed=request.seed,
        )

    def text_of(output: GenerationOutput) -> str:
        return tokenizer.decode(output.token_ids, skip_special_tokens=True)

    def usage(prompt: list[int], outputs: list[GenerationOutput]) -> dict[str, int]:
        n = sum(len(output.token_ids) for output in outputs)
        return {
            "prompt_tokens": len(prompt),
            "completion_tokens": n,
            "total_tokens": len(prompt) + n,
        }

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {
            "object": "list",
            "data": [
                {"id": model_name, "object": "model", "created": created, "owned_by": "rollenv"}
            ],
        }

    @app.post("/v1/completions")
    async def completions(request: CompletionRequest) -> Any:
        check_request(request)
        if isinstance(request.prompt, str):
            prompt = tokenizer.encode(request.prompt, add_special_tokens=False)
        else:
            prompt = list(request.prompt)
        vocab = len(tokenizer)
        if not prompt or any(not 0 <= t < vocab for t in prompt):
            raise HTTPException(
                status_code=400, detail=f"prompt must be text or token ids in [0, {vocab})"
            )
        outputs = await sample(request, prompt)
        head = {
            "id": f"cmpl-{uuid.uuid4().hex}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": model_name,
        }
        if request.stream:
            chunks = [
                {**head, "choices": [{"index": i, "text": piece, "finish_reason": None}]}
                for i, output in enumerate(outputs)
                for piece in pieces(output)
            ]
            chunks += [
                {**head, "choices": [{"index": i, "text": "", "finish_reason": o.finish_reason}]}
                for i, o in enumerate(outputs)
            ]
            return event_stream(chunks)
        choices = []
        for index, output in enumerate(outputs):
            choice: dict[str, Any] = {
                "index": index,
                "text": text_of(output),
                "finish_reason": output.finish_reason,
                "logprobs": None,
            }
            if request.logprobs is not None:
                as_ids = request.return_tokens_as_token_ids
                choice["logprobs"] = {
                    "tokens": [
                        f"token_id:{t}" if as_ids else tokenizer.decode([t])
                        for t in output.token_ids
                    ],
                    "token_logprobs": list(output.logprobs),
                    "top_logprobs": None,
                    "text_offset": None,
                }
            choices.append(choice)
        return {**head, "choices": choices, "usage": usage(prompt, outputs)}

    @app.post("/v1/chat/completions")
    async def chat_completions(request: ChatRequest) -> Any:
        check_request(request)
        messages = [m.model_dump() for m in request.messages]
        prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        prompt_ids = tokenizer.encode(prompt, add_special_tokens=False)
        outputs = await sample(request, prompt_ids)
        head = {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion.chunk" if request.stream else "chat.completion",
            "created": int(time.time()),
            "model": model_name,
        }
        if request.stream:

            def chunk(index: int, delta: dict[str, str], finish: str | None) -> dict[str, Any]:
                return {
                    **head,
                    "choices": [{"index": index, "delta": delta, "finish_reason": finish}],
                }

            chunks = []
            for index, output in enumerate(outputs):
                chunks.append(chunk(index, {"role": "assistant", "content": ""}, None))
                chunks += [chunk(index, {"content": piece}, None) for piece in pieces(output)]
                chunks.append(chunk(index, {}, output.finish_reason))
            return event_stream(chunks)
        choices = []
        for index, output in enumerate(outputs):
            choice: dict[str, Any] = {
                "index": index,
                "message": {"role": "assistant", "content": text_of(output)},
                "finish_reason": output.finish_reason,
                "logprobs": None,
            }
            if request.logprobs:
                choice["logprobs"] = {
                    "content": [
                        {"token": tokenizer.decode([t]), "logprob": lp, "top_logprobs": []}
                        for t, lp in zip(output.token_ids, output.logprobs, strict=True)
                    ]
                }
            choices.append(choice)
        return {**head, "choices": choices, "usage": usage(prompt_ids, outputs)}

    return app


def serve(
    model: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    name: str | None = None,
    sock: socket.socket | None = None,
    **engine_options: Any,
) -> None:
    """Serves ``model`` until interrupted.

    Args:
        model: a name :func:`trainer.models.load_model` accepts.
        host, port: where to listen (ignored when ``sock`` is given).
        name: the model id clients use (default: ``model``).
        sock: an already listening socket (tests pass one bound to a free port).
        **engine_options: passed to :class:`GeneratorActor` (``backend``, ``max_batch_size``,
            ``dtype``, ``torch_threads``...).
    """
    import uvicorn

    app = build_app(GeneratorActor(model, **engine_options), name or model)
    sock = sock or listening_socket(host, port)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    host, port = sock.getsockname()[:2]
    print(f"Serving {name or model} at http://{host}:{port}/v1 (Ctrl-C stops)", flush=True)
    server.run(sockets=[sock])
