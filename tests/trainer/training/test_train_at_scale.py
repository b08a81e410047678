"""``--strategy fsdp2|deepspeed --workers N`` from the command line and the pipeline: runs,
resumes across strategies, a two-node cluster, a dead worker, and every refusal."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

ray = pytest.importorskip("ray")

from tests.trainer.two_by_two_lake import TWO_BY_TWO_LAKE  # noqa: E402
from trainer.cli.main import main  # noqa: E402
from trainer.config import ConfigError, load_config  # noqa: E402
from trainer.strategies import from_config  # noqa: E402
from trainer.strategies.worker_group import TrainWorkerError  # noqa: E402
from trainer.training.checkpoint import checkpoint_step, latest_checkpoint  # noqa: E402
from trainer.training.pipeline import Pipeline  # noqa: E402

needs_deepspeed = pytest.mark.skipif(
    importlib.util.find_spec("deepspeed") is None,
    reason="DeepSpeed is not installed: DS_BUILD_OPS=0 pip install 'rollenv[deepspeed]'",
)
BASE = [*TWO_BY_TWO_LAKE, "model.lora=null"]


def _train(*args: str, **environment: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "trainer.cli", "train", "--env", "frozenlake"]
    command += ["--model", "tiny-random", *args]
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", **environment}
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)


@needs_deepspeed
def test_the_cli_trains_on_fsdp2_and_resumes_on_deepspeed(tmp_path):
    # the 2x2 lake, where returns differ inside a group, so every step moves the weights; the
    # warm start is left out to save time (it runs on the same strategy as RL)
    common = ["--output", str(tmp_path), "--workers", "2", "--set", "sft.before_rl=false"]
    for setting in (*BASE, "train.checkpoint_every=1"):
        common += ["--set", setting]
    first = _train("--strategy", "fsdp2", "--steps", "1", *common)
    assert first.returncode == 0, first.stderr[-2000:]
    assert checkpoint_step(latest_checkpoint(tmp_path)) == 1
    weights = tmp_path / "checkpoints" / "step-{}" / "model" / "model.safetensors"
    saved = load_file(str(weights).format(1))

    # a machine's first DeepSpeed run compiles no C++ (its shared-memory kernel took 2 minutes)
    extensions = tmp_path / "torch_extensions"
    second = _train(
        "--strategy", "deepspeed", "--steps", "2", "--resume", *common,
        TORCH_EXTENSIONS_DIR=str(extensions),
    )  # fmt: skip
    assert second.returncode == 0, second.stderr[-2000:]
    assert not any(extensions.rglob("*.so"))
    assert f"Resumed from {tmp_path / 'checkpoints' / 'step-1'} at step 1." in second.stdout
    assert "step 2/2" in second.stdout and "step 1/2" not in second.stdout
    assert checkpoint_step(latest_checkpoint(tmp_path)) == 2
    moved = load_file(str(weights).format(2))
    assert any(not torch.equal(saved[name], moved[name]) for name in saved)


def test_train_workers_run_on_the_second_node_of_a_two_node_cluster():
    from ray.cluster_utils import Cluster

    from trainer.strategies.batch import TokenBatch
    from trainer.strategies.ray_strategy import RayStrategy
    from trainer.strategies.torch_strategy import LossSettings
    from trainer.strategies.worker_group import WorkerSpec

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    second = cluster.add_node(num_cpus=2, resources={"trainer_node": 2})
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    try:
        spec = WorkerSpec("fsdp2", "tiny-random", 0, "cpu", {"pad_id": 0, "loss": LossSettings()})
        strategy = RayStrategy(spec, workers=2, cpus=1, resources={"trainer_node": 1})
        assert {who["node_id"] for who in strategy.group.identities} == {second.node_id}
        sequences = [list(range(5, 40)), list(range(7, 30))]
        masks = [torch.ones(len(s)) for s in sequences]
        old, _ = strategy.sequence_logprobs(sequences, masks)
        batch = TokenBatch(sequences, masks, [m.clone() for m in masks], old)
        metrics = strategy.train_step(batch)
        assert metrics["tokens"] == sum(float(m.sum()) for m in masks)
        assert metrics["grad_norm"] > 0
        strategy.close()
    finally:
        ray.shutdown()
        cluster.shutdown()


def test_a_dead_worker_leaves_the_last_complete_checkpoint_for_resume(tmp_path):
    overrides = [*BASE, f"train.output_dir={tmp_path}", "train.strategy=fsdp2", "train.workers=2"]
    pipeline = Pipeline(load_config(None, overrides), log=None)
    try:
        pipeline.train_step()
        pipeline.step = 1
        pipeline.save()
        pid = pipeline.strategy.group.identities[1]["pid"]
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(TrainWorkerError, match=rf"train worker 1 \(node .*, pid {pid}\)"):
            pipeline.train_step()
        with pytest.raises(TrainWorkerError, match="nothing more can run"):
            pipeline.step = 2
            pipeline.save()  # a stopped group writes no checkpoint that resume would trust
    finally:
        pipeline.close()
    assert checkpoint_step(latest_checkpoint(tmp_path)) == 1
    assert not (tmp_path / "checkpoints" / "step-2").exists()

    resumed = Pipeline(load_config(None, [*BASE, f"train.output_dir={tmp_path}"]), resume=True)
    assert resumed.step == 1


# ---------------------------------------------------------------------------- refusals
def _config(*overrides: str):
    return load_config(None, [*BASE, *overrides])


def test_torch_with_more_than_one_worker_is_refused():
    with pytest.raises(ConfigError, match="train.workers must be 1 .*use train.strategy=fsdp2"):
        from_config.check_strategy(_config("train.workers=2"))


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("train.strategy=fsdp3", "train.strategy: Input should be 'torch', 'fsdp2', 'deepspeed'"),
        (
            "train.deepspeed.zero_stage=4",
            "train.deepspeed.zero_stage: Input should be less than or equal to 3",
        ),
        (
            "train.deepspeed.zero_stage=0",
            "train.deepspeed.zero_stage: Input should be greater than or equal to 1",
        ),
        ("train.workers=0", "train.workers: Input should be greater than 0"),
    ],
)
def test_values_out_of_range_name_the_field(override, message):
    with pytest.raises(ConfigError, match=message):
        _config(override)


def test_a_strategy_not_installed_names_the_install_command(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        from_config.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "deepspeed" else real(name, *a),
    )
    with pytest.raises(ConfigError, match=r"needs deepspeed.*DS_BUILD_OPS=0 pip install"):
        from_config.check_strategy(_config("train.strategy=deepspeed", "train.workers=2"))


def test_megatron_without_a_gpu_says_what_it_needs():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    if importlib.util.find_spec("megatron") is None:
        pytest.skip("megatron-core is not installed (the test below covers that case)")
    with pytest.raises(ConfigError, match="megatron needs CUDA GPUs.*use train.strategy=fsdp2"):
        from_config.check_strategy(_config("train.strategy=megatron"))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["model.lora={r: 8}"], "megatron does not train LoRA adapters: drop model.lora"),
        (["train.mixed_precision=true"], "drop train.mixed_precision or use .*fsdp2"),
        (
            ["train.workers=3", "train.megatron.tensor_parallel=2"],
            "train.workers=3 is not a multiple of train.megatron.tensor_parallel=2",
        ),
    ],
    ids=["lora", "mixed-precision", "tensor-groups"],
)
def test_what_megatron_does_not_train_yet_is_refused_in_one_line(overrides, message):
    if importlib.util.find_spec("megatron") is None:
        pytest.skip("megatron-core is not installed (the test below covers that case)")
    with pytest.raises(ConfigError, match=message) as refused:
        from_config.check_strategy(_config("train.strategy=megatron", *overrides))
    assert "\n" not in str(refused.value)


def test_megatron_not_installed_names_the_install_and_the_gpus():
    if importlib.util.find_spec("megatron") is not None:
        pytest.skip("megatron-core is installed here (the test above covers that case)")
    with pytest.raises(
        ConfigError, match=r"needs megatron, which is not installed: pip .*CUDA GPUs"
    ):
        from_config.check_strategy(_config("train.strategy=megatron"))


@pytest.fixture
def two_cpus():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_more_workers_than_the_cluster_has_cpus_is_refused(two_cpus):
    with pytest.raises(ConfigError, match="need 3 CPUs but the Ray cluster has 2"):
        from_config.check_strategy(_config("train.strategy=fsdp2", "train.workers=3"))


def test_a_memory_plan_that_cannot_fit_is_refused_before_loading(two_cpus):
    config = _config("train.strategy=fsdp2", "train.workers=2", "train.worker_memory_gib=0.01")
    with pytest.raises(ConfigError, match=r"memory plan: fsdp2 ×2 needs .* but a worker has"):
        from_config.check_strategy(config)


def test_the_cli_prints_one_line_for_a_refused_config(capsys, tmp_path):
    status = main(
        ["train", "--env", "frozenlake", "--model", "tiny-random", "--output", str(tmp_path)]
        + ["--strategy", "torch", "--workers", "2"]
    )
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and "train.workers must be 1" in err
