"""The adapter's contract on real GEM games and tasks: replies, rewards, RNG isolation."""

from __future__ import annotations

import random

import numpy as np
import pytest

import rollenv
from environments.gem.env import GemEnv, gem_move
from environments.gem.runtime import import_gem
from rollenv.policies import RandomPolicy, text_env_of
from rollenv.text_env import observable

from .conftest import REGISTERED, SLOW_GEM_IDS


def _gem(env) -> object:
    return text_env_of(env)._gem


def test_a_reply_without_an_answer_never_reaches_gem():
    env = rollenv.make("gem/TowerofHanoiEasy-v0")
    obs, _ = env.reset(seed=0)
    obs_after, reward, terminated, truncated, info = env.step("A C")
    assert (obs_after, reward, terminated, truncated) == (obs, -0.1, False, False)
    assert info["metrics"]["action_is_valid"] is False
    assert _gem(env).turn_count == 0


def test_the_answer_is_boxed_for_gem_and_a_boxed_answer_passes_as_it_is():
    assert gem_move("A C") == "\\boxed{A C}"
    env = rollenv.make("gem/TowerofHanoiEasy-v0")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("<answer>\\boxed{A C}</answer>")
    assert "you moved disk 1 from tower A to tower C" in obs
    assert info["metrics"] == {
        "success": False,
        "action_is_valid": True,
        "action_is_effective": True,
    }


def test_a_move_the_game_rejects_is_valid_but_not_effective():
    env = rollenv.make("gem/TowerofHanoiEasy-v0")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("<answer>B C</answer>")
    assert "which is empty" in obs and reward == 0.0 and not terminated
    assert info["metrics"]["action_is_valid"] and not info["metrics"]["action_is_effective"]


def test_a_move_gem_cannot_read_ends_the_game_as_gem_does_and_is_invalid():
    env = rollenv.make("gem/TowerofHanoiEasy-v0")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("<answer>jump</answer>")
    assert (reward, terminated, truncated) == (-0.1, True, False)
    assert "did not provide a valid action" in obs
    assert info["metrics"]["action_is_valid"] is False


def test_solving_tower_of_hanoi_is_a_success_with_gem_reward():
    env = rollenv.make("gem/TowerofHanoiEasy-v0")
    env.reset(seed=0)
    moves = ["A C", "A B", "C B", "A C", "B A", "B C", "A C"]  # 3 disks, A to C
    rewards = [env.step(f"<answer>{move}</answer>")[1:] for move in moves]
    reward, terminated, truncated, info = rewards[-1]
    assert info["metrics"]["success"] and terminated and not truncated and reward == 1.0
    assert not any(step[3]["metrics"]["success"] for step in rewards[:-1])


def test_the_guessed_number_wins_and_other_guesses_are_effective():
    env = rollenv.make("gem/GuessTheNumberHard-v0")
    env.reset(seed=4)
    secret = _gem(env).game_number
    wrong = 1 if secret != 1 else 2
    info = env.step(f"<answer>{wrong}</answer>")[4]
    assert info["metrics"]["action_is_effective"] and not info["metrics"]["success"]
    obs, reward, terminated, _, info = env.step(f"<answer>{secret}</answer>")
    assert info["metrics"]["success"] and terminated and reward == 1.0


def test_a_task_answer_is_scored_once_and_ends_the_episode():
    env = rollenv.make("gem/Gcd-v0")
    env.reset(seed=0)
    gold = text_env_of(env).gold_answer()
    obs, reward, terminated, _, info = env.step(f"<answer>{gold}</answer>")
    assert (reward, terminated, info["metrics"]["success"]) == (1.0, True, True)
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step("<answer>-7</answer>")
    assert reward == 0.0 and terminated and not info["metrics"]["success"]


def test_gsm_symbolic_scores_only_a_number_alone():
    # reasoning-gym scores the first number anywhere in the answer: on one of these seeds the
    # question copied back began with the reference answer and scored 1
    env = rollenv.make("gem/GsmSymbolic-v0")
    copied_back_would_score = 0
    for seed in range(12):
        question, _ = env.reset(seed=seed)
        gold = text_env_of(env).gold_answer()
        scorer = _gem(env).reward_fn  # reasoning-gym's score_answer, as GEM calls it
        copied_back_would_score += scorer(question, _gem(env).data) == 1.0
        for answer in (question, f"{gold} items", f"-{gold}", f"The answer is {gold}."):
            env.reset(seed=seed)
            _, reward, terminated, _, info = env.step(f"<answer>{answer}</answer>")
            assert (reward, terminated, info["metrics"]["success"]) == (0.0, True, False)
        env.reset(seed=seed)
        _, reward, _, _, info = env.step(f"<answer>{gold}</answer>")
        assert (reward, info["metrics"]["success"]) == (1.0, True)
    assert copied_back_would_score >= 1  # the guard is needed on these seeds


def test_a_gem_exception_ends_the_episode_truncated_with_the_reason():
    env = rollenv.make("gem/Boxnet-v0")  # reasoning-gym's boxnet scorer iterates the answer
    obs, _ = env.reset(seed=0)
    obs_after, reward, terminated, truncated, info = env.step("<answer>7</answer>")
    assert (obs_after, reward, terminated, truncated) == (obs, 0.0, False, True)
    assert "TypeError" in info["gem_error"]
    assert env.step("<answer>7</answer>")[3] is True  # over: later steps change nothing


def test_characters_outside_the_observation_space_are_escaped():
    env = rollenv.make("gem/EmojiMystery-v0")
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs) and "\\U000e01" in obs
    assert observable("ok\n") == "ok\n"


def test_an_unknown_gem_id_lists_close_ones():
    with pytest.raises(ValueError, match="game:Sudoku-v0-easy"):
        GemEnv("game:Sudoku-v0-eazy")


def test_a_dataset_id_says_why_it_cannot_run():
    with pytest.raises(ValueError, match="Hugging Face dataset"):
        GemEnv("math:GSM8K")


def _play(env_id: str, seed: int, steps: int, envs: list | None = None) -> list:
    env = rollenv.make(env_id) if envs is None else envs.pop(0)
    policy = RandomPolicy(env, seed=seed)
    obs, info = env.reset(seed=seed)
    record = [obs]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(policy.act(obs, info))
        record.append((obs, reward))
        if terminated or truncated:
            obs, info = env.reset()
            record.append(obs)
    return record


@pytest.mark.parametrize("env_id", ["gem/Game2048Easy-v0", "gem/MinesweeperEasy-v0"])
def test_interleaved_instances_of_games_with_chance_play_as_they_do_alone(env_id):
    alone = [_play(env_id, seed=1, steps=30), _play(env_id, seed=2, steps=30)]
    envs = [rollenv.make(env_id), rollenv.make(env_id)]
    policies = [RandomPolicy(env, seed=seed) for env, seed in zip(envs, (1, 2), strict=True)]
    states = [env.reset(seed=seed) for env, seed in zip(envs, (1, 2), strict=True)]
    records = [[obs] for obs, _ in states]
    for _ in range(30):
        for index, env in enumerate(envs):
            random.random()  # the caller's own draws must not reach either game
            obs, info = states[index]
            obs, reward, terminated, truncated, info = env.step(policies[index].act(obs, info))
            records[index].append((obs, reward))
            if terminated or truncated:
                obs, info = env.reset()
                records[index].append(obs)
            states[index] = (obs, info)
    assert records == alone


@pytest.mark.parametrize(
    "entry",
    [pytest.param(e, id=e.env_id) for e in REGISTERED if e.env_id not in SLOW_GEM_IDS],
)
def test_the_callers_global_generators_are_left_as_they_were(entry):
    env = rollenv.make(entry.env_id)
    policy = RandomPolicy(env, seed=0)
    random.seed(99)
    np.random.seed(99)
    python_state, numpy_state = random.getstate(), np.random.get_state()
    obs, info = env.reset(seed=5)
    numpy_after_reset = np.random.get_state()
    for _ in range(8):
        obs, _, terminated, truncated, info = env.step(policy.act(obs, info))
        if terminated or truncated:
            break
    assert random.getstate() == python_state
    numpy_now = np.random.get_state()  # no step draws from numpy's global generator
    assert all(np.array_equal(a, b) for a, b in zip(numpy_now, numpy_after_reset, strict=True))
    if entry.kind == "game":  # a task's reset reseeds numpy as GEM's does (see runtime.py)
        assert all(np.array_equal(a, b) for a, b in zip(numpy_now, numpy_state, strict=True))


def test_a_seed_gives_the_same_question_however_often_the_env_has_reset():
    # GEM's task env moves to a new dataset every 500 resets; the adapter must not follow
    env = rollenv.make("gem/Gcd-v0")
    first, _ = env.reset(seed=3)
    for seed in range(600):
        env.reset(seed=1000 + seed)
    assert env.reset(seed=3)[0] == first


@pytest.mark.parametrize(
    "env_id", ["gem/MastermindHard-v0", "gem/Game2048Easy-v0", "gem/Gcd-v0", "gem/Sudoku-v0"]
)
def test_gem_reset_with_the_reported_seed_starts_the_same_episode(env_id):
    env = rollenv.make(env_id)
    entry = text_env_of(env).entry
    theirs = import_gem().make(entry.gem_id)
    for seed in (0, 1):
        obs, info = env.reset(seed=seed)
        gem_obs, gem_info = theirs.reset(seed=info["gem_seed"])
        assert text_env_of(env)._compose(gem_obs, gem_info) == obs


def test_a_question_is_generated_once_and_then_remembered_for_every_env_of_the_id():
    first, second = rollenv.make("gem/Gcd-v0"), rollenv.make("gem/Gcd-v0")
    obs, _ = first.reset(seed=4)
    dataset = _gem(first).ds
    remembered = len(dataset._items)
    assert second.reset(seed=4)[0] == obs  # the other env asks the same question...
    assert _gem(second).data is _gem(first).data  # ...the very item, not generated again
    assert len(dataset._items) == remembered
    [index] = [i for i, item in dataset._items.items() if item is _gem(first).data]
    assert dataset.dataset[index] == _gem(first).data  # and it is what reasoning-gym generates
