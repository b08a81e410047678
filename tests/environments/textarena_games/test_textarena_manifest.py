"""The manifest of TextArena games against the installed TextArena, and what register() does."""

from __future__ import annotations

import subprocess
import sys

import pytest

import rollenv
from environments.textarena import register
from environments.textarena.games import GAMES, GAMES_BY_ID, INSTALL_HINT, unmet_requirement
from rollenv.policies import text_env_of

textarena_registry = pytest.importorskip("textarena.envs.registration").ENV_REGISTRY


def _installed_base_games() -> set[str]:
    """One id per TextArena game class: its ``<Name>-v0``, else its first registered id."""
    by_class: dict[str, list[str]] = {}
    for env_id, spec in textarena_registry.items():
        if env_id.endswith(("-raw", "-train")):
            continue
        by_class.setdefault(str(spec.entry_point), []).append(env_id)
    bases = set()
    for ids in by_class.values():
        name = ids[0].split("-v0")[0]
        bases.add(f"{name}-v0" if f"{name}-v0" in ids else ids[0])
    return bases


def test_every_installed_base_game_is_listed_once():
    assert len(GAMES_BY_ID) == len(GAMES)
    assert set(GAMES_BY_ID) == _installed_base_games()


def test_every_listed_game_is_registered_or_unavailable_with_a_reason():
    unavailable = rollenv.registry.unavailable
    for game in GAMES:
        reason = unmet_requirement(game)
        if reason is None:
            assert rollenv.spec(game.rollenv_id).kwargs == {"game": game.textarena_id}
        else:
            with pytest.raises(rollenv.EnvUnavailableError, match="not available here"):
                rollenv.make(game.rollenv_id)
            assert reason.strip()
            assert game.rollenv_id in unavailable


def test_every_registered_game_resets_and_steps_offline(tmp_path, monkeypatch):
    # no NLTK data or cache can hide behind the user's home (the machine has no internet)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("NLTK_DATA", raising=False)
    runnable = [g for g in GAMES if unmet_requirement(g) is None]
    assert len(runnable) >= 60
    for game in runnable:
        env = rollenv.make(game.rollenv_id)
        obs, info = env.reset(seed=0)
        assert obs and len(info["instruction"]) > 20, game.textarena_id
        move = text_env_of(env).action_words[0]
        obs, reward, terminated, truncated, info = env.step(f"<answer>{move}</answer>")
        assert "error" not in info, (game.textarena_id, info.get("error"))
        # a mine or a wrong letter is refused on hidden grounds: action_words cannot know
        assert info["metrics"]["action_is_valid"] or game.hidden_refusals, (game.textarena_id, move)


def test_a_game_that_needs_nltk_data_is_unavailable_with_the_reason():
    wordle = GAMES_BY_ID["Wordle-v0"]
    if unmet_requirement(wordle) is None:
        pytest.skip("NLTK's 'words' corpus is installed on this machine")
    with pytest.raises(rollenv.EnvUnavailableError, match="NLTK data 'words'"):
        rollenv.make("textarena/Wordle-v0")


def test_games_needing_an_llm_judge_or_a_newer_python_say_so():
    assert "OpenRouter" in unmet_requirement(GAMES_BY_ID["Debate-v0"])
    if sys.version_info < (3, 12):
        assert "Python >= 3.12" in unmet_requirement(GAMES_BY_ID["Chess-v0"])


def test_without_textarena_every_game_is_unavailable_with_the_install_command(monkeypatch):
    registered, unavailable = [], []
    monkeypatch.setattr(rollenv, "register", lambda env_id, *a, **k: registered.append(env_id))
    monkeypatch.setattr(
        rollenv, "register_unavailable", lambda env_id, reason, **k: unavailable.append(reason)
    )
    real_find_spec = __import__("importlib.util").util.find_spec
    monkeypatch.setattr(
        "importlib.util.find_spec",
        lambda name, *a: None if name == "textarena" else real_find_spec(name, *a),
    )
    register()
    assert registered == []
    assert unavailable == [INSTALL_HINT] * len(GAMES)


def test_registering_does_not_import_textarena():
    code = (
        "import sys, rollenv; ids = [i for i in rollenv.registry if i.startswith('textarena/')];"
        "print(len(ids), 'textarena' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    count, imported = out.stdout.split()
    assert int(count) >= 60 and imported == "False"
