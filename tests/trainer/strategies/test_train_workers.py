"""Ray groups of train workers (FSDP2, DeepSpeed ZeRO) against the one-process strategy.

Real parts: a local Ray cluster, two worker processes joined in a gloo process group, the
tiny random Llama. Parity is measured on the weights after one AdamW step from the same
start on the same batch: the difference to ``torch ×1``'s weights, in norm, against the norm
of ``torch ×1``'s own update (measured: 1.2e-6 for fsdp2 and ZeRO-1/2, 6.7e-6 for ZeRO-3;
the largest single weight's difference 3e-6 to 2e-5, where Adam's first step moves every
weight by about lr = 1e-3).
"""

from __future__ import annotations

import pytest
import torch

ray = pytest.importorskip("ray")

from trainer.models import load_model  # noqa: E402
from trainer.strategies.batch import TokenBatch  # noqa: E402
from trainer.strategies.ray_strategy import RayStrategy  # noqa: E402
from trainer.strategies.torch_strategy import LossSettings, TorchStrategy  # noqa: E402
from trainer.strategies.worker_group import TrainWorkerError, WorkerSpec  # noqa: E402

#: ||W_workers - W_torch|| must stay below this fraction of ||W_torch - W_start||.
PARITY = 1e-4

needs_deepspeed = pytest.mark.skipif(
    __import__("importlib").util.find_spec("deepspeed") is None,
    reason="DeepSpeed is not installed: DS_BUILD_OPS=0 pip install 'rollenv[deepspeed]'",
)

KINDS = {
    "fsdp2": ("fsdp2", {}),
    "zero1": ("deepspeed", {"zero_stage": 1}),
    "zero2": ("deepspeed", {"zero_stage": 2}),
    "zero3": ("deepspeed", {"zero_stage": 3}),
}
PARAMS = [
    pytest.param(name, marks=[needs_deepspeed] if name.startswith("zero") else []) for name in KINDS
]


@pytest.fixture(scope="module")
def pad_id() -> int:
    return load_model("tiny-random", seed=0)[1].pad_token_id


def _options(pad_id: int, **extra) -> dict:
    # a budget of 64 tokens cuts each worker's part into several micro-batches
    options = {"pad_id": pad_id, "lr": 1e-3, "micro_batch_tokens": 64, "loss": LossSettings()}
    return {**options, **extra}


def _batch(strategy, seed: int, prefix: int = 0) -> TokenBatch:
    g = torch.Generator().manual_seed(seed)
    lengths = [40, 25, 60, 33, 18, 50, 12]
    shared = torch.randint(5, 1000, (prefix,), generator=g).tolist()
    sequences = [shared + torch.randint(5, 1000, (n,), generator=g).tolist() for n in lengths]
    masks = [torch.cat([torch.zeros(prefix + n // 2), torch.ones(n - n // 2)]) for n in lengths]
    lengths = [prefix + n for n in lengths]
    advantages = [torch.randn(n, generator=g) * m for n, m in zip(lengths, masks, strict=True)]
    old, _ = strategy.sequence_logprobs(sequences, masks)
    return TokenBatch(sequences, masks, advantages, old)


def _torch_strategy(pad_id: int, **extra) -> TorchStrategy:
    return TorchStrategy(load_model("tiny-random", seed=0)[0], **_options(pad_id, **extra))


def _group(kind: str, pad_id: int, workers: int = 2, **extra) -> RayStrategy:
    strategy, own = KINDS[kind]
    spec = WorkerSpec(strategy, "tiny-random", 0, "cpu", {**_options(pad_id, **extra), **own})
    return RayStrategy(spec, workers=workers, cpus=1)


def _on_cpu(tensors):
    """A copy of a dict of tensors, or of a ``TokenBatch``'s four lists, on the CPU."""
    if isinstance(tensors, dict):
        return {k: v.detach().cpu().clone() for k, v in tensors.items()}
    return [
        [t.cpu() if isinstance(t, torch.Tensor) else t for t in part]
        for part in (tensors.token_ids, tensors.loss_mask, tensors.advantages, tensors.old_logprobs)
    ]


def _distance(a: dict, b: dict) -> float:
    return sum(float((a[k] - b[k]).pow(2).sum()) for k in a) ** 0.5


@pytest.mark.parametrize("kind", PARAMS)
def test_updates_on_two_workers_give_the_weights_of_one_process(ray_cluster, pad_id, kind):
    # two updates: the second one steps AdamW's state too, and the parameters the first
    # one left (on DeepSpeed, through the master partition it shares with them)
    single = _torch_strategy(pad_id)
    batch = _batch(single, seed=0)
    start = {k: v.clone() for k, v in single.inference_state_dict().items()}
    expected_metrics = single.train_step(batch)
    second = _batch(single, seed=1)
    single.train_step(second)
    expected = single.inference_state_dict()
    group = _group(kind, pad_id)
    try:
        logprobs, _ = group.sequence_logprobs(batch.token_ids, batch.loss_mask)
        for ours, theirs in zip(logprobs, batch.old_logprobs, strict=True):
            torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=0)
        metrics = group.train_step(batch)
        group.train_step(second)
        weights = group.inference_state_dict()
        sizes = group.local_bytes()
    finally:
        group.close()
    assert set(weights) == set(expected)
    update = _distance(expected, start)
    assert update > 0
    print(
        f"{kind}: ||W - W_torch|| / ||W_torch - W_0|| = {_distance(weights, expected) / update:.2e}"
    )
    assert _distance(weights, expected) < PARITY * update
    for name in ("loss", "grad_norm", "tokens", "policy/entropy"):
        assert metrics[name] == pytest.approx(expected_metrics[name], rel=1e-4, abs=1e-6)

    # sharding: each worker holds about half of what one process holds
    held = single.local_bytes()
    parameters, optimizer = held["parameters"], held["optimizer"]
    for worker in sizes:
        assert worker["optimizer"] <= 0.6 * optimizer  # every strategy shards AdamW's state
        if kind in ("fsdp2", "zero3"):
            assert worker["parameters"] <= 0.6 * parameters
        else:  # ZeRO-1/2 keep every parameter on every worker
            assert worker["parameters"] >= parameters
        # float32 training: DeepSpeed's master partition is the parameters' own, not a copy
        assert worker["master_copy"] == 0
        if kind == "zero3":  # its gradient partition is held from a backward pass to the step
            assert worker["gradient_buffer"] == 0


def test_sequences_sharing_a_prefix_give_the_same_update_on_two_workers(
    ray_cluster, pad_id, monkeypatch
):
    # every sequence begins with the same 20 tokens, none scored: packed micro-batches hold
    # them once (trainer.strategies.packing), on the workers as in one process
    from trainer.strategies import logprobs

    shared = []
    real = logprobs.pack_sharing_prefix
    monkeypatch.setattr(
        logprobs, "pack_sharing_prefix", lambda s, n: shared.append(n) or real(s, n)
    )
    single = _torch_strategy(pad_id, micro_batch_tokens=256)
    batch = _batch(single, seed=2, prefix=20)
    assert shared and set(shared) == {20}  # the old log-probs were computed sharing it
    start = {k: v.clone() for k, v in single.inference_state_dict().items()}
    single.train_step(batch)
    expected = single.inference_state_dict()
    group = _group("fsdp2", pad_id, micro_batch_tokens=256)
    try:
        group.train_step(batch)
        weights = group.inference_state_dict()
    finally:
        group.close()
    assert _distance(weights, expected) < PARITY * _distance(expected, start)


@pytest.mark.parametrize("kind", [PARAMS[0], PARAMS[3]])
def test_value_head_reference_and_lora_match_one_process(ray_cluster, pad_id, kind):
    """PPO's value head and the KL reference (full fine-tuning), then LoRA (its reference is
    the base model with the adapters off), sharded, against torch ×1."""
    from trainer.config import LoraConfig

    for extra in (
        {"value_head": True, "reference": True},
        {"lora": LoraConfig(r=4, alpha=8), "reference": True},
    ):
        torch.manual_seed(0)  # LoRA's adapters are drawn as the workers draw them (seed 0)
        single = _torch_strategy(pad_id, **extra)
        batch = _batch(single, seed=0)
        values = single.sequence_logprobs(batch.token_ids, batch.loss_mask, with_values=True)[1]
        reference = single.reference_logprobs(batch.token_ids, batch.loss_mask)
        batch.ref_logprobs = reference
        if values is not None:
            batch.old_values, batch.returns = values, [v + 1.0 for v in values]
        start = {k: v.clone() for k, v in single.inference_state_dict().items()}
        single.train_step(batch)
        expected = single.inference_state_dict()
        group = _group(kind, pad_id, **extra)
        try:
            ours = group.sequence_logprobs(batch.token_ids, batch.loss_mask, with_values=True)[1]
            ours_reference = group.reference_logprobs(batch.token_ids, batch.loss_mask)
            group.train_step(batch)
            weights = group.inference_state_dict()
        finally:
            group.close()
        for a, b in zip(ours_reference, reference, strict=True):
            torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
        if values is not None:
            for a, b in zip(ours, values, strict=True):
                torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
        assert _distance(weights, expected) < PARITY * _distance(expected, start), sorted(extra)


@needs_deepspeed
def test_checkpoints_move_between_strategies_and_world_sizes(ray_cluster, pad_id, tmp_path):
    """torch ×1 saves, fsdp2 ×2 resumes it and saves, ZeRO-3 ×2 resumes that and saves, and
    torch ×1 resumes the last: each starts from exactly the weights and AdamW state saved,
    and its next update matches torch ×1's from the same checkpoint."""
    reference = _torch_strategy(pad_id)
    batches = [_batch(reference, seed) for seed in range(3)]
    reference.train_step(batches[0])
    reference.save(tmp_path / "torch")

    def continues_like_torch(strategy, folder, batch) -> None:
        reference.load(folder)
        before = {k: v.clone() for k, v in reference.inference_state_dict().items()}
        assert _distance(strategy.inference_state_dict(), before) == 0.0
        strategy.train_step(batch)
        reference.train_step(batch)
        after = reference.inference_state_dict()
        assert _distance(strategy.inference_state_dict(), after) < PARITY * _distance(after, before)

    fsdp2 = _group("fsdp2", pad_id)
    try:
        fsdp2.load(tmp_path / "torch")
        continues_like_torch(fsdp2, tmp_path / "torch", batches[1])
        fsdp2.save(tmp_path / "fsdp2")
    finally:
        fsdp2.close()
    saved = torch.load(tmp_path / "fsdp2" / "strategy.pt", weights_only=False)
    steps = {float(s["step"]) for s in saved["optimizer_by_name"].values()}
    assert steps == {2.0}  # AdamW's step count went on from the torch checkpoint's 1

    zero3 = _group("zero3", pad_id)
    try:
        zero3.load(tmp_path / "fsdp2")
        continues_like_torch(zero3, tmp_path / "fsdp2", batches[2])
        zero3.save(tmp_path / "zero3")
        final = zero3.inference_state_dict()
    finally:
        zero3.close()

    resumed = _torch_strategy(pad_id)
    resumed.load(tmp_path / "zero3")
    assert _distance(resumed.inference_state_dict(), final) == 0.0
    theirs = dict(reference.trainable_parameters())  # the same steps, in one process
    for name, parameter in resumed.trainable_parameters():
        ours = resumed.optimizer.state[parameter]
        assert float(ours["step"]) == 3.0
        torch.testing.assert_close(
            ours["exp_avg"], reference.optimizer.state[theirs[name]]["exp_avg"], atol=1e-6, rtol=0
        )


def test_a_worker_killed_during_a_step_ends_it_with_an_error_naming_it(ray_cluster, pad_id):
    import os
    import signal
    import threading

    group = _group("fsdp2", pad_id)
    pid = group.group.identities[1]["pid"]
    batch = _batch(group, seed=0)
    outcome: list[BaseException] = []

    def step() -> None:
        try:
            group.train_step(batch)
        except BaseException as error:  # noqa: BLE001 - handed to the test's thread
            outcome.append(error)

    runner = threading.Thread(target=step)
    runner.start()
    os.kill(pid, signal.SIGKILL)  # while the step is in flight
    runner.join(timeout=300)
    assert not runner.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], TrainWorkerError)
    assert "train worker 1 (node " in str(outcome[0])
    assert f"pid {pid}) died during update" in str(outcome[0])
    assert group.group.actors == []  # the survivor is stopped too: it would wait forever


GPU_KINDS = [
    pytest.param("fsdp2", {}, id="fsdp2"),
    pytest.param(
        "megatron",
        {},
        id="megatron",
        marks=pytest.mark.skipif(
            __import__("importlib").util.find_spec("megatron") is None,
            reason="megatron-core is not installed: pip install 'rollenv[megatron]'",
        ),
    ),
]


@pytest.mark.gpu
@pytest.mark.parametrize(("strategy", "own"), GPU_KINDS)
def test_a_gpu_worker_group_updates_as_one_process_does(ray_cluster, pad_id, strategy, own):
    """The whole worker path on CUDA (NCCL process group, the workers agreeing on their
    micro-batch count, gathered weights) against ``TorchStrategy`` on the same GPU."""
    if not ray.cluster_resources().get("GPU"):
        pytest.skip("the Ray cluster sees no GPU")
    single = TorchStrategy(load_model("tiny-random", seed=0)[0].cuda(), **_options(pad_id))
    batch = _batch(single, seed=0)
    batch = TokenBatch(*_on_cpu(batch))
    start = _on_cpu(single.inference_state_dict())
    single.train_step(batch)
    expected = _on_cpu(single.inference_state_dict())
    spec = WorkerSpec(strategy, "tiny-random", 0, "cuda", {**_options(pad_id), **own})
    group = RayStrategy(spec, workers=1, cpus=1, gpus=1)
    try:
        group.train_step(batch)
        weights = _on_cpu(group.inference_state_dict())
    finally:
        group.close()
    update = _distance(expected, start)
    assert update > 0
    assert _distance(weights, expected) < PARITY * update
