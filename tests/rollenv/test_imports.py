"""The env hub stays light: importing it (and making an env) loads neither torch nor Ray."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _fresh_interpreter(script: str) -> str:
    """What ``script`` prints in a new Python process (which must succeed)."""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_env_packages_do_not_import_torch_or_ray():
    script = (
        "import sys, rollenv, environments\n"
        "env = rollenv.make('Sokoban-v0'); env.reset(seed=0)\n"
        "env = rollenv.make('FrozenLake-v0'); env.reset(seed=0)\n"
        "heavy = sorted(m for m in ('torch', 'ray', 'transformers') if m in sys.modules)\n"
        "print(heavy)\n"
    )
    assert _fresh_interpreter(script).strip() == "[]"


def test_import_registers_the_builtin_ids_with_gymnasium_and_loads_no_env_module():
    script = (
        "import sys, rollenv, gymnasium\n"
        "loaded = sorted(m for m in sys.modules if m.endswith(('.env', '.generator')))\n"
        "registered = 'rollenv/Sokoban-v0' in gymnasium.registry\n"
        "obs, info = gymnasium.make('rollenv/Sokoban-v0').reset(seed=0)\n"
        "vec = gymnasium.make_vec('rollenv/FrozenLake-v0', num_envs=2, vectorization_mode='sync')\n"
        "batch, _ = vec.reset(seed=0)\n"
        "heavy = sorted(m for m in ('torch', 'ray') if m in sys.modules)\n"
        "print(loaded, registered, len(batch), heavy)\n"
        "print(obs)\n"
    )
    first, *board = _fresh_interpreter(script).splitlines()
    assert first == "[] True 2 []"  # no env module before a make; neither torch nor ray
    assert "P" in "".join(board)


@pytest.mark.parametrize(
    "module, env_id",
    [
        ("environments.code.data", "CodeSandbox-v0"),
        ("environments.math.verify", "MathVerify-v0"),
        ("environments.sokoban.solver", "Sokoban-v0"),
        ("environments.frozenlake.env", "FrozenLake-v0"),
        ("environments.webshop.catalog", "WebShop-v0"),
    ],
)
def test_a_family_module_imported_before_rollenv_keeps_its_ids(module, env_id):
    # the submodule's import runs rollenv's, which registers the family whose package is
    # still being imported: its register() must already be there
    script = (
        f"import warnings; warnings.simplefilter('error')\n"
        f"import {module}\nimport rollenv, gymnasium\n"
        f"print({env_id!r} in rollenv.registry, 'rollenv/{env_id}' in gymnasium.registry)\n"
    )
    assert _fresh_interpreter(script).strip() == "True True"
