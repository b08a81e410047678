"""``MegatronStrategy`` against ``TorchStrategy``: the same update, checkpoints both ways.

Real parts: megatron-core's local-spec ``GPTModel`` built from the tiny random Llama's config
and loaded with its converted weights, torch.distributed (gloo on the CPU, NCCL on a GPU).
Megatron-core's forward is written for CUDA: on the CPU the tests patch its two CUDA-only
spots (``tests/trainer/strategies/megatron_world.py``); the ``cuda`` cases run it unpatched on a
GPU.

Parity is measured as in ``test_train_workers.py``: after one AdamW step from the same start
on the same batch, the distance to ``torch ×1``'s weights against the size of ``torch ×1``'s
own update (measured on the CPU: 1.8e-5 with a value head and a KL term).
"""

from __future__ import annotations

import contextlib
import importlib.util

import pytest
import torch

# found, not imported: megatron-core takes 8 s to import, which every pytest-xdist worker would
# pay while collecting; the strategy imports it where a test builds one
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("megatron.core") is None, reason="pip install 'rollenv[megatron]'"
)

from tests.trainer.strategies.megatron_world import (  # noqa: E402
    cpu_forward_patches,
    free_port,
    megatron_world,
)
from trainer.models import load_model  # noqa: E402
from trainer.strategies.batch import TokenBatch  # noqa: E402
from trainer.strategies.megatron_strategy import MegatronStrategy  # noqa: E402
from trainer.strategies.torch_strategy import LossSettings, TorchStrategy  # noqa: E402

#: ||W_megatron - W_torch|| must stay below this fraction of ||W_torch - W_start||.
PARITY = 1e-4

DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=[
            pytest.mark.gpu,
            pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
        ],
    ),
]


@pytest.fixture(scope="module")
def world():
    with megatron_world():
        yield


@pytest.fixture
def device(request, world):
    """The device a case trains on; on the CPU, with Megatron's CUDA-only spots patched."""
    with cpu_forward_patches() if request.param == "cpu" else contextlib.nullcontext():
        yield request.param


@pytest.fixture(scope="module")
def pad_id() -> int:
    return load_model("tiny-random", seed=0)[1].pad_token_id


def _options(pad_id: int, **extra) -> dict:
    # a budget of 64 tokens cuts the batch into several micro-batches
    loss = LossSettings(kl_coef=0.1)
    return {"pad_id": pad_id, "lr": 1e-3, "micro_batch_tokens": 64, "loss": loss, **extra}


def _policy(device: str):
    return load_model("tiny-random", seed=0)[0].to(device)


def _batch(strategy, *, critic: bool, seed: int = 0) -> TokenBatch:
    g = torch.Generator().manual_seed(seed)
    lengths = [40, 25, 60, 33, 18, 50, 12]
    sequences = [torch.randint(5, 1000, (n,), generator=g).tolist() for n in lengths]
    masks = [torch.cat([torch.zeros(n // 2), torch.ones(n - n // 2)]) for n in lengths]
    advantages = [torch.randn(n, generator=g) * m for n, m in zip(lengths, masks, strict=True)]
    old, values = strategy.sequence_logprobs(sequences, masks, with_values=critic)
    reference = [x + 0.01 * torch.randn(x.shape, generator=g) for x in old]  # a KL to pay
    returns = [torch.randn(n, generator=g) for n in lengths] if critic else None
    return TokenBatch(sequences, masks, advantages, old, reference, values, returns)


def _distance(a: dict, b: dict) -> float:
    return sum(float((a[k].float() - b[k].float()).pow(2).sum()) for k in a) ** 0.5


@pytest.mark.parametrize("device", DEVICES, indirect=True)
@pytest.mark.parametrize("critic", [False, True], ids=["grpo", "ppo"])
def test_one_update_gives_the_weights_of_torch(device, pad_id, critic):
    options = _options(pad_id, value_head=critic, reference=True)
    single = TorchStrategy(_policy(device), **options)
    megatron = MegatronStrategy(_policy(device), **options)
    batch = _batch(single, critic=critic)
    ours, _ = megatron.sequence_logprobs(batch.token_ids, batch.loss_mask)
    for a, b in zip(ours, batch.old_logprobs, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    reference = megatron.reference_logprobs(batch.token_ids, batch.loss_mask)
    for a, b in zip(reference, ours, strict=True):  # the frozen copy starts where the policy does
        torch.testing.assert_close(a, b, atol=0, rtol=0)

    start = {k: v.clone() for k, v in single.inference_state_dict().items()}
    expected, got = single.train_step(batch), megatron.train_step(batch)
    assert got.keys() == expected.keys()
    for name in expected:
        assert got[name] == pytest.approx(expected[name], rel=1e-4, abs=1e-6), name
    after = single.inference_state_dict()
    weights = megatron.inference_state_dict()
    assert weights.keys() == after.keys()
    assert _distance(weights, after) < PARITY * _distance(after, start)
    # the reference stays where it was
    again = megatron.reference_logprobs(batch.token_ids, batch.loss_mask)
    assert all(torch.equal(a, b) for a, b in zip(again, reference, strict=True))


@pytest.mark.parametrize("device", DEVICES, indirect=True)
def test_checkpoints_move_between_megatron_and_torch(device, pad_id, tmp_path):
    options = _options(pad_id, value_head=True)
    megatron = MegatronStrategy(_policy(device), **options)
    batch = _batch(megatron, critic=True)
    megatron.train_step(batch)
    megatron.save(tmp_path / "megatron")
    assert (tmp_path / "megatron" / "model" / "config.json").exists()

    # megatron -> torch: the same weights, value head and AdamW moments, by Hugging Face name
    single = TorchStrategy(_policy(device), **options)
    single.load(tmp_path / "megatron")
    assert _distance(single.inference_state_dict(), megatron.inference_state_dict()) == 0
    saved, loaded = megatron.optimizer_state_by_name(), single.optimizer_state_by_name()
    assert saved.keys() == loaded.keys()
    assert "value_head.weight" in saved and "lm_head.weight" not in saved  # tied, as in torch
    for name, state in saved.items():
        for key in ("step", "exp_avg", "exp_avg_sq"):
            assert torch.equal(state[key].cpu(), loaded[name][key].cpu()), (name, key)

    # torch -> megatron, then both take the same next step
    single.train_step(batch)
    single.save(tmp_path / "torch")
    resumed = MegatronStrategy(load_model("tiny-random", seed=1)[0].to(device), **options)
    resumed.load(tmp_path / "torch")
    assert _distance(resumed.inference_state_dict(), single.inference_state_dict()) == 0
    start = {k: v.clone() for k, v in single.inference_state_dict().items()}  # views, else
    single.train_step(batch)
    resumed.train_step(batch)
    after = single.inference_state_dict()
    assert _distance(resumed.inference_state_dict(), after) < PARITY * _distance(after, start)


@pytest.mark.parametrize("device", DEVICES, indirect=True)
def test_a_supervised_step_gives_the_weights_of_torch(device, pad_id):
    options = _options(pad_id)
    single = TorchStrategy(_policy(device), **options)
    megatron = MegatronStrategy(_policy(device), **options)
    batch = _batch(single, critic=False)
    start = {k: v.clone() for k, v in single.inference_state_dict().items()}
    expected, got = single.supervised_step(batch), megatron.supervised_step(batch)
    assert got["sft/loss"] == pytest.approx(expected["sft/loss"], rel=1e-5)
    after = single.inference_state_dict()
    assert _distance(megatron.inference_state_dict(), after) < PARITY * _distance(after, start)


def test_weights_gathered_in_buckets_are_the_inference_weights(world, pad_id):
    with cpu_forward_patches():
        megatron = MegatronStrategy(_policy("cpu"), **_options(pad_id))
        megatron.train_step(_batch(megatron, critic=False))
    weights = megatron.inference_state_dict()
    sizes = megatron.weight_sizes()
    assert sizes == {k: v.numel() * v.element_size() for k, v in weights.items()}
    names = list(sizes)
    gathered = {}
    for start in range(0, len(names), 4):  # buckets that cut layers apart
        bucket = megatron.gather_weights(names[start : start + 4])
        assert list(bucket) == names[start : start + 4]
        gathered.update(bucket)
    assert gathered.keys() == weights.keys()
    assert all(torch.equal(gathered[k], weights[k]) for k in weights)


def _data_parallel_worker(rank: int, port: int, parts: list, total: float, pad_id: int, out):
    # gloo on the CPU, also on a GPU machine (NCCL refuses two ranks on one GPU)
    with megatron_world(rank, 2, port, backend="gloo"), cpu_forward_patches():
        strategy = MegatronStrategy(_policy("cpu"), **_options(pad_id))
        metrics = strategy.train_step(parts[rank], total=total)
        weights = strategy.inference_state_dict()
        if rank == 0:
            torch.save({"weights": weights, "grad_norm": metrics["grad_norm"]}, out)


@pytest.mark.parametrize(
    "split",
    [[[0, 2, 4, 6], [1, 3, 5]], [[0, 1, 2, 3, 4, 5, 6], []]],
    ids=["halves", "one-idle"],
)
def test_two_data_parallel_workers_give_the_update_of_one_process(world, pad_id, tmp_path, split):
    """Two processes (gloo), each with its part of the batch and the whole batch's
    normaliser: their summed gradients must give one process's step (also when one of them
    has no sequence)."""
    with cpu_forward_patches():
        single = MegatronStrategy(_policy("cpu"), **_options(pad_id))
        batch = _batch(single, critic=False)
        start = {k: v.clone() for k, v in single.inference_state_dict().items()}
        expected = single.train_step(batch)
        after = single.inference_state_dict()
    parts = [batch.select(indices) for indices in split]
    out = tmp_path / "rank0.pt"
    torch.multiprocessing.spawn(
        _data_parallel_worker,
        args=(free_port(), parts, float(batch.valid_tokens), pad_id, out),
        nprocs=2,
    )
    result = torch.load(out)
    assert result["grad_norm"] == pytest.approx(expected["grad_norm"], rel=1e-5)
    assert _distance(result["weights"], after) < PARITY * _distance(after, start)


def _tensor_parallel_worker(rank: int, port: int, batch, folder, pad_id: int, out) -> None:
    """One of two tensor-parallel ranks: a step, a save, the weights by buckets, a load."""
    with megatron_world(rank, 2, port, "gloo", tensor_parallel=2), cpu_forward_patches():
        options = _options(pad_id, value_head=True, reference=True)
        strategy = MegatronStrategy(_policy("cpu"), tensor_parallel=2, **options)
        held = strategy.local_bytes()["parameters"]
        logprobs, _ = strategy.sequence_logprobs(batch.token_ids, batch.loss_mask)
        metrics = strategy.train_step(batch)
        weights = strategy.inference_state_dict()
        names = list(strategy.weight_sizes())
        buckets = {}
        for start in range(0, len(names), 5):
            buckets.update(strategy.gather_weights(names[start : start + 5]))
        strategy.save(folder / "tp2")
        moments = strategy.optimizer_state_by_name()
        strategy.load(folder / "torch")  # a torch x1 checkpoint, resharded on load
        loaded = strategy.inference_state_dict()
        loaded_moments = strategy.optimizer_state_by_name()
        if rank == 0:
            torch.save(
                {
                    "held": held,
                    "logprobs": logprobs,
                    "metrics": metrics,
                    "weights": weights,
                    "buckets": buckets,
                    "moments": moments,
                    "loaded": loaded,
                    "loaded_moments": loaded_moments,
                },
                out,
            )


def test_tensor_parallel_ranks_give_the_update_of_one_process(world, pad_id, tmp_path):
    """Two ranks (gloo), each holding half of every matrix, on the same batch: the same
    log-probs, metrics and update as torch x1; a checkpoint each way."""
    with cpu_forward_patches():
        options = _options(pad_id, value_head=True, reference=True)
        single = TorchStrategy(_policy("cpu"), **options)
        batch = _batch(single, critic=True)
        start = {k: v.clone() for k, v in single.inference_state_dict().items()}
        expected = single.train_step(batch)
        after = single.inference_state_dict()
        single.save(tmp_path / "torch")  # what the ranks load at the end
        whole = MegatronStrategy(_policy("cpu"), **options).local_bytes()["parameters"]
    out = tmp_path / "rank0.pt"
    torch.multiprocessing.spawn(
        _tensor_parallel_worker, args=(free_port(), batch, tmp_path, pad_id, out), nprocs=2
    )
    result = torch.load(out)
    # each rank holds half of the matrices, all of the norms and the value head
    assert 0.45 * whole < result["held"] < 0.6 * whole
    for a, b in zip(result["logprobs"], batch.old_logprobs, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    for name, value in expected.items():
        assert result["metrics"][name] == pytest.approx(value, rel=1e-4, abs=1e-6), name
    weights = result["weights"]
    assert weights.keys() == after.keys()
    assert _distance(weights, after) < PARITY * _distance(after, start)
    assert all(torch.equal(result["buckets"][k], weights[k]) for k in weights)
    # the TP=2 checkpoint loads into torch x1 exactly, moments by Hugging Face name included
    reader = TorchStrategy(_policy("cpu"), **options)
    reader.load(tmp_path / "tp2")
    assert _distance(reader.inference_state_dict(), weights) == 0
    for name, state in reader.optimizer_state_by_name().items():
        for key in ("exp_avg", "exp_avg_sq"):
            assert torch.equal(state[key], result["moments"][name][key]), (name, key)
    # and torch x1's checkpoint loads into the two ranks exactly
    assert _distance(result["loaded"], after) == 0
    saved = single.optimizer_state_by_name()
    assert result["loaded_moments"].keys() == saved.keys()
    for name, state in saved.items():
        for key in ("exp_avg", "exp_avg_sq"):
            assert torch.equal(state[key], result["loaded_moments"][name][key]), (name, key)


def test_lora_and_parallel_sizes_are_refused_in_one_line(world, pad_id):
    from trainer.config import LoraConfig

    with pytest.raises(ValueError, match="does not train LoRA adapters; use fsdp2"):
        MegatronStrategy(_policy("cpu"), lora=LoraConfig(), **_options(pad_id))
    with pytest.raises(ValueError, match="1 workers do not divide into tensor-parallel groups"):
        MegatronStrategy(_policy("cpu"), tensor_parallel=2, **_options(pad_id))
    with pytest.raises(ValueError, match=r"pipeline_parallel=1 for now \(got 2\)"):
        MegatronStrategy(_policy("cpu"), pipeline_parallel=2, **_options(pad_id))


@pytest.mark.gpu
@pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="Megatron's activation recompute forks the CUDA RNG tracker: CUDA only",
)
def test_activation_checkpointing_gives_the_same_update_on_gpu(world, pad_id):
    options = _options(pad_id)
    plain = MegatronStrategy(_policy("cuda"), **options)
    recomputed = MegatronStrategy(_policy("cuda"), activation_checkpointing=True, **options)
    batch = _batch(plain, critic=False)
    start = {k: v.clone() for k, v in plain.inference_state_dict().items()}
    plain.train_step(batch)
    recomputed.train_step(batch)
    after = plain.inference_state_dict()
    assert _distance(recomputed.inference_state_dict(), after) < PARITY * _distance(after, start)
