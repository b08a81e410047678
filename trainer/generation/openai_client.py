"""``OpenAIGenerator``: any OpenAI-compatible server as a generation backend.

It sends each prompt as token ids to ``/v1/completions`` through the ``openai`` client, many
at once (the server batches them), and asks for the sampled tokens back as ids
(``return_tokens_as_token_ids``, which vLLM and ``roll-agent serve`` understand) with their
log-probabilities. So the trajectory keeps exactly what was sampled, as with the in-process
engines.

A server that returns tokens as text instead (llama.cpp's server, SGLang without that option)
still works: the reply is re-tokenised, and the log-probabilities are kept only when their
count matches. Train such runs with ``algorithm.old_logprobs=recompute``.

The server owns its weights: :meth:`OpenAIGenerator.update_weights` refuses, so use this
backend for evaluation or to roll out a fixed policy.

Example:
    >>> generator = make_generator("openai", "tiny-random", tokenizer,
    ...                            base_url="http://127.0.0.1:8000/v1")  # doctest: +SKIP
    >>> generator.generate([[1, 2, 3]], SamplingParams(max_new_tokens=4))  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from trainer.generation.base import GenerationOutput, SamplingParams

__all__ = ["OpenAIGenerator", "parse_address"]

_TOKEN_ID_PREFIX = "token_id:"


def parse_address(text: str) -> tuple[str, str] | None:
    """``openai:http://HOST:PORT/v1#MODEL_ID`` as ``(api root, model id)``; ``None`` when
    ``text`` is not written so.

    Example:
        >>> parse_address("openai:http://127.0.0.1:8000/v1/#judge")
        ('http://127.0.0.1:8000/v1', 'judge')
        >>> parse_address("openai:localhost") is None
        True
    """
    url, _, served = text.removeprefix("openai:").partition("#")
    if not text.startswith("openai:") or not re.match(r"^https?://[^/]+", url) or not served:
        return None
    return url.rstrip("/"), served


class OpenAIGenerator:
    """Generates through an OpenAI-compatible ``/v1/completions`` endpoint.

    Args:
        model: the model id the server serves.
        tokenizer: the model's tokenizer (only for servers that answer in text).
        base_url: the server's API root, e.g. ``http://127.0.0.1:8000/v1``.
        api_key: sent as the bearer token (local servers accept anything).
        max_concurrency: requests in flight at once.
        timeout_s: per request.
    """

    def __init__(
        self,
        model: str,
        tokenizer: Any = None,
        *,
        base_url: str,
        api_key: str = "EMPTY",
        max_concurrency: int = 64,
        timeout_s: float = 600.0,
    ) -> None:
        from rollenv.extras import require_extra

        require_extra("openai", "serve")
        import openai

        self.client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s)
        self.model = model
        self.tokenizer = tokenizer
        self.max_concurrency = max_concurrency

    def generate(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams
    ) -> list[GenerationOutput]:
        """One reply per prompt, requested concurrently; in the order of ``prompts``."""
        if params.grammar is not None:
            raise ValueError(
                "an OpenAI-compatible server is not given grammars: grammar-constrained decoding "
                "(tool_choice 'required' or named) runs in the continuous and hf backends"
            )
        if params.allowed_token_ids is not None:
            raise ValueError(
                "an OpenAI-compatible server cannot restrict sampling to allowed_token_ids; "
                "set env.constrain_to_actions=false"
            )
        workers = max(1, min(self.max_concurrency, len(prompts)))
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(lambda p: self._one(list(p), params), prompts))

    def _one(self, prompt: list[int], params: SamplingParams) -> GenerationOutput:
        extra: dict[str, Any] = {"return_tokens_as_token_ids": True}
        if params.top_k:
            extra["top_k"] = params.top_k
        if params.stop_token_ids:
            extra["stop_token_ids"] = list(params.stop_token_ids)
        if params.ignore_eos:
            extra["ignore_eos"] = True
        if params.stop:  # vLLM's server keeps the stop string with this; others ignore it
            extra["include_stop_str_in_output"] = True
        response = self.client.completions.create(
            model=self.model,
            prompt=prompt,
            max_tokens=params.max_new_tokens,
            temperature=params.temperature,
            top_p=params.top_p,
            seed=params.seed,
            stop=list(params.stop) or None,
            logprobs=1,
            extra_body=extra,
        )
        choice = response.choices[0]
        finish = "stop" if choice.finish_reason == "stop" else "length"
        tokens = list(choice.logprobs.tokens) if choice.logprobs else []
        logprobs = list(choice.logprobs.token_logprobs) if choice.logprobs else []
        if tokens and all(t.startswith(_TOKEN_ID_PREFIX) for t in tokens):
            ids = [int(t[len(_TOKEN_ID_PREFIX) :]) for t in tokens]
        else:
            ids = self._retokenise(choice.text, finish, params)
            if len(logprobs) != len(ids):
                logprobs = [0.0] * len(ids)
        return GenerationOutput(
            token_ids=ids, logprobs=[float(x or 0.0) for x in logprobs], finish_reason=finish
        )

    def _retokenise(self, text: str, finish: str, params: SamplingParams) -> list[int]:
        if self.tokenizer is None:
            raise ValueError(
                "the server answered in text, not token ids: give OpenAIGenerator the "
                "model's tokenizer to re-tokenise it"
            )
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        if finish == "stop" and params.stop_token_ids:
            ids.append(params.stop_token_ids[0])  # the stop token the server left out
        return ids

    def update_weights(self, state_dict: Mapping[str, Any], strict: bool = True) -> None:
        """Refused: the server loads its own weights."""
        raise NotImplementedError(
            "an OpenAI-compatible server serves its own weights and cannot take the trainer's; "
            "use the openai backend to evaluate or to roll out a fixed policy"
        )
