"""The generator and the sampling a config asks for (``generation``, ``sampling``, ``env``).

Example:
    >>> from trainer.config import load_config
    >>> from trainer.generation.from_config import sampling_params
    >>> from trainer.models import load_model
    >>> _, tokenizer = load_model("tiny-random")
    >>> sampling_params(load_config("frozenlake", []), tokenizer).max_new_tokens > 0
    True
"""

from __future__ import annotations

from typing import Any

import torch

import rollenv
from trainer.config import Config, ConfigError
from trainer.generation import SamplingParams, make_generator
from trainer.generation.base import Generator

__all__ = ["action_token_ids", "check_generation_backend", "generator_for", "sampling_params"]

GPU_ENGINES = ("vllm", "sglang")


def check_generation_backend(config: Config, device: torch.device) -> None:
    """Refuses, before any model loads, a GPU engine this process cannot start
    (``rollout.mode=local``: the engine shares the trainer's device).

    Raises:
        ConfigError: ``generation.backend`` is vllm or sglang and ``device`` is not a GPU.
        MissingExtraError: that engine is not installed (the message names the install).
    """
    from rollenv.extras import require_extra
    from trainer.generation.engine_folder import require_cuda_device

    backend = config.generation.backend
    if backend not in GPU_ENGINES or config.rollout.mode != "local":
        return  # on Ray, the generator actors run it on GPUs the cluster must have
    try:
        require_cuda_device(device, backend)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    require_extra(backend, backend)


def generator_for(config: Config, model: Any, tokenizer: Any, device: torch.device) -> Generator:
    """The ``generation.backend`` engine over ``model``, with the config's batch size and
    engine options."""
    return make_generator(
        config.generation.backend,
        model,
        tokenizer,
        device=device,
        max_batch_size=config.generation.max_batch_size,
        **config.generation.engine_options(),
    )


def action_token_ids(tokenizer: Any, words: tuple[str, ...]) -> tuple[int, ...]:
    """The constrained vocabulary: every token of the env's action words.

    When every word is a single token, one sampled token is a whole action; otherwise the
    end-of-turn token is allowed too, to end a word of several tokens.
    """
    encoded = [tokenizer.encode(word, add_special_tokens=False) for word in words]
    ids = {token for tokens in encoded for token in tokens}
    if any(len(tokens) > 1 for tokens in encoded):
        ids.add(tokenizer.eos_token_id)
    return tuple(sorted(ids))


def tool_call_grammar(config: Config, tokenizer: Any) -> str:
    """The grammar of one call to the env's tools (those its first reset lists), in the run's
    tool-call format: how ``env.constrain_to_actions`` constrains ``action_format=tools``."""
    from trainer.tool_call_formats import tool_call_format_for

    env = config.env
    made = rollenv.make(env.id, **env.make_kwargs)
    try:
        _, info = made.reset(seed=0)
    finally:
        made.close()
    fmt = tool_call_format_for(env.tool_call_format, tokenizer)
    return fmt.call_grammar(info["tools"], parallel=False)


def sampling_params(config: Config, tokenizer: Any) -> SamplingParams:
    """How training replies are sampled: ``config.sampling``, and with
    ``env.constrain_to_actions`` only action words' tokens (or, acting through tools, within
    the grammar of one call)."""
    env, sampling = config.env, config.sampling
    allowed, grammar = None, None
    if env.constrain_to_actions and env.action_format == "tools":
        grammar = tool_call_grammar(config, tokenizer)
    elif env.constrain_to_actions:
        inner = rollenv.make(env.id, **env.make_kwargs).unwrapped
        # a mixture samples the action words of every member
        envs = (
            [inner.member_env(i).unwrapped for i in range(len(inner.members))]
            if isinstance(inner, rollenv.MixtureEnv)
            else [inner]
        )
        if any(e.answer_format.tag is not None for e in envs):
            raise ConfigError(
                "env.constrain_to_actions samples only action words, which this env's "
                "answer format rejects: set env.kwargs.answer_format.tag=null (with env.mix, "
                "in each member's kwargs)"
            )
        words = tuple(dict.fromkeys(w for e in envs for w in e.action_words))
        allowed = action_token_ids(tokenizer, words)
    return SamplingParams(
        max_new_tokens=sampling.max_new_tokens,
        temperature=sampling.temperature,
        top_p=sampling.top_p,
        top_k=sampling.top_k,
        stop_token_ids=(tokenizer.eos_token_id,),
        stop=tuple(sampling.stop),
        allowed_token_ids=allowed,
        grammar=grammar,
        # the log-probs the trainer scores too: among the action words, or the whole vocabulary
        logprobs_among_allowed=allowed is not None and config.algorithm.score_actions_only,
    )
