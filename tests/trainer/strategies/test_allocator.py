"""``train.allocator``: train workers that allocate with jemalloc, the torch strategy that can
only have it from its own start, and each refusal in one line."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from trainer.config import ConfigError, load_config
from trainer.strategies import allocator as allocator_module
from trainer.strategies import from_config
from trainer.strategies.allocator import jemalloc_library, loaded_allocator

ray = pytest.importorskip("ray")

needs_jemalloc = pytest.mark.skipif(
    jemalloc_library() is None,
    reason="libjemalloc is not installed: apt-get install libjemalloc2",
)
TINY = ["model.name=tiny-random", "model.lora=null"]


def _config(*overrides: str):
    return load_config(None, [*TINY, *overrides])


@needs_jemalloc
def test_fsdp2_workers_allocate_with_jemalloc_when_asked(ray_cluster):
    if loaded_allocator() == "jemalloc":
        pytest.skip("this test process was started with jemalloc: its workers would inherit it")
    config = _config("train.strategy=fsdp2", "train.workers=2", "train.allocator=jemalloc")
    strategy = from_config.build_strategy(config, None, pad_id=0)
    try:
        assert [worker["allocator"] for worker in strategy.group.identities] == ["jemalloc"] * 2
    finally:
        strategy.close()


def test_a_worker_where_jemalloc_did_not_load_is_named(ray_cluster, monkeypatch, tmp_path):
    from trainer.strategies import worker_group
    from trainer.strategies.train_worker_error import TrainWorkerError
    from trainer.strategies.worker_group import TrainWorkerGroup, WorkerSpec

    missing = str(tmp_path / "libjemalloc.so.2")  # as on a node without the package
    monkeypatch.setattr(worker_group, "allocator_env_vars", lambda _: {"LD_PRELOAD": missing})
    spec = WorkerSpec("fsdp2", "tiny-random", 0, "cpu", {"pad_id": 0}, allocator="jemalloc")
    with pytest.raises(TrainWorkerError) as refused:
        TrainWorkerGroup(spec, workers=1, cpus=1)
    message = str(refused.value)
    assert message.startswith("train worker ") and " during setup" in message
    assert "train.allocator=jemalloc, but train worker" in message
    assert f"{missing} did not load there (apt-get install libjemalloc2" in message


def test_the_torch_strategy_without_jemalloc_names_the_preload_that_gives_it():
    if loaded_allocator() == "jemalloc":
        pytest.skip("this test process was started with jemalloc")
    if jemalloc_library() is None:
        pytest.skip("libjemalloc is not installed: the test below covers that case")
    with pytest.raises(ConfigError) as refused:
        from_config.check_strategy(_config("train.allocator=jemalloc"))
    message = str(refused.value)
    assert "train.strategy=torch trains in this process" in message
    assert f"start it with LD_PRELOAD={jemalloc_library()} " in message


@needs_jemalloc
def test_the_torch_strategy_trains_in_a_process_started_with_jemalloc():
    script = (
        "from trainer.config import load_config\n"
        "from trainer.models import load_model\n"
        "from trainer.strategies.allocator import loaded_allocator\n"
        "from trainer.strategies.from_config import build_strategy\n"
        f"config = load_config(None, {[*TINY, 'train.allocator=jemalloc']!r})\n"
        "model, tokenizer = load_model('tiny-random', seed=0)\n"
        "build_strategy(config, model, tokenizer.pad_token_id)\n"
        "print(loaded_allocator())\n"
    )
    env = {**os.environ, "LD_PRELOAD": jemalloc_library()}
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split()[-1] == "jemalloc"


@pytest.mark.parametrize("strategy", ["torch", "fsdp2"])
def test_jemalloc_not_installed_names_the_install(monkeypatch, strategy):
    monkeypatch.setattr(allocator_module, "jemalloc_library", lambda: None)
    monkeypatch.setattr(from_config, "loaded_allocator", lambda: "default")
    workers = "1" if strategy == "torch" else "2"
    config = _config(
        f"train.strategy={strategy}", f"train.workers={workers}", "train.allocator=jemalloc"
    )
    with pytest.raises(ConfigError, match="libjemalloc is not installed here: apt-get install"):
        from_config.check_strategy(config)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["train.allocator=tcmalloc"], "train.allocator: Input should be 'default' or 'jemalloc'"),
        (
            ["train.allocator=jemalloc", "train.return_freed_memory=true"],
            "train.return_freed_memory sets glibc's malloc, which train.allocator=jemalloc "
            "replaces: set one of them",
        ),
    ],
)
def test_a_bad_allocator_setting_is_one_line(overrides, message):
    with pytest.raises(ConfigError, match=message) as refused:
        _config(*overrides)
    assert "\n" not in str(refused.value)
