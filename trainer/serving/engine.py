"""``ServingEngine``: one :class:`~trainer.generation.continuous.GenerationStream` run by a
thread of its own, for requests that arrive and leave at any time (``roll-agent serve``).

The engine thread loops: it takes the requests submitted and aborted since its last pass, then
runs one forward pass of the stream (the running requests decode a token each; a new request's
prompt is read beside them, a chunk at a time), and hands each request its new token. A request
joins at the next pass, whatever else is running (continuous admission), so a short request is
not held up behind a long one; a request whose caller went away is aborted and its row freed at
the next pass.

Callers live on an asyncio event loop (the HTTP server): :meth:`ServingEngine.submit` returns a
:class:`ServedRequest` whose :meth:`~ServedRequest.events` yields its tokens as they are
sampled, and the engine thread never blocks on them.

Example:
    >>> import asyncio
    >>> from trainer.generation import SamplingParams
    >>> from trainer.generation.continuous import ContinuousGenerator, GenerationStream
    >>> from trainer.models import load_model
    >>> model, tokenizer = load_model("tiny-random", seed=0)
    >>> engine = ServingEngine(ContinuousGenerator(model, tokenizer, max_batch_size=4))
    >>> async def ask():
    ...     request = engine.submit([1, 2, 3], SamplingParams(max_new_tokens=3, temperature=0))
    ...     return [event async for event in request.events()]
    >>> events = asyncio.run(ask())
    >>> [type(e).__name__ for e in events]
    ['Token', 'Token', 'Token', 'Finished']
    >>> engine.close()
"""

from __future__ import annotations

import asyncio
import itertools
import queue
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from trainer.generation.base import GenerationOutput, SamplingParams
from trainer.generation.continuous import ContinuousGenerator, GenerationStream

__all__ = [
    "Busy",
    "Draining",
    "EngineStats",
    "Finished",
    "Refused",
    "ServedRequest",
    "ServingEngine",
    "Token",
]


@dataclass(frozen=True)
class Token:
    """A sampled token of a request, and the version of the weights that sampled it (see
    :meth:`ServingEngine.update_weights`); ``choices``: the tokens it was sampled among, with
    ``SamplingParams.record_choices`` (``None`` otherwise)."""

    token_id: int
    logprob: float
    weight_version: int = 0
    choices: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Finished:
    """A request's end: its whole output. ``finish_reason`` is ``"stop"``, ``"length"`` or
    ``"abort"`` (aborted by its caller, or by the server shutting down)."""

    output: GenerationOutput


@dataclass(frozen=True)
class Refused:
    """A request the engine did not run: ``status`` 503 (it waited past the queue timeout,
    or the server is stopping) or 500 (the engine failed); ``message`` says why."""

    status: int
    message: str


Event = Token | Finished | Refused


class Draining(RuntimeError):
    """The engine takes no new requests: the server is shutting down."""


class Busy(RuntimeError):
    """The engine holds as many requests as it may (running and waiting); the message says so."""


@dataclass
class EngineStats:
    """Counters the engine thread updates (``/metrics`` reads them)."""

    running: int = 0
    waiting: int = 0
    cached_tokens: int = 0  # token positions the running requests hold in the KV cache
    prompt_tokens: int = 0
    generation_tokens: int = 0
    steps: int = 0
    finished: dict[str, int] = field(default_factory=dict)  # by finish reason
    refused: int = 0
    # (time, prompt tokens, generated tokens) of recent steps, for the throughput gauges
    recent: deque[tuple[float, int, int]] = field(default_factory=lambda: deque(maxlen=4096))

    def throughput(self, window_s: float = 10.0) -> tuple[float, float]:
        """Prompt and generated tokens a second over the last ``window_s`` seconds."""
        now = time.monotonic()
        points = [p for p in list(self.recent) if now - p[0] <= window_s]
        if not points:
            return 0.0, 0.0
        span = max(now - points[0][0], 1e-3)
        return sum(p[1] for p in points) / span, sum(p[2] for p in points) / span


class ServedRequest:
    """One request in the engine, as its caller sees it.

    Attributes:
        prompt_tokens: the prompt's length.
        submitted_at: when it was submitted (``time.monotonic``).
        first_token_at: when its first token was sampled, or ``None``.
        finished_at: when it ended or was refused, or ``None``.
    """

    def __init__(self, key: int, prompt_tokens: int, loop: asyncio.AbstractEventLoop) -> None:
        self.key = key
        self.prompt_tokens = prompt_tokens
        self.submitted_at = time.monotonic()
        self.first_token_at: float | None = None
        self.finished_at: float | None = None
        self._loop = loop
        self._events: asyncio.Queue[Event] = asyncio.Queue()
        self.done = False

    def _put(self, event: Event) -> None:
        """Called on the engine thread."""
        self._loop.call_soon_threadsafe(self._events.put_nowait, event)

    async def events(self) -> AsyncIterator[Event]:
        """Its tokens as they are sampled, then one :class:`Finished` or :class:`Refused`."""
        while True:
            event = await self._events.get()
            yield event
            if not isinstance(event, Token):
                self.done = True
                return


def _hand_out(events: list[tuple[ServedRequest, Token]]) -> None:
    """Runs on the callers' event loop: each token to its request."""
    for request, token in events:
        request._events.put_nowait(token)


class ServingEngine:
    """Runs ``generator``'s stream on a thread of its own for asynchronous callers.

    Args:
        generator: the engine, owned from now on (build it with ``max_batch_size`` as the
            most requests generated at once and, for a server, ``preallocate_cache=True``).
        max_step_tokens: the most tokens one forward pass runs: decoded tokens first, then a
            chunk of the prompts being read (``None``: whole prompts in one pass).
        queue_timeout_s: a request not admitted within this many seconds is refused (503).
        max_waiting: the most requests waiting for a sequence; one more is refused at once
            (``None``: no limit). With the running ones, this bounds what requests hold.
        on_finished: called on the engine thread with each request that ended and its
            output (e.g. to record metrics); the attribute of that name can be set later.
        on_refused: called on the engine thread with each queued request it refused; likewise.
        weight_version: the version of ``generator``'s weights now; each
            :meth:`update_weights` adds one.
        own_thread: start a thread that runs :meth:`run`. ``False``: the caller runs it, on
            the main thread for speed: torch decodes one sequence markedly faster on the main
            thread than on another (OpenMP's second team; ``benchmarks/serve_load.py``), so
            ``roll-agent serve`` steps the engine on its main thread and serves HTTP from
            another.
    """

    def __init__(
        self,
        generator: ContinuousGenerator,
        *,
        max_step_tokens: int | None = None,
        queue_timeout_s: float = 60.0,
        max_waiting: int | None = None,
        on_finished: Callable[[ServedRequest, GenerationOutput], None] | None = None,
        on_refused: Callable[[ServedRequest], None] | None = None,
        weight_version: int = 0,
        own_thread: bool = True,
    ) -> None:
        self.generator = generator
        self.tokenizer = generator.tokenizer
        self.queue_timeout_s = queue_timeout_s
        self.max_waiting = max_waiting
        self._held = 0  # requests submitted and not yet ended, running or waiting
        self._held_lock = threading.Lock()
        self.stats = EngineStats()
        self.on_finished, self.on_refused = on_finished, on_refused
        self._max_step_tokens = max_step_tokens
        self._inbox: queue.SimpleQueue[tuple[str, ServedRequest, object]] = queue.SimpleQueue()
        self._wake = threading.Event()
        self._keys = itertools.count()
        self._draining: str | None = None
        self._closed = False
        # requests in submission order with their queue deadline (all share one timeout)
        self._deadlines: deque[tuple[float, ServedRequest]] = deque()
        self._in_flight: dict[int, ServedRequest] = {}
        self._stream = self._new_stream()
        self.weight_version = weight_version
        self._stepper: int | None = None  # the thread inside run() or run_for() now
        self._thread: threading.Thread | None = None
        if own_thread:
            self._thread = threading.Thread(target=self.run, name="rollenv-serving", daemon=True)
            self._thread.start()

    @property
    def max_context(self) -> int:
        """The most tokens a request may hold, prompt and reply."""
        return self.generator.max_context

    @property
    def steps_on_caller(self) -> bool:
        """Whether its callers step it (``own_thread=False``: :meth:`run` or :meth:`run_for`)."""
        return self._thread is None

    @property
    def draining(self) -> bool:
        """Whether new requests are refused (the server is stopping)."""
        return self._draining is not None

    def submit(self, prompt: list[int], params: SamplingParams) -> ServedRequest:
        """Queues a request (called on the event loop that will read its events).

        Raises:
            Draining: the server is shutting down.
            Busy: ``max_waiting`` requests are already waiting.
            ValueError: the prompt or the sampling parameters are invalid (checked here, so
                the caller can answer 400).
        """
        if self._draining is not None:
            raise Draining(f"{self._draining}; retry on another server")
        if not prompt:
            raise ValueError("the prompt is empty")
        if len(prompt) + params.max_new_tokens > self.max_context:
            raise ValueError(
                f"{len(prompt)} prompt tokens and max_tokens {params.max_new_tokens} exceed the "
                f"context of {self.max_context}"
            )
        seqs = self.generator.max_batch_size
        with self._held_lock:
            if self.max_waiting is not None and self._held >= seqs + self.max_waiting:
                raise Busy(
                    f"the server is busy: {seqs} requests are running and {self.max_waiting} "
                    "waiting (--max-num-seqs, --max-waiting); retry later"
                )
            self._held += 1
        request = ServedRequest(next(self._keys), len(prompt), asyncio.get_running_loop())
        self._inbox.put(("submit", request, (prompt, params)))
        self._wake.set()
        return request

    def abort(self, request: ServedRequest) -> None:
        """Ends ``request`` at the next pass (its caller went away); safe from any thread."""
        if not request.done:
            self._inbox.put(("abort", request, None))
            self._wake.set()

    def update_weights(
        self, state_dict: Mapping[str, Any], version: int | None = None, timeout_s: float = 600.0
    ) -> None:
        """Loads new weights between two forward passes and returns once they are in: the
        tokens sampled after it carry ``version`` (default: the current one plus one). A
        request that is running goes on under the new weights from its next token (its KV
        cache, computed under the old ones, is kept). Safe from any thread but the one stepping
        the engine; with ``own_thread=False`` and no thread stepping it, it loads them at once.

        Raises:
            TimeoutError: the engine did not take the weights within ``timeout_s``.
        """
        loaded = threading.Event()
        errors: list[BaseException] = []
        self._inbox.put(("weights", None, (state_dict, version, loaded, errors)))  # type: ignore[arg-type]
        self._wake.set()
        if self._thread is None and self._stepper is None:
            self._take_inbox()  # stepped by its callers, and none is stepping it now
        if not loaded.wait(timeout_s):
            raise TimeoutError(f"the engine did not load the weights within {timeout_s:g} s")
        if errors:
            raise errors[0]

    def drain(self, reason: str = "the server is shutting down") -> None:
        """Refuses new requests from now on (503); the running ones go on."""
        self._draining = reason

    def abort_all(self, reason: str = "the server is shutting down") -> None:
        """Ends every request: the running ones finish with ``"abort"``, the waiting ones are
        refused (503)."""
        self._inbox.put(("abort_all", None, reason))  # type: ignore[arg-type]
        self._wake.set()

    def close(self, timeout_s: float = 10.0) -> None:
        """Aborts everything and ends :meth:`run` (joining the engine's own thread, if any);
        safe from any thread."""
        self._draining = self._draining or "the server is shutting down"
        self.abort_all(self._draining)
        self._closed = True
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=timeout_s)

    # ---------------------------------------------------------------- the engine thread
    def run(self) -> None:
        """Steps the engine until :meth:`close` (on its own thread, or the caller's)."""
        self._stepper = threading.get_ident()
        try:
            while self._once(idle_wait_s=None):
                pass
        finally:
            self._stepper = None

    def run_for(self, seconds: float, until: Callable[[], bool] | None = None) -> bool:
        """Steps the engine on the calling thread for up to ``seconds``, or until ``until()``
        holds (checked between passes): for a caller that waits on its requests anyway, as the
        agent episodes' driver does on the main thread, where decoding runs fastest.

        Returns:
            ``False`` once the engine is closed.
        """
        self._stepper = threading.get_ident()
        try:
            end = time.monotonic() + seconds
            while (left := end - time.monotonic()) > 0 and not (until is not None and until()):
                if not self._once(idle_wait_s=min(left, 0.01)):
                    return False
            return not self._closed
        finally:
            self._stepper = None

    def _once(self, idle_wait_s: float | None) -> bool:
        """One pass: the inbox, then a forward pass, or a wait (up to ``idle_wait_s``, or the
        next queue deadline, when nothing runs). ``False`` once closed."""
        self._take_inbox()
        if self._closed:
            return False
        self._expire_waiting()
        stream = self._stream
        if not stream.busy:
            self._publish_counts()
            wait = self._next_deadline()
            if idle_wait_s is not None:
                wait = idle_wait_s if wait is None else min(wait, idle_wait_s)
            self._wake.wait(timeout=wait)
            self._wake.clear()
            return True
        try:
            finished = stream.step()
        except Exception as error:  # an engine fault: every request learns of it
            self._fail_all(f"the engine failed: {type(error).__name__}: {error}")
            return True
        self._deliver(stream.sampled, finished)
        return True

    def _take_inbox(self) -> None:
        while True:
            try:
                command, request, argument = self._inbox.get_nowait()
            except queue.Empty:
                return
            if command == "submit":
                prompt, params = argument  # type: ignore[misc]
                try:
                    self._stream.submit(prompt, request.key, params)
                except ValueError as error:
                    self._in_flight[request.key] = request
                    self._refuse(request, 400, str(error))
                    continue
                self._in_flight[request.key] = request
                self._deadlines.append((request.submitted_at + self.queue_timeout_s, request))
            elif command == "abort":
                output = self._stream.abort(request.key)
                if output is not None:
                    self._end(request, output)
            elif command == "weights":
                state_dict, version, loaded, errors = argument  # type: ignore[misc]
                try:
                    self.generator.update_weights(state_dict)
                    self.weight_version = self.weight_version + 1 if version is None else version
                except Exception as error:  # the caller hears of it
                    errors.append(error)
                loaded.set()
            elif command == "abort_all":  # the waiting are refused, the running end
                for key, held in list(self._in_flight.items()):
                    waiting = self._stream.is_waiting(key)
                    output = self._stream.abort(key)
                    if waiting:
                        self._refuse(held, 503, str(argument))
                    elif output is not None:
                        self._end(held, output)

    def _expire_waiting(self) -> None:
        now = time.monotonic()
        while self._deadlines and self._deadlines[0][0] <= now:
            _, request = self._deadlines.popleft()
            if request.key in self._in_flight and self._stream.is_waiting(request.key):
                self._stream.abort(request.key)
                self._refuse(
                    request,
                    503,
                    f"the server is busy: the request waited {self.queue_timeout_s:g} s for one "
                    f"of the {self.generator.max_batch_size} sequences generated at once "
                    "(--max-num-seqs); retry later",
                )

    def _next_deadline(self) -> float | None:
        if not self._deadlines:
            return None
        return max(self._deadlines[0][0] - time.monotonic(), 0.0)

    def _deliver(
        self,
        sampled: list[tuple[object, int, float, tuple[int, ...] | None]],
        finished: list[tuple[object, GenerationOutput]],
    ) -> None:
        stats = self.stats
        now = time.monotonic()
        # counted before any caller hears of the step: a client that has its reply sees its
        # tokens in the stats (and /metrics)
        computed = self.generator.stats["computed_prompt_tokens"]
        new_prompt = computed - stats.prompt_tokens
        stats.prompt_tokens = computed
        stats.generation_tokens += len(sampled)
        stats.steps += 1
        stats.recent.append((now, new_prompt, len(sampled)))
        # one wake-up of each caller's event loop a step, not one a token
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[ServedRequest, Token]]] = {}
        version = self.weight_version
        for key, token, logprob, choices in sampled:
            request = self._in_flight[key]  # type: ignore[index]
            if request.first_token_at is None:
                request.first_token_at = now
            event = Token(token, logprob, version, choices)
            by_loop.setdefault(request._loop, []).append((request, event))
        for loop, events in by_loop.items():
            loop.call_soon_threadsafe(_hand_out, events)
        for key, output in finished:
            self._end(self._in_flight[key], output)  # type: ignore[index]
        self._publish_counts()

    def _publish_counts(self) -> None:
        stream, cache = self._stream, self.generator.cache
        self.stats.running = stream.running
        self.stats.waiting = stream.waiting
        self.stats.cached_tokens = sum(cache.lengths[row] for row in range(stream.running))

    def _release_hold(self) -> None:
        with self._held_lock:
            self._held -= 1

    def _end(self, request: ServedRequest, output: GenerationOutput) -> None:
        del self._in_flight[request.key]
        self._release_hold()
        reason = output.finish_reason
        self.stats.finished[reason] = self.stats.finished.get(reason, 0) + 1
        request.finished_at = time.monotonic()
        request._put(Finished(output))
        if self.on_finished is not None:
            self.on_finished(request, output)

    def _refuse(self, request: ServedRequest, status: int, message: str) -> None:
        del self._in_flight[request.key]
        self._release_hold()
        self.stats.refused += 1
        request.finished_at = time.monotonic()
        request._put(Refused(status, message))
        if self.on_refused is not None:
            self.on_refused(request)

    def _fail_all(self, message: str) -> None:
        for request in list(self._in_flight.values()):
            self._refuse(request, 500, message)
        self._stream = self._new_stream()  # the old one is left half-stepped
        self._deadlines.clear()

    def _new_stream(self) -> GenerationStream:
        """A stream that owns the generator's rows; every request brings its own sampling."""
        return self.generator.stream(
            SamplingParams(max_new_tokens=1), max_step_tokens=self._max_step_tokens
        )
