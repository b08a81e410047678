"""A real third-party distribution, found by importlib.metadata on sys.path, adds an env."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def _write_distribution(root: Path, name: str, module: str, entry_points: str, code: str) -> None:
    (root / f"{module}.py").write_text(textwrap.dedent(code))
    info = root / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    (info / "RECORD").write_text("")


def _write_mygame(root: Path) -> None:
    """A third-party package whose plugin registers ``MyGame-v0``, a 5x7 Sokoban."""
    _write_distribution(
        root,
        "mygame",
        "mygame_envs",
        """
        [rollenv.envs]
        mygame = mygame_envs:register
        """,
        """
        import rollenv

        def register():
            rollenv.register(
                "MyGame-v0",
                "environments.sokoban.env:SokobanEnv",
                kwargs={"dim_room": (5, 7)},
                max_episode_steps=5,
                description="a third-party game",
            )
        """,
    )


def test_plugin_registers_an_env_and_a_broken_plugin_only_warns(tmp_path):
    _write_mygame(tmp_path)
    _write_distribution(
        tmp_path,
        "brokengame",
        "brokengame_envs",
        """
        [rollenv.envs]
        brokengame = brokengame_envs:register
        """,
        """
        import rollenv

        def register():
            rollenv.register("HalfDone-v0", "environments.sokoban.env:SokobanEnv")
            rollenv.register_unavailable("HalfListed-v0", "needs what the plugin never got to")
            raise RuntimeError("this plugin is broken")
        """,
    )
    script = textwrap.dedent(
        """
        import warnings

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import rollenv  # the plugins load here

            env = rollenv.make("MyGame-v0")
        obs, info = env.reset(seed=0)
        lines = obs.splitlines()
        assert len(lines) == 5 and len(lines[0]) == 7, obs
        assert rollenv.spec("MyGame-v0").family == "mygame"
        assert "Sokoban-v0" in rollenv.registry, "built-in families still load"
        assert "HalfDone-v0" not in rollenv.registry, "a failed plugin leaves nothing behind"
        assert "HalfListed-v0" not in rollenv.registry.unavailable
        messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
        assert len(messages) == 1, messages
        assert "'brokengame'" in messages[0] and "this plugin is broken" in messages[0]
        assert "brokengame" in [f.name for f in rollenv.registry.plugin_failures]
        print("OK")
        """
    )
    _assert_prints_ok(script, tmp_path)


def test_gymnasium_makes_a_plugins_env_right_after_import_rollenv(tmp_path):
    _write_mygame(tmp_path)
    script = textwrap.dedent(
        """
        import sys

        import gymnasium
        import rollenv

        imported = set(sys.modules)
        env = gymnasium.make("rollenv/MyGame-v0")
        obs, _ = env.reset(seed=0)
        assert len(obs.splitlines()[0]) == 7, obs
        # importing rollenv ran the plugin's register(), and imported no env module and no torch
        assert "mygame_envs" in imported
        env_modules = {
            spec.entry_point.partition(":")[0]
            for spec in rollenv.registry.values()
            if isinstance(spec.entry_point, str) and spec.entry_point.startswith("environments.")
        }
        assert env_modules & imported == set(), env_modules & imported
        assert "torch" not in imported and "ray" not in imported
        print("OK")
        """
    )
    _assert_prints_ok(script, tmp_path)


def test_a_plugin_lists_an_env_it_cannot_run_with_the_reason(tmp_path):
    _write_distribution(
        tmp_path,
        "corpusgame",
        "corpusgame_envs",
        """
        [rollenv.envs]
        corpusgame = corpusgame_envs:register
        """,
        """
        import rollenv

        def register():
            rollenv.register("Runs-v0", "environments.sokoban.env:SokobanEnv")
            rollenv.register_unavailable(
                "NeedsCorpus-v0", "needs the nltk corpus 'words' (a download)"
            )
        """,
    )
    script = textwrap.dedent(
        """
        import rollenv
        from trainer.cli.main import main

        assert "NeedsCorpus-v0" not in rollenv.registry
        assert rollenv.registry.unavailable["NeedsCorpus-v0"].family == "corpusgame"
        try:
            rollenv.make("needscorpus-v0")
        except rollenv.EnvUnavailableError as error:
            assert "nltk corpus 'words'" in str(error), error
        else:
            raise AssertionError("an unavailable env was made")
        main(["envs", "--unavailable"])
        print("#####")
        main(["envs", "--family", "corpusgame"])
        print("#####")
        raise SystemExit(main(["play", "NeedsCorpus-v0"]))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    unavailable, family, _ = result.stdout.split("#####\n")
    assert "NeedsCorpus-v0" in unavailable and "a download" in unavailable
    assert "Runs-v0" not in unavailable
    listed = family.split("families (")[0]
    assert "Runs-v0" in listed and "NeedsCorpus-v0 (unavailable)" in listed
    assert "unavailable here: needs the nltk corpus 'words'" in listed
    assert any(line.split() == ["corpusgame", "1", "1"] for line in family.splitlines())
    assert result.returncode == 2
    assert "'NeedsCorpus-v0' is not available here: needs the nltk corpus" in result.stderr


def _gymnasium_ids_by_module() -> dict[str, list[str]]:
    """The Gymnasium ids of the built-in families, by the module their entry point names."""
    import rollenv

    by_module: dict[str, list[str]] = {}
    for env_id in rollenv.registry:
        spec = rollenv.spec(env_id)
        if isinstance(spec.entry_point, str) and spec.entry_point.startswith("environments."):
            module = spec.entry_point.split(":")[0]
            by_module.setdefault(module, []).append(spec.gymnasium_id)
    return by_module


IDS_BY_MODULE = _gymnasium_ids_by_module()


@pytest.mark.parametrize("first_import", sorted(IDS_BY_MODULE))
def test_a_family_module_imported_before_rollenv_registers_its_ids_with_gymnasium(first_import):
    # the module's own `from rollenv... import` runs rollenv's import, which registers the
    # built-in families while this module is half-imported: its family must still register,
    # visible to gymnasium.make at once (no rollenv registry read first), and nothing fails
    code = textwrap.dedent(
        f"""
        import json
        import {first_import}
        import gymnasium

        gymnasium_ids = sorted(gymnasium.envs.registry)
        import rollenv

        print(json.dumps([gymnasium_ids, len(rollenv.registry.plugin_failures)]))
        """
    )
    result = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    gymnasium_ids, failures = json.loads(result.stdout.splitlines()[-1])
    missing = sorted(set(IDS_BY_MODULE[first_import]) - set(gymnasium_ids))
    assert not missing, f"{len(missing)} ids missing from gymnasium, e.g. {missing[:3]}"
    assert failures == 0


def test_a_plugin_whose_register_reads_a_half_imported_module_is_put_off_not_failed(tmp_path):
    # lazyfam.data reads the registry while it is being imported, so the plugin's register()
    # runs then, and its `from lazyfam.data import ...` finds the module half-done: the plugin
    # must be put off (no warning, no failure) and registered at the next read
    package = tmp_path / "lazyfam"
    package.mkdir()
    (package / "__init__.py").write_text(
        textwrap.dedent(
            """
            def register():
                import rollenv
                from lazyfam.data import SIZE

                rollenv.register(
                    "LazyFam-v0", "environments.sokoban.env:SokobanEnv", kwargs={"dim_room": SIZE}
                )
            """
        )
    )
    (package / "data.py").write_text(
        "import rollenv\n\nKNOWN = len(rollenv.registry)\nSIZE = (5, 7)\n"
    )
    info = tmp_path / "lazyfam-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lazyfam\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[rollenv.envs]\nlazyfam = lazyfam:register\n")
    (info / "RECORD").write_text("")
    script = textwrap.dedent(
        """
        import lazyfam.data
        import rollenv

        assert "LazyFam-v0" not in rollenv.registry.unavailable
        obs, _ = rollenv.make("LazyFam-v0").reset(seed=0)
        assert len(obs.splitlines()[0]) == 7, obs
        assert rollenv.registry.plugin_failures == [], rollenv.registry.plugin_failures
        print("OK")
        """
    )
    _assert_prints_ok(script, tmp_path, "-W", "error::RuntimeWarning")


def _assert_prints_ok(script: str, plugin_path: Path, *python_options: str) -> None:
    """Runs ``script`` in a fresh interpreter that sees only the plugins under ``plugin_path``."""
    result = subprocess.run(
        [sys.executable, *python_options, "-c", script],
        env={"PYTHONPATH": str(plugin_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "OK"
