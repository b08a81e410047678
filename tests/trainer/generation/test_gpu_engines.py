"""vLLM and SGLang in-process engines against our reference generator, on a GPU.

Marked ``gpu``: skipped, with the reason, where torch sees no CUDA GPU (tests/conftest.py), and
where the engine is not installed (``pip install 'rollenv[train,vllm]'`` or ``[sglang]``).
One engine per backend serves the module's tests (each takes seconds to start and a share of
the GPU); a test that changes its weights puts the first ones back.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from trainer.generation import make_generator  # noqa: E402
from trainer.generation.base import SamplingParams  # noqa: E402
from trainer.generation.hf import HFGenerator  # noqa: E402
from trainer.models import load_model  # noqa: E402

pytestmark = pytest.mark.gpu
BACKENDS = ["vllm", "sglang"]
PROMPTS = [[1, 2, 3, 4, 5], [40, 41, 42], [7] * 20]


#: small shares of the GPU, no CUDA graphs or compilation: the tests' engines start in seconds
ENGINE_OPTIONS = {
    "vllm": {"gpu_memory_utilization": 0.15, "enforce_eager": True},
    "sglang": {"mem_fraction_static": 0.15, "disable_cuda_graph": True},
}


def _skip_unless_installed(backend: str) -> None:
    pytest.importorskip(
        backend,
        reason=f"{backend} is not installed: pip install "
        f"'rollenv[train,{backend}]' on a GPU machine",
    )


@pytest.fixture(scope="module")
def engines(tiny_folder):
    folder, tokenizer = tiny_folder
    started: dict = {}

    def engine(backend: str):
        _skip_unless_installed(backend)
        if backend not in started:
            started[backend] = make_generator(
                backend, str(folder), tokenizer, dtype="float32", **ENGINE_OPTIONS[backend]
            )
        return started[backend]

    yield engine
    started.clear()


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
def test_greedy_replies_equal_the_reference_generators(backend, engines):
    engine = engines(backend)
    greedy = SamplingParams(max_new_tokens=12, temperature=0.0)
    ours = _reference(seed=0).generate(PROMPTS, greedy)
    theirs = engine.generate(PROMPTS, greedy)
    assert [o.token_ids for o in theirs] == [o.token_ids for o in ours]


@pytest.mark.parametrize("backend", BACKENDS)
def test_sampled_logprobs_match_the_trainers_recomputation(backend, engines):
    engine = engines(backend)
    outputs = engine.generate(PROMPTS, SamplingParams(max_new_tokens=12, temperature=1.0, seed=3))
    for prompt, output in zip(PROMPTS, outputs, strict=True):
        assert len(output.logprobs) == len(output.token_ids) > 0
        expected = _sampled_logprobs(0, prompt, output.token_ids)
        assert output.logprobs == pytest.approx(expected, abs=1e-3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_update_weights_serves_the_new_policy(backend, engines):
    engine = engines(backend)
    greedy = SamplingParams(max_new_tokens=12, temperature=0.0)
    engine.update_weights(load_model("tiny-random", seed=1)[0].state_dict())
    try:
        expected = [o.token_ids for o in _reference(seed=1).generate(PROMPTS, greedy)]
        assert expected != [o.token_ids for o in _reference(seed=0).generate(PROMPTS, greedy)]
        assert [o.token_ids for o in engine.generate(PROMPTS, greedy)] == expected
    finally:
        engine.update_weights(load_model("tiny-random", seed=0)[0].state_dict())


def test_vllm_built_from_the_policy_object_offloads_and_wakes_with_new_weights(tiny_folder):
    _skip_unless_installed("vllm")
    _, tokenizer = tiny_folder
    policy = load_model("tiny-random", seed=0)[0].to("cuda")
    engine = make_generator(
        "vllm", policy, tokenizer, dtype="float32", offload=True, device="cuda",
        max_batch_size=8, **ENGINE_OPTIONS["vllm"],
    )  # fmt: skip
    greedy = SamplingParams(max_new_tokens=12, temperature=0.0)
    assert [o.token_ids for o in engine.generate(PROMPTS, greedy)] == [
        o.token_ids for o in _reference(seed=0).generate(PROMPTS, greedy)
    ]
    free_awake = torch.cuda.mem_get_info()[0]
    engine.offload()
    assert torch.cuda.mem_get_info()[0] > free_awake  # its cache and weights left the GPU
    engine.update_weights(load_model("tiny-random", seed=1)[0].state_dict())  # wakes it
    assert [o.token_ids for o in engine.generate(PROMPTS, greedy)] == [
        o.token_ids for o in _reference(seed=1).generate(PROMPTS, greedy)
    ]
    folder = engine._folder
    engine.close()
    assert folder is not None and not Path(folder).exists()


def test_roll_agent_trains_with_vllm_as_the_generator(tmp_path):
    """Two RL steps of the frozenlake preset (its warm start, LoRA, weight sync after each
    update) with vLLM, on the trainer's GPU, sampling every reply."""
    _skip_unless_installed("vllm")
    run = tmp_path / "run"
    command = [
        sys.executable, "-m", "trainer.cli", "train", "--env", "frozenlake",
        "--model", "tiny-random", "--steps", "2", "--output", str(run),
        "--set", "generation.backend=vllm",
        "--set", "generation.gpu_memory_utilization=0.15",
        "--set", "generation.engine_args={enforce_eager: true}",
    ]  # fmt: skip
    repo = Path(__file__).resolve().parents[3]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=repo)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    steps = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in steps if "time/rollout" in m] == [1, 2]
    assert (run / "checkpoints" / "step-2" / "model" / "config.json").exists()
