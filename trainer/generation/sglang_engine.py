"""``SGLangGenerator``: SGLang's offline engine (``sglang.Engine``) in this process, on a GPU.

Prompts go in as token ids (the engine runs without a tokenizer) and replies come back as the
sampled ids with their log-probabilities. SGLang reports log-probabilities of the model's own
distribution, before the temperature: at temperature 1 (the presets') that is the quantity
:mod:`trainer.generation.base` defines; at any other, train with
``algorithm.old_logprobs=recompute``.

:meth:`SGLangGenerator.update_weights` sends the trainer's tensors with SGLang's
``update_weights_from_tensor`` and flushes the prefix cache.

Only tested where a GPU exists (``pytest -m gpu``): SGLang pins its own torch and CUDA wheels
and does not install on the CPU machines this project is built on.

Example:
    >>> generator = make_generator("sglang", "runs/x/checkpoints/step-10/model",
    ...                            tokenizer)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trainer.generation.base import GenerationOutput, SamplingParams
from trainer.generation.engine_folder import (
    OwnsModelFolder,
    engine_model_folder,
    require_cuda_device,
)

__all__ = ["SGLangGenerator"]


class SGLangGenerator(OwnsModelFolder):
    """Generates with ``sglang.Engine`` on this machine's GPU.

    Args:
        model: a model folder (or hub id) SGLang can load, or a Hugging Face model object
            (written, with ``tokenizer``, to a temporary folder).
        tokenizer: its tokenizer (gives the default stop token).
        dtype: SGLang's ``dtype`` (``"auto"``, ``"bfloat16"``, ``"float32"``...).
        mem_fraction_static: the share of GPU memory SGLang may take.
        device: where the caller runs the policy; any but a CUDA device is refused.
        max_batch_size: the most requests running together (``max_running_requests``).
        **engine_kwargs: more ``sglang.Engine`` arguments.
    """

    def __init__(
        self,
        model: str,
        tokenizer: Any,
        *,
        dtype: str = "auto",
        mem_fraction_static: float = 0.5,
        device: Any = None,
        max_batch_size: int | None = None,
        **engine_kwargs: Any,
    ) -> None:
        from rollenv.extras import require_extra

        require_cuda_device(device, "sglang")
        sglang = require_extra("sglang", "sglang")
        self.tokenizer = tokenizer
        self.default_stop_token_ids = (tokenizer.eos_token_id,)
        model, self._folder = engine_model_folder(model, tokenizer)
        if max_batch_size is not None:
            engine_kwargs.setdefault("max_running_requests", max_batch_size)
        self.engine = sglang.Engine(
            model_path=model,
            dtype=dtype,
            mem_fraction_static=mem_fraction_static,
            skip_tokenizer_init=True,
            **engine_kwargs,
        )

    def generate(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams
    ) -> list[GenerationOutput]:
        """One reply per prompt, in the order of ``prompts`` (SGLang batches them itself)."""
        if params.grammar is not None:
            raise ValueError(
                "the sglang backend is not given grammars: grammar-constrained decoding "
                "(tool_choice 'required' or named) runs in the continuous and hf backends"
            )
        if params.allowed_token_ids is not None:
            raise ValueError(
                "the sglang backend cannot restrict sampling to allowed_token_ids; set "
                "env.constrain_to_actions=false or use the continuous or vllm backend"
            )
        sampling: dict[str, Any] = {
            "max_new_tokens": params.max_new_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "top_k": params.top_k if params.top_k > 0 else -1,
            "stop_token_ids": list(params.stops(self.default_stop_token_ids)),
            "ignore_eos": params.ignore_eos,
        }
        if params.stop:
            sampling["stop"] = list(params.stop)
            sampling["no_stop_trim"] = True  # the stop string stays in the reply, as elsewhere
        if params.seed is not None:
            sampling["sampling_seed"] = params.seed
        results = self.engine.generate(
            input_ids=[list(map(int, p)) for p in prompts],
            sampling_params=sampling,
            return_logprob=True,
        )
        outputs = []
        for result in results:
            info = result["meta_info"]
            ids = list(result["output_ids"])
            logprobs = [float(entry[0]) for entry in info["output_token_logprobs"]][: len(ids)]
            finish = "stop" if info["finish_reason"]["type"] == "stop" else "length"
            outputs.append(GenerationOutput(ids, logprobs, finish))
        return outputs

    def update_weights(self, state_dict: Mapping[str, Any], strict: bool = True) -> None:
        """Sends the trainer's weights to the engine and flushes its prefix cache (any subset
        of the weights loads, so a bucket does too)."""
        self.engine.update_weights_from_tensor(
            named_tensors=[(name, tensor.detach()) for name, tensor in state_dict.items()]
        )
        self.engine.flush_cache()
