"""Wordle's feedback, guesses and episode ends, on secrets chosen by hand."""

from __future__ import annotations

import random

import pytest

from environments.wordle.env import WordleEnv
from environments.wordle.feedback import GREEN, GREY, YELLOW, feedback
from environments.wordle.words import dictionary, secret_pool

G, Y, X = GREEN, YELLOW, GREY


@pytest.mark.parametrize(
    ("guess", "secret", "colours"),
    [
        ("crane", "crane", (G, G, G, G, G)),
        ("trace", "crane", (X, G, G, Y, G)),
        # one e in the secret: the first unmatched e is yellow, the second grey
        ("speed", "abide", (X, X, Y, X, Y)),
        # the green e claims the secret's only e: the earlier e is grey, not yellow
        ("eerie", "crane", (X, X, Y, X, G)),
        # two l's in the secret, two guessed elsewhere: both yellow
        ("llama", "hello", (Y, Y, X, X, X)),
        # both of the secret's l's matched green: the third l guessed is grey
        ("lolly", "hello", (X, Y, G, G, X)),
    ],
)
def test_feedback_follows_the_duplicate_letter_rule(guess, secret, colours):
    assert feedback(guess, secret) == colours


def test_feedback_marks_as_many_letters_as_the_secret_has():
    rng = random.Random(0)
    words = dictionary(5)
    for _ in range(2000):
        guess, secret = rng.choice(words), rng.choice(words)
        colours = feedback(guess, secret)
        for letter in set(guess):
            marked = sum(1 for g, c in zip(guess, colours, strict=True) if g == letter and c != X)
            assert marked == min(guess.count(letter), secret.count(letter))
            greens = sum(
                1 for g, s, c in zip(guess, secret, colours, strict=True) if g == letter and c == G
            )
            assert greens == sum(1 for g, s in zip(guess, secret, strict=True) if g == s == letter)


def test_word_lists_come_from_english_words():
    five, common = dictionary(5), secret_pool(5, "common")
    assert all(len(w) == 5 and w.isascii() and w.isalpha() and w.islower() for w in five)
    assert {"crane", "about", "water"} <= set(common) < set(five)
    assert secret_pool(5, "all") == five
    assert len(common) > 3000 and len(five) > len(common) + 3000


def test_a_guess_reveals_feedback_and_a_win_pays_one():
    env = WordleEnv()
    obs, info = env.reset(options={"secret": "crane"})
    assert obs == "Wordle game #0: guess the secret 5-letter word. 6 guesses left."
    obs, reward, terminated, truncated, info = env.step("<answer>Lofty</answer>")
    assert obs.splitlines()[1] == "1. lofty: l grey, o grey, f grey, t grey, y grey"
    assert "5 guesses left" in obs
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["metrics"] == {
        "success": False,
        "action_is_valid": True,
        "action_is_effective": True,
    }
    obs, reward, terminated, truncated, info = env.step("<answer>CRANE</answer>")
    assert obs.splitlines()[2] == "2. crane: c green, r green, a green, n green, e green"
    assert (reward, terminated, truncated, info["metrics"]["success"]) == (1.0, True, False, True)


def test_six_wrong_guesses_lose_the_game():
    env = WordleEnv()
    env.reset(options={"secret": "crane"})
    for turn in range(1, 7):
        obs, reward, terminated, truncated, info = env.step("<answer>lofty</answer>")
        assert terminated is (turn == 6) and reward == 0.0 and not truncated
    assert "0 guesses left" in obs and info["metrics"]["success"] is False


@pytest.mark.parametrize(
    "reply",
    [
        "<answer>zzzzz</answer>",  # not a word
        "<answer>cranes</answer>",  # a word, but six letters
        "<answer>cran</answer>",
        "<answer>cr ane</answer>",
        "<answer>crane!</answer>",
        "<answer>\u212arane</answer>",  # the Kelvin sign lowercases to k
        "crane",  # no answer tag
    ],
)
def test_a_word_outside_the_dictionary_is_a_penalised_no_op(reply):
    env = WordleEnv()
    obs_before, _ = env.reset(options={"secret": "crane"})
    obs, reward, terminated, _, info = env.step(reply)
    assert (obs, reward, terminated) == (obs_before, -0.1, False)
    assert info["metrics"]["action_is_valid"] is False
    assert env.guesses == []


def test_seeds_draw_secrets_from_the_pool_and_repeat():
    env = WordleEnv(secret_pool="common")
    pool = set(secret_pool(5, "common"))
    secrets = []
    for seed in range(30):
        obs, _ = env.reset(seed=seed)
        secrets.append(env.secret)
        assert env.secret in pool
        assert env.secret not in obs, "the observation never shows the secret"
    assert len(set(secrets)) > 25
    replay = WordleEnv(secret_pool="common")
    assert [replay.reset(seed=seed) and replay.secret for seed in range(30)] == secrets


def test_four_letter_games_take_four_letter_words():
    env = WordleEnv(word_length=4)
    env.reset(seed=3)
    assert env.step("<answer>cane</answer>")[4]["metrics"]["action_is_valid"] is True
    assert env.step("<answer>crane</answer>")[4]["metrics"]["action_is_valid"] is False
    assert "4-letter" in env.instruction


def test_the_hard_pool_draws_rarer_secrets():
    common = set(secret_pool(5, "common"))
    env = WordleEnv(secret_pool="all")
    rare = 0
    for seed in range(100):
        env.reset(seed=seed)
        rare += env.secret not in common
    # over half the whole dictionary is outside the common pool
    assert rare > 30


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"word_length": 3}, "word_length must be one of"),
        ({"secret_pool": "easy"}, r"secret_pool must be one of \('common', 'all'\)"),
        ({"max_guesses": 0}, "max_guesses must be >= 1"),
    ],
)
def test_bad_settings_name_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        WordleEnv(**kwargs)


def test_a_secret_outside_the_dictionary_is_refused():
    with pytest.raises(ValueError, match="not a 5-letter word"):
        WordleEnv().reset(options={"secret": "qqqqq"})
