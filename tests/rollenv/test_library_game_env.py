"""LibraryGameEnv: Gymnasium's seeding semantics, a cheap episode stream, a lazy np_random, and
a step built from the adapter's one method that never raises on what the game does."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from gymnasium import error
from gymnasium.utils import seeding
from gymnasium.utils.env_checker import check_env

import rollenv.library_game_env as library_game_env
from rollenv.library_game_env import LibraryGameEnv, MoveOutcome
from rollenv.splitmix_random import SplitMixRandom


class SecretNumber(LibraryGameEnv):
    """A stand-in for an adapted game: its episode is one number drawn from the reset's stream."""

    @property
    def instruction(self) -> str:
        return "Guess the secret number."

    @property
    def action_words(self) -> tuple[str, ...]:
        return ("1", "2")

    def _new_episode(self, rng: random.Random, options: dict[str, Any] | None) -> None:
        self.secret = rng.getrandbits(31)
        self.guessed = False

    def _observation(self) -> str:
        return f"the secret has {len(str(self.secret))} digits"

    def _play_move(self, move: str) -> MoveOutcome:
        self.guessed = move == str(self.secret)
        if self.guessed:
            self._end_episode(success=True)
        return MoveOutcome(float(self.guessed))


def test_the_same_seed_gives_the_same_episode_and_other_seeds_others():
    env = SecretNumber()
    secrets = []
    for seed in (0, 1, 0, 2**40):
        env.reset(seed=seed)
        secrets.append(env.secret)
    assert secrets[0] == secrets[2]
    assert len({secrets[0], secrets[1], secrets[3]}) == 3
    assert secrets[0] == SplitMixRandom(0).getrandbits(31)  # the stream is the seed's


def test_resets_without_a_seed_go_on_from_the_last_seeded_one():
    first, second = SecretNumber(), SecretNumber()
    runs = []
    for env in (first, second):
        env.reset(seed=8)
        run = []
        for _ in range(3):
            env.reset()
            run.append(env.secret)
        runs.append(run)
    assert runs[0] == runs[1]
    assert len(set(runs[0])) == 3
    unseeded = SecretNumber()  # never seeded: fresh entropy, still a valid episode
    unseeded.reset()
    assert 0 <= unseeded.secret < 2**31


def test_a_reset_builds_no_numpy_generator_until_np_random_is_read(monkeypatch):
    built = []
    real = seeding.np_random
    monkeypatch.setattr(
        library_game_env.seeding, "np_random", lambda seed=None: built.append(seed) or real(seed)
    )
    env = SecretNumber()
    for seed in range(5):
        env.reset(seed=seed)
    assert built == []
    assert env.np_random_seed == 4
    drawn = env.np_random.integers(1 << 30, size=3)
    assert built == [4]
    assert list(drawn) == list(real(4)[0].integers(1 << 30, size=3))  # Gymnasium's np_random
    env.np_random.integers(10)  # read again: the same generator, not rebuilt
    assert built == [4]


def test_np_random_can_be_set_as_in_gymnasium():
    env = SecretNumber()
    env.reset(seed=3)
    generator = np.random.default_rng(99)
    env.np_random = generator
    assert env.np_random is generator and env.np_random_seed == -1


@pytest.mark.parametrize("seed", [-1, 1.5, "3"])
def test_a_seed_that_is_not_a_non_negative_int_is_refused_as_gymnasium_refuses_it(seed):
    with pytest.raises(error.Error, match=">= 0"):
        SecretNumber().reset(seed=seed)
    with pytest.raises(error.Error):
        seeding.np_random(seed)


def test_gymnasiums_env_checker_passes():
    check_env(SecretNumber(), skip_render_check=True)


class BuggyGame(SecretNumber):
    """A game whose move gives what a library's bug gives: ``reward`` back, or ``raises``."""

    reward: Any = 0.0
    raises: Exception | None = None

    def _play_move(self, move: str) -> MoveOutcome:
        if self.raises is not None:
            raise self.raises
        return MoveOutcome(self.reward, info={"said": move})


@pytest.mark.parametrize("reward", ["Bad action format. Use `[A 5]`.", None, float("nan"), True])
def test_a_reward_that_is_not_a_number_is_an_invalid_move_that_ends_the_episode(reward):
    env = BuggyGame()
    env.reward = reward
    observation, _ = env.reset(seed=0)
    after, got, terminated, truncated, info = env.step("<answer>A 5</answer>")
    assert (after, got) == (observation, env.format_penalty)
    assert truncated and not terminated  # the game had not ended: no verdict to report
    assert info["metrics"] == {
        "success": False,
        "action_is_valid": False,
        "action_is_effective": False,
    }
    assert "not a number" in info["error"] and repr(reward) in info["error"]
    assert info["said"] == "A 5"  # the adapter's own keys are kept


def test_an_exception_in_the_library_ends_the_episode_truncated_and_later_steps_do_nothing():
    env = BuggyGame()
    env.raises = KeyError("cell")
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step("<answer>4</answer>")
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert info["error"] == "the game's library raised KeyError: 'cell'"
    assert info["metrics"]["action_is_valid"]  # the library failed, not the agent
    env.raises = None
    _, reward, terminated, truncated, info = env.step("<answer>4</answer>")
    assert (reward, truncated) == (0.0, True) and not info["metrics"]["action_is_valid"]
    assert info["error"] == "the game's library raised KeyError: 'cell'"
    assert env.actions_taken == 1  # the step after the end played nothing
    _, reward, *_ = env.step("no answer")
    assert reward == env.format_penalty
    env.reset(seed=0)  # a new episode starts clean
    assert env.step("<answer>4</answer>")[2:4] == (False, False)


def test_a_won_game_terminates_with_success_and_its_reward():
    env = SecretNumber()
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step(f"<answer>{env.secret}</answer>")
    assert (reward, terminated, truncated, info["metrics"]["success"]) == (1.0, True, False, True)
