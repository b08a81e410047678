"""What the GPU engines need before they start, checked on this CPU machine (no vLLM here)."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

torch = pytest.importorskip("torch")

from rollenv.extras import MissingExtraError  # noqa: E402
from trainer.config import ConfigError, load_config  # noqa: E402
from trainer.generation.engine_folder import (  # noqa: E402
    engine_model_folder,
    require_cuda_device,
)
from trainer.generation.from_config import check_generation_backend  # noqa: E402
from trainer.models import load_model  # noqa: E402


def test_a_model_object_is_written_to_a_folder_the_engine_can_load(tmp_path):
    model, tokenizer = load_model("tiny-random", seed=3)
    folder, temporary = engine_model_folder(model, tokenizer)
    try:
        assert temporary == folder
        reloaded, reloaded_tokenizer = load_model(folder)
        for name, tensor in model.state_dict().items():
            assert torch.equal(reloaded.state_dict()[name], tensor), name
        assert reloaded_tokenizer.eos_token_id == tokenizer.eos_token_id
    finally:
        shutil.rmtree(folder)


def test_a_folder_is_used_as_it_is(tmp_path):
    assert engine_model_folder(str(tmp_path), None) == (str(tmp_path), None)


@pytest.mark.parametrize("device", ["cpu", torch.device("cpu"), "mps"])
def test_a_device_that_is_not_a_gpu_is_refused_naming_the_fix(device):
    with pytest.raises(ValueError, match="generates on a CUDA GPU.*set train.device=cuda"):
        require_cuda_device(device, "vllm")
    require_cuda_device("cuda:1", "vllm")
    require_cuda_device(None, "vllm")


def test_the_run_check_refuses_a_gpu_engine_on_the_cpu():
    config = load_config("frozenlake", ["generation.backend=vllm"])
    with pytest.raises(ConfigError, match="this run's device is cpu"):
        check_generation_backend(config, torch.device("cpu"))
    check_generation_backend(load_config("frozenlake"), torch.device("cpu"))  # continuous


@pytest.mark.parametrize("backend", ["vllm", "sglang"])
def test_the_run_check_names_the_install_of_a_missing_engine(backend):
    if importlib.util.find_spec(backend) is not None:
        pytest.skip(f"{backend} is installed here")
    config = load_config("frozenlake", [f"generation.backend={backend}"])
    with pytest.raises(MissingExtraError, match=rf"pip install 'rollenv\[train,{backend}\]'"):
        check_generation_backend(config, torch.device("cuda"))
