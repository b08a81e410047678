"""The env hub stays light: importing it (and making an env) loads neither torch nor Ray."""

from __future__ import annotations

import subprocess
import sys


def test_env_packages_do_not_import_torch_or_ray():
    script = (
        "import sys, rollenv, environments\n"
        "env = rollenv.make('Sokoban-v0'); env.reset(seed=0)\n"
        "env = rollenv.make('FrozenLake-v0'); env.reset(seed=0)\n"
        "heavy = sorted(m for m in ('torch', 'ray', 'transformers') if m in sys.modules)\n"
        "print(heavy)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
