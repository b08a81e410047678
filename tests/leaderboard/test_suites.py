"""Suites: the shipped files are valid, held out from training, and big enough; bad files are
refused with the field named."""

from __future__ import annotations

from pathlib import Path

import pytest

import rollenv
from leaderboard.stats import episodes_for_half_width, wilson_interval
from leaderboard.suites import (
    HELD_OUT_SEED_LIMIT,
    SuiteError,
    available_suites,
    load_suite,
)


@pytest.mark.parametrize("label", available_suites())
def test_shipped_suites_load_and_name_their_version(label):
    suite = load_suite(label)
    assert suite.label == label
    for env in suite.envs:
        assert rollenv.spec(env.id).id == env.id
        assert min(env.seeds) >= 0 and max(env.seeds) < HELD_OUT_SEED_LIMIT


def test_held_out_seeds_never_meet_training_seeds():
    from trainer.rollout.seeds import TRAIN_SEED_BASE, step_seeds

    assert HELD_OUT_SEED_LIMIT == TRAIN_SEED_BASE
    assert min(step_seeds(0, 1, groups=64)) >= HELD_OUT_SEED_LIMIT


def test_core_bounds_the_interval_at_five_points_where_the_data_allows():
    core = load_suite("core")
    needed = episodes_for_half_width(0.05)
    for env in core.envs:
        low, high = wilson_interval(len(env.seeds) // 2, len(env.seeds))
        if env.id == "CodeSandbox-v0":  # every HumanEval problem, once
            assert env.reset_option == "index" and env.seeds == tuple(range(164))
        else:
            assert len(env.seeds) >= needed
            assert (high - low) / 2 <= 0.05
    assert [env.id for env in core.envs] == [
        "SimpleSokoban-v0",
        "LargerSokoban-v0",
        "FrozenLake-v0",
        "FrozenLakeSlippery-v0",
        "WebShop-v0",
        "CodeSandbox-v0",
        "MathVerify-v0",
    ]


def test_a_name_picks_the_newest_version(tmp_path, monkeypatch):
    import leaderboard.suites as suites

    for version in (0, 2, 1):
        (tmp_path / f"mini-v{version}.yaml").write_text(
            f"name: mini\nversion: {version}\nenvs:\n  - id: FrozenLake-v0\n    seeds: [0]\n"
        )
    monkeypatch.setattr(suites, "SUITES_DIR", tmp_path)
    assert load_suite("mini").version == 2
    assert load_suite("mini-v1").version == 1


def test_an_unknown_suite_lists_the_closest():
    with pytest.raises(SuiteError, match=r"unknown suite 'smok'; did you mean smoke"):
        load_suite("smok")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("name: x\nversion: 0\nenvs: []\n", "'envs' must be a non-empty list"),
        ("name: x\nversion: -1\nenvs: []\n", "'version' must be a whole number"),
        ("name: x\nversion: 0\nrounds: 3\nenvs: []\n", "unknown field 'rounds'"),
        (
            "name: x\nversion: 0\nenvs:\n  - id: FrozenLake-v0\n    seeds: [1000000]\n",
            "seeds must be in 0..999999",
        ),
        (
            "name: x\nversion: 0\nenvs:\n  - id: FrozenLake-v0\n    seeds: [1, 1]\n",
            "lists a seed twice",
        ),
        (
            "name: x\nversion: 0\nenvs:\n  - id: FrozenLak-v0\n    seeds: [1]\n",
            "FrozenLake-v0",  # the registry's close match
        ),
        (
            "name: x\nversion: 0\nenvs:\n  - id: FrozenLake-v0\n    seed: [1]\n",
            "unknown field 'seed'",
        ),
    ],
)
def test_a_bad_suite_names_the_field(tmp_path: Path, body, message):
    path = tmp_path / "bad.yaml"
    path.write_text(body)
    with pytest.raises(SuiteError, match=message) as error:
        load_suite(path)
    assert str(path) in str(error.value)


def test_the_fingerprint_follows_the_content(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nversion: 0\nenvs:\n  - id: FrozenLake-v0\n    seeds: [0, 1]\n")
    before = load_suite(path).fingerprint
    path.write_text("name: s\nversion: 0\nenvs:\n  - id: FrozenLake-v0\n    seeds: [0, 2]\n")
    assert load_suite(path).fingerprint != before
