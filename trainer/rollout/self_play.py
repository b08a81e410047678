"""``SelfPlayManager``: plays games of several seats in which the policy sits in every seat.

Each game is a ``rollenv.make_multi`` game (PettingZoo's AEC API). Every turn the manager asks
the generator for one reply per running game, from the seat whose move that game waits for, in
one batched call: the seats of all the games share the batch. Each seat of each game is its own
episode, a ``Trajectory`` with one sample (``full`` context): its instruction and the text it
was told since its last move as user messages, its replies as the trained tokens.

A seat's reward is what the game gives it: the penalties of its refused moves and, at the end,
its result. A reward reaches a seat when it is next to move (or when the game ends), and is
credited to that seat's last reply.

Groups are per seat: the ``group_size`` games of one seed give ``group_size`` episodes of
``player_0`` (group ``group_id * players``), as many of ``player_1`` (``group_id * players +
1``), and so on, so a group-relative estimator (GRPO, StarPO) compares a seat with the same
seat of the same start (SPIRAL's role-conditioned baseline, per group).

Seats given in ``opponents`` are played by those policies (a random player, a solver, an
earlier checkpoint), and only the other seats are recorded: how a policy is measured against a
fixed one. A rollout may also seat a past version of the policy (``past_generator``, from
``OpponentPool``) in the last ``past_groups`` groups: there the policy plays one seat of each
game, the first in the group's first game, the next in the next, and the past version the
others; only the policy's seat is recorded.

Example:
    >>> from trainer.models import load_model  # doctest: +SKIP
    >>> model, tokenizer = load_model("tiny-random")  # doctest: +SKIP
    >>> manager = SelfPlayManager("textarena/TicTacToe-v0", tokenizer,
    ...                           HFGenerator(model, tokenizer), group_size=2)  # doctest: +SKIP
    >>> len(manager.rollout(seeds=[0, 1]))  # 2 seeds, 2 games each, 2 seats  # doctest: +SKIP
    8
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import rollenv
from rollenv.multi_agent_registration import multi_agent_spec
from rollenv.seat_policies import SeatPolicy
from trainer.generation.base import GenerationOutput, Generator, SamplingParams
from trainer.rollout.chat_tokens import ChatTokens
from trainer.rollout.trajectory import Sample, Trajectory, Turn

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from trainer.config import Config


@dataclass
class _Seat:
    """One seat's episode in one game (the manager's private bookkeeping)."""

    agent: str
    trajectory: Trajectory
    tokens: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    turn_of_token: list[int] = field(default_factory=list)
    weight_versions: list[int] = field(default_factory=list)
    ended_turn: bool = True  # its last reply ended with the end-of-turn token
    result: float | None = None  # the game's result for it (None: the game was cut short)

    def extend(self, ids: list[int], *, trained: bool, turn: int = -1, **sampled: Any) -> None:
        n = len(ids)
        self.tokens += ids
        self.loss_mask += [int(trained)] * n
        self.logprobs += list(sampled.get("logprobs") or [0.0] * n)
        self.turn_of_token += [turn if trained else -1] * n
        self.weight_versions += list(sampled.get("versions") or [-1] * n)


@dataclass
class _Game:
    env: Any
    seats: dict[str, _Seat]  # the policy's
    past_seats: dict[str, _Seat] = field(default_factory=dict)  # a past version's (not kept)
    done: bool = False
    truncated: bool = False  # cut short by the game (its move limit, or an error)


class SelfPlayManager:
    """Plays groups of games of ``env_id`` with the policy in every seat (but ``opponents``').

    Args:
        env_id: a multi-agent id (``rollenv.multi_agent_ids()``).
        tokenizer: the policy's tokenizer (its chat template builds the prompts).
        generator: where the seats' replies come from (``None`` if every rollout passes a
            ``policy``).
        env_kwargs: keyword arguments for ``rollenv.make_multi``.
        group_size: games per seed.
        max_turns: replies of one seat (penalised no-ops included) before its game is cut
            (``finish_reason="max_turns"``).
        sampling: sampling parameters of every reply.
        max_context_tokens: a game whose next prompt for a seat would be longer ends
            (``finish_reason="context"``).
        opponents: seats played by a fixed policy instead of the generator (not recorded).
    """

    def __init__(
        self,
        env_id: str,
        tokenizer: PreTrainedTokenizerBase,
        generator: Generator | None,
        *,
        env_kwargs: dict[str, Any] | None = None,
        group_size: int = 8,
        max_turns: int = 10,
        sampling: SamplingParams | None = None,
        max_context_tokens: int = 4096,
        opponents: dict[str, SeatPolicy] | None = None,
    ) -> None:
        self.env_id = multi_agent_spec(env_id).id
        self.env_kwargs = dict(env_kwargs or {})
        self.tokenizer = tokenizer
        self.generator = generator
        self.group_size = group_size
        self.max_turns = max_turns
        self.sampling = sampling or SamplingParams(stop_token_ids=(tokenizer.eos_token_id,))
        self.max_context_tokens = max_context_tokens
        self.chat = ChatTokens(tokenizer)
        probe = rollenv.make_multi(self.env_id, **self.env_kwargs)
        self.agents: list[str] = list(probe.possible_agents)
        self.opponents = dict(opponents or {})
        unknown = set(self.opponents) - set(self.agents)
        if unknown:
            raise ValueError(
                f"opponents for seats {sorted(unknown)} that {self.env_id} does not have; its "
                f"seats: {', '.join(self.agents)}"
            )
        self.trained = [agent for agent in self.agents if agent not in self.opponents]
        if not self.trained:
            raise ValueError("every seat has an opponent: no seat is left for the policy")
        self._envs: list[Any] = [probe]
        #: the last rollout's result of each trajectory's seat (``None``: its game was cut short)
        self.last_results: list[float | None] = []
        #: the same, of the games against a past version only
        self.last_past_results: list[float | None] = []

    @classmethod
    def from_config(
        cls,
        config: Config,
        tokenizer: Any,
        generator: Generator | None,
        group_size: int,
        sampling: SamplingParams | None = None,
        *,
        opponents: dict[str, SeatPolicy] | None = None,
    ) -> SelfPlayManager:
        """The manager ``config.env`` describes (``env.self_play``), ``group_size`` games a
        seed."""
        env = config.env
        return cls(
            env.id,
            tokenizer,
            generator,
            env_kwargs=env.kwargs,
            group_size=group_size,
            max_turns=env.max_turns,
            sampling=sampling,
            max_context_tokens=env.max_context_tokens,
            opponents=opponents,
        )

    def close(self) -> None:
        for env in self._envs:
            env.close()
        self._envs = []

    # ------------------------------------------------------------------ playing
    def rollout(
        self,
        seeds: list[int],
        group_ids: list[int] | None = None,
        policy: SeatPolicy | None = None,
        past_generator: Generator | None = None,
        past_groups: int = 0,
        **_: Any,
    ) -> list[Trajectory]:
        """Plays ``group_size`` games per seed; returns one trajectory per seat the policy
        played in each game, game by game in the order of ``seeds``, seats in seat order.

        Args:
            seeds: one reset seed per group.
            group_ids: one id per group (defaults to the position in ``seeds``).
            policy: if given, it writes the trained seats' replies instead of the generator
                (e.g. ``SolverPolicy``), tokenised and closed with the end-of-turn token: the
                same prompts and samples as RL, for a supervised warm start.
            past_generator: a past version of the policy, for the last ``past_groups`` groups.
            past_groups: how many groups, the last ones, play against ``past_generator``.
        """
        group_ids = list(range(len(seeds))) if group_ids is None else list(group_ids)
        if len(group_ids) != len(seeds):
            raise ValueError("give one group id per seed")
        if past_groups and past_generator is None:
            raise ValueError("past_groups needs the past version's generator (past_generator)")
        if past_groups and self.group_size % len(self.trained):
            raise ValueError(
                f"against a past version the policy takes each of the {len(self.trained)} seats "
                f"in turn: env.group_size must be a multiple of {len(self.trained)} "
                f"(got {self.group_size})"
            )
        while len(self._envs) < len(seeds) * self.group_size:
            self._envs.append(rollenv.make_multi(self.env_id, **self.env_kwargs))
        first_past = len(seeds) - past_groups
        games = [
            self._start(
                env,
                seeds[i // self.group_size],
                group_ids[i // self.group_size],
                own_seat=(
                    self.trained[(i % self.group_size) % len(self.trained)]
                    if i // self.group_size >= first_past
                    else None
                ),
            )
            for i, env in enumerate(self._envs[: len(seeds) * self.group_size])
        ]
        # each pass plays one reply in every running game, and a game ends when a seat would
        # reply more than max_turns times: at most max_turns passes per seat
        for turn in range(self.max_turns * len(self.trained)):
            waiting = [(game, self._advance(game)) for game in games if not game.done]
            waiting = [(game, seat) for game, seat in waiting if seat is not None]
            for game, seat in waiting:
                if len(seat.trajectory.turns) >= self.max_turns:
                    self._end(game, "max_turns")
            waiting = [(game, seat) for game, seat in waiting if not game.done]
            if not waiting:
                break
            prompts = [self._prompt(game, seat, turn) for game, seat in waiting]
            playing = [(g, s, p) for (g, s), p in zip(waiting, prompts, strict=True) if p]
            if not playing:
                continue
            past = [entry for entry in playing if entry[1].agent in entry[0].past_seats]
            own = [entry for entry in playing if entry[1].agent not in entry[0].past_seats]
            sampling = self.sampling.for_turn(turn)
            if past:
                assert past_generator is not None
                outputs = past_generator.generate([prompt for _, _, prompt in past], sampling)
                for (game, seat, prompt), output in zip(past, outputs, strict=True):
                    self._play(game, seat, turn, prompt, output)
            if not own:
                continue
            if policy is not None:
                outputs = [self._policy_reply(policy, game, seat) for game, seat, _ in own]
            elif self.generator is None:
                raise ValueError("this SelfPlayManager has no generator: pass a policy")
            else:
                outputs = self.generator.generate([prompt for _, _, prompt in own], sampling)
            for (game, seat, prompt), output in zip(own, outputs, strict=True):
                self._play(game, seat, turn, prompt, output)
        for game in games:
            if not game.done:
                self._end(game, "max_turns")
        seats = [
            game.seats[agent] for game in games for agent in self.trained if agent in game.seats
        ]
        self.last_results = [seat.result for seat in seats]
        self.last_past_results = [
            seat.result for game in games if game.past_seats for seat in game.seats.values()
        ]
        return [seat.trajectory for seat in seats]

    def _start(self, env: Any, seed: int, group_id: int, own_seat: str | None = None) -> _Game:
        """A new game; with ``own_seat``, the policy plays that seat only and a past version
        the other seats without an opponent."""
        env.reset(seed=seed)
        seats, past_seats = {}, {}
        for index, agent in enumerate(self.agents):
            if agent in self.opponents:
                continue
            trajectory = Trajectory(self.env_id, seed, group_id * len(self.agents) + index)
            trajectory.instruction = env.observe(agent)["instruction"]
            mine = own_seat is None or agent == own_seat
            (seats if mine else past_seats)[agent] = _Seat(agent, trajectory)
        return _Game(env, seats, past_seats)

    def _advance(self, game: _Game) -> _Seat | None:
        """Plays the opponents' moves and the finished seats' steps until a trained seat is to
        move (returned), or the game is over (``None``)."""
        env = game.env
        while env.agents:
            agent = env.agent_selection
            _, reward, terminated, truncated, _ = env.last()
            if agent in game.seats:
                self._credit(game.seats[agent], float(reward))
            if terminated or truncated:
                game.truncated |= truncated
                env.step(None)
                continue
            if agent in self.opponents:
                env.step(self.opponents[agent].reply(env, agent))
                continue
            return game.seats.get(agent) or game.past_seats[agent]
        self._end(game, "truncated" if game.truncated else "terminated")
        return None

    def _prompt(self, game: _Game, seat: _Seat, turn: int) -> list[int]:
        """The seat's tokens so far and what it was told since its last reply; empty (and the
        game ended) where that would outgrow ``max_context_tokens``."""
        told = game.env.observe(seat.agent)
        if not seat.tokens:
            seat.trajectory.first_observation = told["text"]
            messages = [
                {"role": "system", "content": told["instruction"]},
                {"role": "user", "content": told["text"]},
            ]
            following = self.chat.prompt(messages)
        else:
            following = self.chat.next_turn(told["text"], seat.ended_turn)
        if len(seat.tokens) + len(following) > self.max_context_tokens:
            self._end(game, "context")
            return []
        seat.extend(following, trained=False)
        seat.trajectory.anchors_start.append(told["text"])
        return list(seat.tokens)

    def _play(
        self, game: _Game, seat: _Seat, turn: int, prompt: list[int], output: GenerationOutput
    ) -> None:
        reply = self.tokenizer.decode(output.token_ids, skip_special_tokens=True)
        seat.extend(
            list(output.token_ids),
            trained=True,
            turn=turn,
            logprobs=output.logprobs,
            versions=output.weight_versions,
        )
        seat.ended_turn = output.finish_reason == "stop"
        game.env.step(reply)
        valid = bool(game.env.infos.get(seat.agent, {}).get("action_is_valid", True))
        seat.trajectory.turns.append(
            Turn(
                reply=reply,
                reward=0.0,  # credited when the game next tells this seat its reward
                anchor=seat.trajectory.anchors_start[-1],
                metrics={"action_is_valid": valid, "action_is_effective": valid},
                prompt_tokens=len(prompt),
                response_tokens=len(output.token_ids),
            )
        )

    def _policy_reply(self, policy: SeatPolicy, game: _Game, seat: _Seat) -> GenerationOutput:
        text = policy.reply(game.env, seat.agent)
        ids = self.tokenizer.encode(text, add_special_tokens=False) + [self.chat.end_of_turn_id]
        return GenerationOutput(token_ids=ids, logprobs=[0.0] * len(ids), finish_reason="stop")

    def _credit(self, seat: _Seat, reward: float) -> None:
        if reward and seat.trajectory.turns:
            seat.trajectory.turns[-1].reward += reward

    def _end(self, game: _Game, reason: str) -> None:
        game.done = True
        results = game.env.unwrapped.final_results if reason == "terminated" else {}
        for seat in game.seats.values():
            seat.result = results.get(seat.agent)
            trajectory = seat.trajectory
            trajectory.finish_reason = reason
            if trajectory.turns:  # a win: the best result of the game, above someone's
                trajectory.turns[-1].metrics["success"] = game.env.unwrapped.won(seat.agent)
            versions = seat.weight_versions
            trajectory.samples = (
                [
                    Sample(
                        seat.tokens,
                        seat.loss_mask,
                        seat.logprobs,
                        seat.turn_of_token,
                        weight_versions=versions if any(v >= 0 for v in versions) else None,
                    )
                ]
                if any(seat.loss_mask)
                else []
            )
