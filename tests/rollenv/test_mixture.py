"""``MixtureEnv`` / ``Mixture-v0``: a weighted mix of real envs, one member per episode."""

from __future__ import annotations

import gc
import math
import warnings
from collections import Counter

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rollenv
from rollenv.mixture import DEFAULT_MIX, MixtureEnv, parse_mix
from rollenv.policies import oracle_for, run_episode

# envs that need no extras, each a different family or size
CHEAP_MIX = {"FrozenLake-v0": 0.4, "FrozenLake8x8-v0": 0.3, "SimpleSokoban-v0": 0.3}
# the mix of issue 7 (ROLL's 40% math, 30% code, 30% general)
ROLL_MIX = {"MathVerify-v0": 0.4, "CodeSandbox-v0": 0.3, "SimpleSokoban-v0": 0.3}


def test_make_mixture_and_make_with_mix_build_the_same_env():
    ours = rollenv.make_mixture(CHEAP_MIX)
    via_registry = rollenv.make("Mixture-v0", mix=CHEAP_MIX)
    via_gymnasium = gymnasium.make("rollenv/Mixture-v0", mix=CHEAP_MIX)
    for env in (ours, via_registry, via_gymnasium):
        assert isinstance(env.unwrapped, MixtureEnv)
        assert [m.env_id for m in env.unwrapped.members] == sorted(CHEAP_MIX)
    assert ours.reset(seed=3)[0] == via_registry.reset(seed=3)[0] == via_gymnasium.reset(seed=3)[0]
    assert rollenv.spec("Mixture-v0").family == "rollenv"


def test_mixture_v0_without_mix_uses_the_default_mix_and_passes_check_env():
    env = rollenv.make("Mixture-v0")
    assert {m.env_id for m in env.unwrapped.members} == set(DEFAULT_MIX)
    # garbage left by earlier tests (an unclosed socket in a reference cycle) would otherwise
    # be collected, and warn, while check_env runs
    gc.collect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    assert [str(w.message) for w in caught] == []


def test_ratios_are_normalised_and_members_sorted_by_id():
    members = parse_mix({"SimpleSokoban-v0": 3, "FrozenLake-v0": {"ratio": 1, "kwargs": {}}})
    assert [(m.env_id, m.probability) for m in members] == [
        ("FrozenLake-v0", 0.25),
        ("SimpleSokoban-v0", 0.75),
    ]
    # the same mix written in another order picks the same member for every seed
    forward = MixtureEnv({"FrozenLake-v0": 1, "SimpleSokoban-v0": 3})
    backward = MixtureEnv({"SimpleSokoban-v0": 3, "FrozenLake-v0": 1})
    assert all(forward.member_for_seed(s) == backward.member_for_seed(s) for s in range(200))


def test_the_member_is_a_function_of_the_seed_and_starts_as_the_member_alone_would():
    env = rollenv.make_mixture(ROLL_MIX)
    other = rollenv.make_mixture(ROLL_MIX)
    for seed in range(30):
        obs, info = env.reset(seed=seed)
        again, info_again = other.reset(seed=seed)
        assert (obs, info["env_id"]) == (again, info_again["env_id"])
        assert info["env_id"] == env.unwrapped.member_for_seed(seed)
        # a GRPO group (same seed) lands in one member, at the member's own start for that seed
        alone, alone_info = rollenv.make(info["env_id"]).reset(seed=seed)
        assert obs == alone
        assert info["instruction"] == alone_info["instruction"]


def test_reset_without_a_seed_continues_deterministically():
    def episodes(seed: int) -> list[tuple[str, str]]:
        env = rollenv.make_mixture(CHEAP_MIX)
        first = env.reset(seed=seed)
        rest = [env.reset() for _ in range(20)]
        return [(obs, info["env_id"]) for obs, info in [first, *rest]]

    assert episodes(7) == episodes(7)
    assert len({env_id for _, env_id in episodes(7)}) > 1


def test_over_2000_seeds_each_share_is_within_4_standard_errors_of_its_ratio():
    env = rollenv.make_mixture(CHEAP_MIX)
    n = 2000
    counts = Counter(env.reset(seed=seed)[1]["env_id"] for seed in range(n))
    assert set(counts) == set(CHEAP_MIX)  # every member reachable
    for env_id, ratio in CHEAP_MIX.items():
        # a share of n independent picks has standard error sqrt(p(1-p)/n): 0.011 for p=0.4 and
        # 0.010 for p=0.3 at n=2000, so 4 of them is about 0.04 (a false alarm 6 times in 10^5)
        bound = 4 * math.sqrt(ratio * (1 - ratio) / n)
        assert abs(counts[env_id] / n - ratio) < bound, (env_id, counts[env_id] / n, ratio)


def test_the_roll_mix_reaches_every_member_with_its_own_instruction_and_metrics():
    env = rollenv.make_mixture(ROLL_MIX)
    mixture = env.unwrapped
    seen: dict[str, str] = {}
    for seed in range(40):
        obs, info = env.reset(seed=seed)
        member = info["env_id"]
        assert info["instruction"] == mixture.instruction
        seen.setdefault(member, info["instruction"])
        assert seen[member] == info["instruction"]
        word = mixture.action_words[0]
        obs, reward, terminated, truncated, step_info = env.step(mixture.answer_format.wrap([word]))
        assert step_info["env_id"] == member
        assert set(step_info["metrics"]) >= {"success", "action_is_valid", "action_is_effective"}
        assert step_info["anchor"] == obs
    assert set(seen) == set(ROLL_MIX)
    assert len(set(seen.values())) == len(ROLL_MIX)  # each env its own system prompt
    # each member is made once and reused
    assert len(mixture._envs) == len(ROLL_MIX)


def test_member_kwargs_reach_the_member():
    mix = {
        "FrozenLake-v0": {"ratio": 1, "kwargs": {"desc": ["SF", "FG"]}},
        "SimpleSokoban-v0": 1,
    }
    env = rollenv.make_mixture(mix)
    seed = next(s for s in range(100) if env.unwrapped.member_for_seed(s) == "FrozenLake-v0")
    obs, info = env.reset(seed=seed)
    assert obs == rollenv.make("FrozenLake-v0", desc=["SF", "FG"]).reset(seed=seed)[0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), replies=st.lists(st.text(), min_size=1, max_size=4))
def test_step_never_raises_on_any_string(seed, replies):
    env = rollenv.make_mixture(ROLL_MIX)
    obs, info = env.reset(seed=seed)
    for reply in replies:
        obs, reward, terminated, truncated, info = env.step(reply)
        assert env.observation_space.contains(obs)
        assert isinstance(reward, float)
        assert info["env_id"] == env.unwrapped.member_for_seed(seed)
        if terminated or truncated:
            break


def test_the_oracle_of_a_mixture_solves_each_members_episodes():
    env = rollenv.make_mixture(CHEAP_MIX)
    oracle = oracle_for(env)
    results = [run_episode(env, oracle, seed=seed) for seed in range(30)]
    assert all(r.success for r in results)


def test_render_and_close_go_to_the_members():
    env = rollenv.make_mixture(CHEAP_MIX, render_mode="ansi")
    assert env.unwrapped.render() == ""  # the outer OrderEnforcing wrapper refuses it
    obs, _ = env.reset(seed=1)
    assert env.render() == obs
    made = list(env.unwrapped._envs.values())
    env.close()
    assert made and env.unwrapped._envs == {}


def test_an_unknown_id_lists_the_closest_ids():
    with pytest.raises(rollenv.UnknownEnvError, match="Did you mean.*'FrozenLake-v0'"):
        rollenv.make_mixture({"FrozenLak-v0": 0.5, "SimpleSokoban-v0": 0.5})


@pytest.mark.parametrize(
    ("mix", "message"),
    [
        ({}, "mix must name at least one env"),
        ({"FrozenLake-v0": 0}, r"mix\['FrozenLake-v0'\] ratio must be a number > 0, got 0"),
        ({"FrozenLake-v0": -0.5}, r"mix\['FrozenLake-v0'\] ratio must be a number > 0"),
        ({"FrozenLake-v0": "half"}, r"mix\['FrozenLake-v0'\] ratio must be a number > 0"),
        ({"FrozenLake-v0": float("inf")}, r"mix\['FrozenLake-v0'\] ratio must be finite"),
        ({"FrozenLake-v0": {"weight": 1}}, r"mix\['FrozenLake-v0'\] must be a ratio or"),
        ({"FrozenLake-v0": 1, "frozenlake": 1}, "names 'FrozenLake-v0' twice"),
    ],
)
def test_a_bad_mix_is_a_value_error_naming_the_field(mix, message):
    with pytest.raises(ValueError, match=message):
        rollenv.make_mixture(mix)


def test_defer_reward_goes_to_the_members_that_take_it():
    env = rollenv.make_mixture(
        {"InstructionFollowing-v0": 1, "FrozenLake-v0": 1}, defer_reward=True
    )
    from rollenv.policies import oracle_for

    seen = {}
    for seed in range(12):
        obs, info = env.reset(seed=seed)
        member = env.unwrapped.active_id
        *_, step_info = env.step(oracle_for(env).act(obs, info))
        seen.setdefault(member, set()).add("reward_request" in step_info)
        if member == "InstructionFollowing-v0":
            assert step_info["reward_request"]["kind"] == "rule"
    assert seen == {"InstructionFollowing-v0": {True}, "FrozenLake-v0": {False}}
    assert rollenv.spec("Mixture-v0").takes("defer_reward")
