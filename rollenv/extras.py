"""Optional dependencies: importing them, and one clear error naming the install when missing.

Standard library only, so the CLI can use it before anything heavy is imported.
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: How to install each optional extra. torch is pinned first: an unpinned torch from PyPI drags
#: in several GB of CUDA packages. The training strategies' extras are named with their
#: strategies, in ``trainer.strategy_registry`` (``Requirement``).
INSTALL_COMMANDS = {
    "train": "pip install torch==2.13.0 && pip install 'rollenv[train]'",
    "serve": "pip install torch==2.13.0 && pip install 'rollenv[train,serve]'",
    "leaderboard": "pip install 'rollenv[leaderboard]'",
    # the GPU engines pin their own torch and CUDA wheels: no CPU torch first
    "vllm": "pip install 'rollenv[train,vllm]' (on a machine with a CUDA GPU)",
    "sglang": "pip install 'rollenv[train,sglang]' (on a machine with a CUDA GPU)",
}


class MissingExtraError(RuntimeError):
    """An optional dependency is not installed; the message names the pip command."""


def require_extra(module: str, extra: str) -> ModuleType:
    """Imports ``module``, which comes with rollenv's optional ``extra``.

    Args:
        module: the module to import, e.g. ``"torch"``.
        extra: the rollenv extra that installs it, e.g. ``"train"``.

    Returns:
        The imported module.

    Raises:
        MissingExtraError: the module cannot be imported; the message says what to install.
    """
    try:
        return importlib.import_module(module)
    except ImportError as error:
        missing = isinstance(error, ModuleNotFoundError) and error.name == module.split(".")[0]
        problem = "is not installed" if missing else f"cannot be imported ({error})"
        command = INSTALL_COMMANDS.get(extra, f"pip install 'rollenv[{extra}]'")
        raise MissingExtraError(
            f"{module} {problem}; it comes with rollenv's [{extra}] extra: {command}"
        ) from None
