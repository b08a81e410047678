"""vLLM and SGLang in-process engines against our reference generator, on a GPU.

Marked ``gpu``: skipped, with the reason, where torch sees no CUDA GPU (tests/conftest.py), and
where the engine is not installed (``pip install 'rollenv[train,vllm]'`` or ``[sglang]``).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from trainer.generation import make_generator  # noqa: E402
from trainer.generation.base import SamplingParams  # noqa: E402
from trainer.generation.hf import HFGenerator  # noqa: E402
from trainer.models import load_model  # noqa: E402

pytestmark = pytest.mark.gpu
BACKENDS = ["vllm", "sglang"]
PROMPTS = [[1, 2, 3, 4, 5], [40, 41, 42], [7] * 20]


def _engine_or_skip(backend: str, folder, tokenizer):
    pytest.importorskip(
        backend,
        reason=f"{backend} is not installed: pip install "
        f"'rollenv[train,{backend}]' on a GPU machine",
    )
    return make_generator(backend, str(folder), tokenizer, dtype="float32")


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    """The tiny random model saved as a Hugging Face folder, as a run's checkpoint is."""
    model, tokenizer = load_model("tiny-random", seed=0)
    folder = tmp_path_factory.mktemp("tiny-random")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, tokenizer


def _reference(seed: int) -> HFGenerator:
    model, tokenizer = load_model("tiny-random", seed=seed)
    return HFGenerator(model, tokenizer, device="cuda")


def _sampled_logprobs(seed: int, prompt: list[int], reply: list[int]) -> list[float]:
    """The float32 model's log-probabilities of ``reply`` after ``prompt`` (temperature 1)."""
    model, _ = load_model("tiny-random", seed=seed)
    model.to("cuda")
    ids = torch.tensor([prompt + reply], device="cuda")
    with torch.no_grad():
        logits = model(ids).logits[0, len(prompt) - 1 : -1].float()
    picked = torch.log_softmax(logits, dim=-1).gather(1, ids[0, len(prompt) :, None])
    return picked[:, 0].tolist()


@pytest.mark.parametrize("backend", BACKENDS)
def test_greedy_replies_equal_the_reference_generators(backend, tiny_folder):
    folder, tokenizer = tiny_folder
    engine = _engine_or_skip(backend, folder, tokenizer)
    greedy = SamplingParams(max_new_tokens=12, temperature=0.0)
    ours = _reference(seed=0).generate(PROMPTS, greedy)
    theirs = engine.generate(PROMPTS, greedy)
    assert [o.token_ids for o in theirs] == [o.token_ids for o in ours]


@pytest.mark.parametrize("backend", BACKENDS)
def test_sampled_logprobs_match_the_trainers_recomputation(backend, tiny_folder):
    folder, tokenizer = tiny_folder
    engine = _engine_or_skip(backend, folder, tokenizer)
    outputs = engine.generate(PROMPTS, SamplingParams(max_new_tokens=12, temperature=1.0, seed=3))
    for prompt, output in zip(PROMPTS, outputs, strict=True):
        assert len(output.logprobs) == len(output.token_ids) > 0
        expected = _sampled_logprobs(0, prompt, output.token_ids)
        assert output.logprobs == pytest.approx(expected, abs=1e-3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_update_weights_serves_the_new_policy(backend, tiny_folder):
    folder, tokenizer = tiny_folder
    engine = _engine_or_skip(backend, folder, tokenizer)
    greedy = SamplingParams(max_new_tokens=12, temperature=0.0)
    new_weights = load_model("tiny-random", seed=1)[0].state_dict()
    engine.update_weights(new_weights)
    expected = [o.token_ids for o in _reference(seed=1).generate(PROMPTS, greedy)]
    assert expected != [o.token_ids for o in _reference(seed=0).generate(PROMPTS, greedy)]
    assert [o.token_ids for o in engine.generate(PROMPTS, greedy)] == expected
