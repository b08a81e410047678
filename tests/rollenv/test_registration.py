from __future__ import annotations

import warnings

import gymnasium
import pytest

import rollenv
from rollenv.registration import UnknownEnvError


def test_short_family_names_resolve_case_insensitively():
    assert rollenv.make("sokoban").spec.id == "rollenv/Sokoban-v0"
    assert rollenv.make("SOKOBAN-V0").spec.id == "rollenv/Sokoban-v0"
    assert rollenv.make("frozenlake").spec.id == "rollenv/FrozenLake-v0"
    assert rollenv.spec("rollenv/LargerSokoban-v0").id == "LargerSokoban-v0"


def test_unknown_id_lists_close_matches():
    with pytest.raises(UnknownEnvError) as excinfo:
        rollenv.make("Sokobn-v0")
    message = str(excinfo.value)
    assert "'Sokobn-v0'" in message and "Did you mean" in message and "'Sokoban-v0'" in message
    assert isinstance(excinfo.value, gymnasium.error.UnregisteredEnv)


def test_unknown_id_with_nothing_close_lists_the_registry():
    with pytest.raises(UnknownEnvError, match="Registered ids: .*Sokoban-v0"):
        rollenv.spec("qqqqqqqqqqqqqqqq")


def test_make_passes_kwargs_and_gymnasium_options():
    env = rollenv.make("Sokoban-v0", dim_room=(7, 7), max_episode_steps=3)
    obs, _ = env.reset(seed=0)
    assert len(obs.splitlines()) == 7
    truncated = False
    for _ in range(3):
        *_, truncated, _ = env.step("nonsense")
    assert truncated, "the TimeLimit of max_episode_steps=3 truncates after 3 turns"


def test_register_mirrors_into_gymnasium_and_warns_on_override():
    rollenv.register(
        "TinySokoban-v0",
        "environments.sokoban.env:SokobanEnv",
        kwargs={"dim_room": (5, 5)},
        max_episode_steps=4,
        description="a test env",
    )
    try:
        spec = rollenv.spec("TinySokoban-v0")
        assert spec.family is None and spec.description == "a test env"
        env = gymnasium.make("rollenv/TinySokoban-v0")
        assert env.spec.max_episode_steps == 4
        assert len(env.reset(seed=0)[0].splitlines()) == 5
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rollenv.register("TinySokoban-v0", "environments.sokoban.env:SokobanEnv")
        messages = [str(w.message) for w in caught]
        assert messages == ["Overriding rollenv environment 'TinySokoban-v0'"]
        assert gymnasium.spec("rollenv/TinySokoban-v0").max_episode_steps is None
    finally:
        rollenv.registry._remove("TinySokoban-v0")
    assert "TinySokoban-v0" not in rollenv.registry
    assert "rollenv/TinySokoban-v0" not in gymnasium.registry


def test_malformed_id_is_rejected():
    with pytest.raises(gymnasium.error.Error):
        rollenv.register("not a valid id!", "environments.sokoban.env:SokobanEnv")


def test_built_in_families_come_from_the_entry_point_group():
    assert rollenv.spec("Sokoban-v0").family == "sokoban"
    assert rollenv.spec("FrozenLake-v0").family == "frozenlake"


def test_pprint_registry_groups_by_family():
    text = rollenv.pprint_registry(disable_print=True)
    assert "===== sokoban =====" in text and "===== frozenlake =====" in text
    assert "LargerSokoban-v0" in text and "FrozenLake8x8-v0" in text


def test_a_thread_reading_the_registry_while_another_loads_plugins_waits_for_them(monkeypatch):
    import threading

    from rollenv import registration

    registry = registration.EnvRegistry()
    spec = registration.EnvSpec("ThreadedLoad-v0", "environments.frozenlake.env:FrozenLakeEnv")
    loading, read_done = threading.Event(), threading.Event()

    def slow_plugins(run, *, distribution=None, skip=None, deferred=None):
        if distribution is not None:  # the built-in families: none in this registry
            return []
        loading.set()
        # before the fix a reader saw the half-loaded registry here and set read_done at once;
        # now it waits on the lock, so this wait runs out and loading goes on
        read_done.wait(timeout=0.5)
        run("late", lambda: registry.add(spec))
        return []

    monkeypatch.setattr(registration, "load_plugins", slow_plugins)
    loader = threading.Thread(target=registry.load_plugins)
    loader.start()
    assert loading.wait(timeout=30), "the loader thread never reached the plugins"
    seen = list(registry)  # read from this thread while the plugins load
    read_done.set()
    loader.join()
    registry._remove(spec.id)  # out of Gymnasium's registry again
    assert seen == ["ThreadedLoad-v0"]


def test_a_short_name_prefers_the_un_namespaced_family_over_an_adapted_one():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rollenv.register("elsewhere/Sokoban-v7", "environments.sokoban.env:SokobanEnv")
    try:
        assert rollenv.spec("sokoban").id == "Sokoban-v0"
        assert rollenv.spec("elsewhere/sokoban-v7").id == "elsewhere/Sokoban-v7"
    finally:
        rollenv.registry._remove("elsewhere/Sokoban-v7")


def test_an_unavailable_id_that_a_later_registration_runs_is_no_longer_unavailable():
    rollenv.register_unavailable("LateCorpus-v0", "needs a corpus")
    try:
        rollenv.register("LateCorpus-v0", "environments.sokoban.env:SokobanEnv")
        assert "LateCorpus-v0" not in rollenv.registry.unavailable
        assert rollenv.spec("LateCorpus-v0").id == "LateCorpus-v0"
    finally:
        rollenv.registry._remove("LateCorpus-v0")


def test_gymnasium_make_of_an_unavailable_id_says_why_and_works_once_it_is_registered():
    rollenv.register_unavailable("CorpusGame-v0", "needs the corpus: pip install corpus")
    try:
        with pytest.raises(rollenv.EnvUnavailableError, match="pip install corpus"):
            gymnasium.make("rollenv/CorpusGame-v0")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the unavailable entry goes without an override
            rollenv.register("CorpusGame-v0", "environments.sokoban.env:SokobanEnv")
        assert gymnasium.make("rollenv/CorpusGame-v0").reset(seed=0)[0]
    finally:
        rollenv.registry._remove("CorpusGame-v0")
    assert "rollenv/CorpusGame-v0" not in gymnasium.registry
