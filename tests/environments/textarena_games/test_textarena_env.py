"""TextArenaEnv's rules: seeding, isolation between instances, refused moves, seats, errors."""

from __future__ import annotations

import pytest

pytest.importorskip("textarena")

import rollenv  # noqa: E402
from rollenv.policies import RandomPolicy, run_episode, text_env_of  # noqa: E402


def _trajectory(env, seed: int, steps: int = 15) -> list[tuple]:
    policy = RandomPolicy(env, seed=seed)
    obs, info = env.reset(seed=seed)
    record = [obs]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(policy.act(obs, info))
        record.append((obs, reward, terminated, truncated))
        if terminated or truncated:
            break
    return record


@pytest.mark.parametrize("game", ["TicTacToe-v0", "Mastermind-v0", "Poker-v0", "Sokoban-v0"])
def test_same_seed_same_trajectory(game):
    env_id = f"textarena/{game}"
    assert _trajectory(rollenv.make(env_id), 7) == _trajectory(rollenv.make(env_id), 7)


def test_the_seed_changes_what_the_opponent_and_the_hidden_state_do():
    env = rollenv.make("textarena/Mastermind-v0")
    feedback = {tuple(map(str, _trajectory(env, seed, steps=3))) for seed in range(6)}
    assert len(feedback) > 1


@pytest.mark.parametrize("game", ["Poker-v0", "Sokoban-v0", "Battleship-v0"])
def test_interleaved_instances_give_what_each_gives_alone(game):
    env_id = f"textarena/{game}"
    alone = _trajectory(rollenv.make(env_id), 3)
    first, second = rollenv.make(env_id), rollenv.make(env_id)
    policies = [RandomPolicy(first, seed=3), RandomPolicy(second, seed=4)]
    observations = [first.reset(seed=3), second.reset(seed=4)]
    record = [observations[0][0]]
    for _ in range(15):
        for index, env in enumerate((first, second)):
            obs, info = observations[index]
            if obs is None:
                continue
            obs, reward, terminated, truncated, info = env.step(policies[index].act(obs, info))
            observations[index] = (None, None) if terminated or truncated else (obs, info)
            if index == 0:
                record.append((obs, reward, terminated, truncated))
    assert record == alone[: len(record)]
    assert len(record) == len(alone)


def test_a_reply_without_an_answer_is_a_penalised_no_op():
    env = rollenv.make("textarena/TicTacToe-v0")
    obs, _ = env.reset(seed=0)
    after, reward, terminated, truncated, info = env.step("I play the center")
    assert (after, reward, terminated) == (obs, -0.1, False)
    assert info["metrics"]["action_is_valid"] is False


def test_a_move_the_game_refuses_is_a_no_op_then_a_loss_as_textarena_rules():
    env = rollenv.make("textarena/TicTacToe-v0")
    obs, _ = env.reset(seed=0)
    after, reward, terminated, truncated, info = env.step("<answer>[42]</answer>")
    assert (after, reward, terminated, truncated) == (obs, -0.1, False, False)
    assert info["metrics"]["action_is_valid"] is False
    assert "Must be between 0 and 8" in info["illegal_move_reason"]
    # TextArena allows one retry: the second refused move in a row loses the game
    after, reward, terminated, truncated, info = env.step("<answer>[42]</answer>")
    assert terminated and reward == -1.0
    assert info["metrics"] == {
        "success": False,
        "action_is_valid": False,
        "action_is_effective": False,
    }


def test_a_two_player_game_against_random_finishes_with_a_mapped_reward():
    env = rollenv.make("textarena/TicTacToe-v0")
    outcomes = set()
    for seed in range(20):
        result = run_episode(env, RandomPolicy(env, seed=seed), seed=seed)
        assert result.terminated and result.turns <= 5
        assert result.valid_turns == result.turns
        outcomes.add((round(result.total_reward), result.success))
    assert outcomes <= {(1, True), (0, False), (-1, False)}
    assert (1, True) in outcomes and (-1, False) in outcomes


def test_agent_seat_one_lets_the_opponent_open():
    env = rollenv.make("textarena/TicTacToe-v0", agent_seat=1)
    obs, info = env.reset(seed=0)
    assert "You are Player 1" in info["instruction"]
    assert "[Player 0]" in obs  # the opponent's opening move
    assert len(text_env_of(env).action_words) == 8


def test_a_bad_seat_names_the_allowed_ones():
    with pytest.raises(ValueError, match="allowed: 0, 1"):
        rollenv.make("textarena/TicTacToe-v0", agent_seat=2)


def test_an_unknown_opponent_names_the_allowed_forms():
    with pytest.raises(ValueError, match="'random' or 'openai:<base_url>:<model>'"):
        rollenv.make("textarena/TicTacToe-v0", opponent="minimax")


def test_an_exception_in_the_game_ends_the_episode_and_says_why(monkeypatch):
    env = rollenv.make("textarena/TicTacToe-v0")
    env.reset(seed=0)
    inner = text_env_of(env)

    def broken_step(action):
        raise KeyError("cell")

    monkeypatch.setattr(inner._game, "step", broken_step)
    obs, reward, terminated, truncated, info = env.step("<answer>[4]</answer>")
    assert truncated and not terminated
    assert "KeyError" in info["error"]


def test_action_words_are_moves_the_game_accepts():
    env = rollenv.make("textarena/Othello-v0")
    env.reset(seed=0)
    for word in text_env_of(env).action_words:
        probe = rollenv.make("textarena/Othello-v0")
        probe.reset(seed=0)
        _, _, _, _, info = probe.step(f"<answer>{word}</answer>")
        assert info["metrics"]["action_is_valid"], word
