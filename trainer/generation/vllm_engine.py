"""``VLLMGenerator``: vLLM's offline engine in this process, on a GPU.

Token in, token out: prompts go in as ``TokensPrompt`` ids, and each reply comes back as the
sampled ids with their log-probabilities. vLLM is asked for ``processed_logprobs`` (after the
temperature), the quantity :mod:`trainer.generation.base` defines, which equals it when top-k and
top-p keep every token (the training presets' setting).

Weights: the engine is built from a model folder (a run's checkpoint ``model`` folder, or any
Hugging Face folder), or from the trainer's policy itself, which is written to a temporary
folder for vLLM to load (``generation.backend=vllm`` in a config does that).
:meth:`VLLMGenerator.update_weights` hands the trainer's tensors to every
vLLM worker through :class:`WeightLoader`, a worker extension whose method calls the model's own
``load_weights``, then empties the prefix cache (its keys and values belong to the old weights).

Colocated with the trainer on one GPU (ROLL's colocation), ``offload=True`` lets the pipeline
call :meth:`VLLMGenerator.offload` after each rollout: vLLM's sleep mode (level 1) moves the
weights to host memory and frees the key/value cache while the trainer updates; the next
``update_weights`` or ``generate`` wakes it.

Only tested where a GPU exists (``pytest -m gpu``): vLLM pins its own torch and CUDA wheels and
does not install on the CPU machines this project is built on.

Example:
    >>> generator = make_generator("vllm", "runs/x/checkpoints/step-10/model",
    ...                            tokenizer)  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from trainer.generation.base import GenerationOutput, SamplingParams
from trainer.generation.engine_folder import (
    OwnsModelFolder,
    engine_model_folder,
    require_cuda_device,
)

__all__ = ["VLLMGenerator", "WeightLoader"]


class WeightLoader:
    """A vLLM worker extension (``worker_extension_cls``): loads tensors sent by the trainer."""

    def rollenv_load_weights(self, weights: list[tuple[str, Any]]) -> None:
        device = next(self.model_runner.model.parameters()).device  # type: ignore[attr-defined]
        self.model_runner.model.load_weights(  # type: ignore[attr-defined]
            weights=[(name, tensor.to(device)) for name, tensor in weights]
        )


class VLLMGenerator(OwnsModelFolder):
    """Generates with ``vllm.LLM`` on this machine's GPU.

    Args:
        model: a model folder (or hub id) vLLM can load, or a Hugging Face model object
            (``save_pretrained`` writes it, with ``tokenizer``, to a temporary folder that lives
            as long as this generator).
        tokenizer: its tokenizer (gives the default stop token).
        dtype: vLLM's ``dtype`` (``"auto"``, ``"bfloat16"``, ``"float32"``...).
        gpu_memory_utilization: the share of GPU memory vLLM may take (leave room for the
            trainer when both share a GPU).
        offload: start vLLM in sleep mode, so that :meth:`offload` can free its GPU memory.
        device: where the caller runs the policy; vLLM needs a CUDA device, and any other is
            refused with a clear error.
        max_batch_size: the most sequences decoded together (vLLM's ``max_num_seqs``).
        **engine_kwargs: more ``vllm.LLM`` arguments (``max_model_len``,
            ``tensor_parallel_size``, ``enforce_eager``...).

    Raises:
        MissingExtraError: vLLM is not installed (the message names the ``pip install``).
        ValueError: ``device`` is not a CUDA device.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        dtype: str = "auto",
        gpu_memory_utilization: float = 0.5,
        offload: bool = False,
        device: Any = None,
        max_batch_size: int | None = None,
        **engine_kwargs: Any,
    ) -> None:
        from rollenv.extras import require_extra

        require_cuda_device(device, "vllm")
        vllm = require_extra("vllm", "vllm")
        self.tokenizer = tokenizer
        self.default_stop_token_ids = (tokenizer.eos_token_id,)
        model, self._folder = engine_model_folder(model, tokenizer)
        if max_batch_size is not None:
            engine_kwargs.setdefault("max_num_seqs", max_batch_size)
        # The engine core runs in this process, so the weight sync hands tensors to the model
        # itself: across vLLM's process boundary its msgpack decoder returns a tensor argument
        # of collective_rpc as a (dtype, shape, buffer index) list, not a tensor, and
        # update_weights fails.
        if os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0") != "0":
            raise ValueError(
                "VLLMGenerator loads the trainer's weights into vLLM's model in this process: "
                "unset VLLM_ENABLE_V1_MULTIPROCESSING or set it to 0"
            )
        # workers of tensor_parallel_size > 1: the trainer has touched CUDA in this process,
        # and a forked process cannot use it
        os.environ.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "spawn")
        self.sleeping = False
        self.llm = vllm.LLM(
            model=model,
            dtype=dtype,
            gpu_memory_utilization=gpu_memory_utilization,
            skip_tokenizer_init=True,
            logprobs_mode="processed_logprobs",
            worker_extension_cls=f"{__name__}.WeightLoader",
            enable_sleep_mode=offload,
            **engine_kwargs,
        )
        self.can_offload = offload

    def offload(self) -> None:
        """Frees this engine's GPU memory until its next call (sleep level 1: weights to host
        memory, key/value cache dropped). Needs ``offload=True`` at construction."""
        if not self.can_offload:
            raise RuntimeError("this VLLMGenerator was built without offload=True")
        if not self.sleeping:
            self.llm.sleep(level=1)
            self.sleeping = True

    def _awake(self) -> None:
        if self.sleeping:
            self.llm.wake_up()
            self.sleeping = False

    def generate(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams
    ) -> list[GenerationOutput]:
        """One reply per prompt, in the order of ``prompts`` (vLLM batches them itself)."""
        if params.grammar is not None:
            raise ValueError(
                "the vllm backend is not given grammars: grammar-constrained decoding "
                "(tool_choice 'required' or named) runs in the continuous and hf backends"
            )
        self._awake()
        from vllm import SamplingParams as VLLMSamplingParams
        from vllm.inputs import TokensPrompt

        sampling = VLLMSamplingParams(
            max_tokens=params.max_new_tokens,
            temperature=params.temperature,
            top_p=params.top_p,
            top_k=params.top_k if params.top_k > 0 else -1,
            stop_token_ids=list(params.stops(self.default_stop_token_ids)),
            allowed_token_ids=(
                list(params.allowed_token_ids) if params.allowed_token_ids is not None else None
            ),
            seed=params.seed,
            ignore_eos=params.ignore_eos,
            logprobs=0,  # the sampled token's own log-probability
            stop=list(params.stop) or None,
            include_stop_str_in_output=True,
            detokenize=bool(params.stop),  # stop strings are matched in the text
        )
        requests = [TokensPrompt(prompt_token_ids=list(map(int, p))) for p in prompts]
        results = self.llm.generate(requests, sampling, use_tqdm=False)
        outputs = []
        for result in results:
            completion = result.outputs[0]
            ids = list(completion.token_ids)
            steps = zip(completion.logprobs, ids, strict=True)
            logprobs = [float(step[token].logprob) for step, token in steps]
            finish = "stop" if completion.finish_reason == "stop" else "length"
            outputs.append(GenerationOutput(ids, logprobs, finish))
        return outputs

    def update_weights(self, state_dict: Mapping[str, Any], strict: bool = True) -> None:
        """Loads the trainer's weights into every worker and empties the prefix cache.

        vLLM's ``load_weights`` takes any subset of the weights, so a bucket (``strict=False``)
        loads as it is.
        """
        self._awake()
        weights = [(name, tensor.detach()) for name, tensor in state_dict.items()]
        self.llm.collective_rpc("rollenv_load_weights", args=(weights,))
        self.llm.reset_prefix_cache()
