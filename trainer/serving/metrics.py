"""Prometheus metrics of ``roll-agent serve``, under the names vLLM gives them.

A dashboard or alert written for vLLM reads ours with its ``vllm:`` prefix changed to
``rollenv:``: requests running and waiting, KV cache use, prompt and generated tokens, finished
requests by reason, and histograms of time to first token and end-to-end latency. Two gauges
of vLLM's older versions give throughput directly (tokens a second over the last 10 s).

Each app has its own registry, so several servers in one process (tests) never share counts.

Example:
    >>> from trainer.serving.engine import EngineStats
    >>> metrics = ServeMetrics(EngineStats(running=2, waiting=5), cache_positions=1000)
    >>> text = metrics.render().decode()
    >>> "rollenv:num_requests_waiting 5.0" in text
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

if TYPE_CHECKING:
    from trainer.generation.base import GenerationOutput
    from trainer.serving.engine import EngineStats, ServedRequest

__all__ = ["CONTENT_TYPE_LATEST", "ServeMetrics"]

# vLLM's buckets for these histograms (seconds)
_TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)  # fmt: skip
_LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
                    60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)  # fmt: skip


class ServeMetrics:
    """The metrics of one server, read from its engine's :class:`EngineStats` when scraped.

    Args:
        stats: the engine's counters.
        cache_positions: token positions the KV cache holds in all (the 100% of cache use).
    """

    def __init__(self, stats: EngineStats, cache_positions: int) -> None:
        self.registry = registry = CollectorRegistry()
        p = "rollenv:"
        Gauge(p + "num_requests_running", "Requests being generated.", registry=registry
              ).set_function(lambda: stats.running)  # fmt: skip
        Gauge(p + "num_requests_waiting", "Requests waiting to be admitted.", registry=registry
              ).set_function(lambda: stats.waiting)  # fmt: skip
        Gauge(
            p + "kv_cache_usage_perc",
            "Fraction of the KV cache's token positions the running requests hold (1 = full).",
            registry=registry,
        ).set_function(lambda: stats.cached_tokens / cache_positions)
        Gauge(
            p + "avg_prompt_throughput_toks_per_s",
            "Prompt tokens read a second, over the last 10 s.",
            registry=registry,
        ).set_function(lambda: stats.throughput()[0])
        Gauge(
            p + "avg_generation_throughput_toks_per_s",
            "Tokens generated a second, over the last 10 s.",
            registry=registry,
        ).set_function(lambda: stats.throughput()[1])
        self._prompt_tokens = Counter(
            p + "prompt_tokens", "Prompt tokens of finished requests.", registry=registry
        )
        self._generation_tokens = Counter(
            p + "generation_tokens", "Tokens generated for finished requests.", registry=registry
        )
        self._success = Counter(
            p + "request_success",
            "Finished requests, by finish reason.",
            ["finished_reason"],
            registry=registry,
        )
        self._refused = Counter(
            p + "request_refused",
            "Requests refused after admission was tried (queue timeout, shutdown, failure).",
            registry=registry,
        )
        self._ttft = Histogram(
            p + "time_to_first_token_seconds",
            "Seconds from a request's arrival to its first token.",
            buckets=_TTFT_BUCKETS,
            registry=registry,
        )
        self._latency = Histogram(
            p + "e2e_request_latency_seconds",
            "Seconds from a request's arrival to its end.",
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )

    def request_finished(self, request: ServedRequest, output: GenerationOutput) -> None:
        """Records a request that ended (called from the engine thread)."""
        self._prompt_tokens.inc(request.prompt_tokens)
        self._generation_tokens.inc(len(output.token_ids))
        self._success.labels(finished_reason=output.finish_reason).inc()
        end = request.finished_at or request.submitted_at
        self._latency.observe(end - request.submitted_at)
        if request.first_token_at is not None:
            self._ttft.observe(request.first_token_at - request.submitted_at)

    def request_refused(self, request: ServedRequest) -> None:
        """Records a request refused after it was queued."""
        self._refused.inc()

    def render(self) -> bytes:
        """The text exposition format, for ``GET /metrics``."""
        return generate_latest(self.registry)
