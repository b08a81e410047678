"""The checked-in manifest against the installed GEM, and what register() makes of it."""

from __future__ import annotations

import subprocess
import sys

import pytest

import rollenv
from environments.gem import INSTALL_HINT, registrations
from environments.gem.catalog import BY_ENV_ID, CATALOG, NEEDS_NLTK_WORDS, env_id_for
from environments.gem.runtime import import_gem
from rollenv.registration import EnvUnavailableError

from .conftest import REGISTERED, param


def test_every_installed_gem_id_is_in_the_catalog_and_nothing_else():
    installed = set(import_gem().ENV_REGISTRY)
    assert installed == {entry.gem_id for entry in CATALOG}


def test_ids_follow_the_documented_mapping_and_are_unique_in_any_case():
    assert [e.env_id for e in CATALOG] == [env_id_for(e.gem_id) for e in CATALOG]
    assert len({e.env_id.lower() for e in CATALOG}) == len(CATALOG)
    assert env_id_for("game:Game2048-v0-extreme-hard") == "gem/Game2048ExtremeHard-v0"
    assert env_id_for("math:GSM8K") == "gem/MathGSM8K-v0"


def test_every_catalog_id_is_registered_or_unavailable_with_its_reason():
    unavailable = rollenv.registry.unavailable
    for entry in CATALOG:
        if entry.env_id in rollenv.registry:
            assert not entry.unavailable or entry.unavailable == NEEDS_NLTK_WORDS
        else:
            assert entry.unavailable, entry.env_id
            assert unavailable[entry.env_id].reason == entry.unavailable


def test_making_an_unavailable_id_names_the_reason():
    with pytest.raises(EnvUnavailableError, match="axon-rl/GSM-8k"):
        rollenv.make("gem/MathGSM8K-v0")


def test_without_gem_every_id_is_unavailable_with_the_install_command():
    plan = registrations(gem_installed=False, has_nltk_words=True)
    assert {reason for _, reason in plan} == {INSTALL_HINT}
    assert len(plan) == len(CATALOG)


def test_word_games_run_only_with_the_nltk_corpus():
    with_words = dict(registrations(gem_installed=True, has_nltk_words=True))
    without = dict(registrations(gem_installed=True, has_nltk_words=False))
    wordle = BY_ENV_ID["gem/WordleEasy-v0"]
    assert with_words[wordle] == "" and without[wordle] == NEEDS_NLTK_WORDS


def test_registering_does_not_import_gem():
    code = (
        "import sys, rollenv; ids = [i for i in rollenv.registry if i.startswith('gem/')]; "
        "assert ids and 'gem' not in sys.modules and 'reasoning_gym' not in sys.modules, ids"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize("entry", [param(e) for e in REGISTERED])
def test_every_registered_id_resets_and_steps_offline(entry):
    env = rollenv.make(entry.env_id)
    obs, info = env.reset(seed=3)
    word = entry.rules.moves[0] if entry.rules else "0"
    obs, reward, terminated, truncated, info = env.step(f"<answer>{word}</answer>")
    assert env.observation_space.contains(obs)
    assert "gem_error" not in info or entry.name in {"boxnet"}  # boxnet's scorer needs a plan
