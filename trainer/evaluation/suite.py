"""``roll-agent eval --suite``: a model's episodes on a leaderboard suite, into the results store.

``--model`` names what plays:

* a baseline policy: ``random`` (uniform valid actions) or ``oracle`` (the env family's solver);
* a preset (``smollm2-135m``, ``tiny-random``), a local Hugging Face folder, or a run's
  checkpoint (``runs/sokoban/checkpoints/step-200/model``, shown as ``sokoban@step-200``), run
  by our continuous engine in this process;
* an OpenAI-compatible endpoint, ``openai:http://127.0.0.1:8000/v1#name`` (``roll-agent serve``,
  vLLM, SGLang, llama.cpp), sent token ids with the tokenizer of ``name`` (or ``--tokenizer``).

A local model plays ``batch_size`` episodes at once on the ``continuous`` engine, each
episode's next turn joining the running batch as soon as its reply is done and a new episode
starting as soon as one ends (the env manager's ``continuous`` schedule); other generators play
``batch_size`` episodes turn by turn. Finished episodes are stored ``chunk`` at a time, so an
interrupted eval (Ctrl-C, ``kill -9``) resumes from the episodes already stored when the same
command runs again; an identical eval already complete is reported, not re-run, unless
``force``.

Example:
    >>> from trainer.evaluation.suite import parse_model
    >>> parse_model("openai:http://127.0.0.1:8000/v1#smollm2-135m").served_model
    'smollm2-135m'
    >>> parse_model("runs/sokoban/checkpoints/step-200/model").name
    'sokoban@step-200'
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import rollenv
from leaderboard.records import BoardRow, EpisodeRecord, EvalIdentity, TurnRecord
from leaderboard.store import ResultStore
from leaderboard.suites import Suite, SuiteEnv
from rollenv.policies import RandomPolicy, oracle_for
from rollenv.wrappers import SeedAsResetOption
from trainer.generation.base import StreamingGenerator
from trainer.generation.openai_client import parse_address

__all__ = [
    "BASELINES",
    "DTYPES",
    "BaselinePlayer",
    "EvalOutcome",
    "ModelChoice",
    "SuiteEvalError",
    "evaluate_suite",
    "parse_model",
]

BASELINES = ("random", "oracle")
DTYPES = ("float32", "bfloat16")
_CHECKPOINT = re.compile(r"(?P<run>[^/]+)/checkpoints/(?P<step>step-\d+)(?:/model)?/?$")


class SuiteEvalError(ValueError):
    """A ``--model`` (or its tokenizer) that cannot be used; the message says what to give."""


@dataclass(frozen=True)
class ModelChoice:
    """What ``--model`` named.

    Attributes:
        kind: ``baseline``, ``local`` (loaded in this process) or ``openai`` (a server).
        source: the text given.
        name: the name on the board.
        base_url: the server's API root (``openai`` only).
        served_model: the model id the server serves (``openai`` only).
    """

    kind: Literal["baseline", "local", "openai"]
    source: str
    name: str
    base_url: str | None = None
    served_model: str | None = None


def parse_model(text: str) -> ModelChoice:
    """Reads ``--model``: a baseline, ``openai:URL#name``, or a preset / folder / checkpoint."""
    if text in BASELINES:
        return ModelChoice("baseline", text, text)
    if text.startswith("openai:"):
        address = parse_address(text)
        if address is None:
            raise SuiteEvalError(
                f"--model {text!r}: write an endpoint as openai:http://HOST:PORT/v1#MODEL_ID"
            )
        url, served = address
        return ModelChoice("openai", text, served, base_url=url, served_model=served)
    match = _CHECKPOINT.search(text.replace(os.sep, "/"))
    if match:
        return ModelChoice("local", text, f"{match['run']}@{match['step']}")
    path = Path(text)
    return ModelChoice("local", text, path.name if path.is_dir() else text)


@dataclass(frozen=True)
class EvalOutcome:
    """What an eval did.

    Attributes:
        eval_id: its id in the store.
        already_complete: an identical eval was already stored; nothing was played.
        played: episodes played now (the rest were stored before).
        row: its row of the suite's board.
        wall_s: seconds this call took.
    """

    eval_id: int
    already_complete: bool
    played: int
    row: BoardRow
    wall_s: float


def evaluate_suite(
    choice: ModelChoice,
    suite: Suite,
    store: ResultStore,
    *,
    temperature: float = 0.0,
    seed: int = 0,
    max_new_tokens: int = 64,
    max_context_tokens: int = 2048,
    chunk: int = 32,
    batch_size: int = 64,
    dtype: str = "float32",
    force: bool = False,
    tokenizer_name: str | None = None,
    backend: str = "continuous",
    command: str = "",
    progress: Callable[[str, int], None] = lambda env_id, done: None,
    on_start: Callable[[int, int], None] = lambda eval_id, stored: None,
) -> EvalOutcome:
    """Plays ``suite`` with ``choice`` and stores every episode in ``store``.

    Args:
        choice: the model or baseline (:func:`parse_model`).
        suite: the suite.
        store: where episodes go, a chunk at a time.
        temperature: 0 is greedy.
        seed: seeds sampling (and the random baseline, with each episode's seed).
        max_new_tokens: tokens a reply may have.
        max_context_tokens: an episode whose next prompt would be longer ends (``context``).
        chunk: finished episodes stored together.
        batch_size: episodes a model plays at once (the generator batches their turns).
        dtype: a local model's weights and cache on the ``continuous`` engine: ``float32``
            (the model's own numbers) or ``bfloat16`` (faster on CPUs with AVX512-BF16 or AMX;
            its greedy replies may differ, so it is part of the eval's identity).
        force: play again an identical eval already complete.
        tokenizer_name: the tokenizer of an ``openai`` model (default: its served name).
        backend: the in-process engine, ``continuous`` or ``hf`` (a local model only).
        command: the command line, for the provenance.
        progress: called after each stored chunk with the env id and the episodes stored in all.
        on_start: called once the model is loaded and the eval is in the store, with its id and
            the episodes stored before (a resumed eval's), unless it was already complete.
    """
    from leaderboard.provenance import make_provenance

    started = time.monotonic()
    if dtype not in DTYPES:
        raise SuiteEvalError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if dtype != "float32" and (choice.kind != "local" or backend != "continuous"):
        raise SuiteEvalError(
            f"--dtype {dtype} is for a local model on the continuous backend; "
            "leave it at float32 here"
        )
    player = _make_player(
        choice,
        seed,
        temperature,
        max_new_tokens,
        max_context_tokens,
        tokenizer_name,
        backend,
        batch_size,
        dtype,
    )
    sampling: dict[str, Any] = {"temperature": temperature, "seed": seed}
    if choice.kind != "baseline":
        sampling |= {"max_new_tokens": max_new_tokens, "max_context_tokens": max_context_tokens}
    if dtype != "float32":  # float32 evals keep the identity they had before dtype was a choice
        sampling["dtype"] = dtype
    identity = EvalIdentity(choice.name, player.weights, suite.name, suite.version, sampling)
    provenance = make_provenance(suite, choice.source, _hardware(), command)
    start = store.start_eval(identity, provenance, [env.id for env in suite.envs], force=force)
    played = 0
    if not start.complete:
        stored = len(start.done)
        on_start(start.eval_id, stored)
        for env in suite.envs:

            def keep(records: list[EpisodeRecord], env_id: str = env.id) -> None:
                nonlocal played
                store.add_episodes(start.eval_id, records)
                played += len(records)
                progress(env_id, stored + played)

            seeds = [s for s in env.seeds if (env.id, s) not in start.done]
            if seeds:
                player.play(env, seeds, keep, chunk)
        store.finish_eval(start.eval_id)
    board = store.board(suite.name, suite.version)
    row = next(r for r in board.rows if r.evaluation.eval_id == start.eval_id)
    return EvalOutcome(start.eval_id, start.complete, played, row, time.monotonic() - started)


def _chunks(items: Sequence[int], size: int) -> Iterator[list[int]]:
    for i in range(0, len(items), size):
        yield list(items[i : i + size])


def _hardware() -> str:
    cores = f"{os.cpu_count()} CPU cores"
    try:
        import torch

        if torch.cuda.is_available():
            return f"{cores}, {torch.cuda.get_device_name(0)}"
    except ImportError:
        pass
    return f"{cores}, no GPU"


# ---------------------------------------------------------------------------------- players
class BaselinePlayer:
    """``random`` or ``oracle``: rollenv's reference policies, no model, no tokens.

    Example:
        >>> from leaderboard.suites import SuiteEnv
        >>> (episode,) = BaselinePlayer("oracle").play(SuiteEnv("FrozenLake-v0"), [3])
        >>> episode.success, episode.turns[-1].reward
        (True, 1.0)
    """

    weights = "baseline"

    def __init__(self, name: str):
        self.name = name

    def play(
        self,
        suite_env: SuiteEnv,
        seeds: list[int],
        keep: Callable[[list[EpisodeRecord]], None] = lambda records: None,
        chunk: int = 32,
    ) -> list[EpisodeRecord]:
        """Plays ``seeds`` one after another, handing ``keep`` every ``chunk`` episodes;
        returns them all."""
        env = _make_env(suite_env)
        played: list[EpisodeRecord] = []
        try:
            for part in _chunks(seeds, chunk):
                records = [self._episode(env, suite_env, seed) for seed in part]
                keep(records)
                played += records
        finally:
            env.close()
        return played

    def _episode(self, env: Any, suite_env: SuiteEnv, seed: int) -> EpisodeRecord:
        started = time.monotonic()
        observation, info = env.reset(seed=seed)
        policy = RandomPolicy(env, seed=seed) if self.name == "random" else oracle_for(env)
        instruction, first = info.get("instruction", ""), observation
        turns, reason = [], "max_turns"
        for _ in range(_max_turns(suite_env)):
            reply = policy.act(observation, info)
            observation, reward, terminated, truncated, info = env.step(reply)
            turns.append(TurnRecord(reply, observation, float(reward), dict(info["metrics"])))
            if terminated or truncated:
                reason = "terminated" if terminated else "truncated"
                break
        wall_s = time.monotonic() - started
        return _record(suite_env.id, seed, instruction, first, turns, reason, wall_s)


class _ModelPlayer:
    """A language model through a generator: in this process, or a server's."""

    def __init__(
        self,
        generator: Any,
        tokenizer: Any,
        sampling: Any,
        weights: str,
        max_context_tokens: int,
        batch_size: int,
    ):
        self.generator = generator
        self.tokenizer = tokenizer
        self.sampling = sampling
        self.weights = weights
        self.max_context_tokens = max_context_tokens
        self.batch_size = batch_size

    def play(
        self,
        suite_env: SuiteEnv,
        seeds: list[int],
        keep: Callable[[list[EpisodeRecord]], None] = lambda records: None,
        chunk: int = 32,
    ) -> list[EpisodeRecord]:
        """Plays ``seeds``, ``batch_size`` episodes at once, handing ``keep`` the finished
        episodes ``chunk`` at a time (the last part may be smaller); returns them all, in the
        order they finished."""
        from trainer.rollout.env_manager import EnvManager

        continuous = isinstance(self.generator, StreamingGenerator)
        manager = EnvManager(
            suite_env.id,
            self.tokenizer,
            self.generator,
            env_kwargs=dict(suite_env.kwargs),
            group_size=1,
            max_turns=_max_turns(suite_env),
            sampling=self.sampling,
            max_context_tokens=self.max_context_tokens,
            wrap=_reset_option_wrapper(suite_env),
            schedule="continuous" if continuous else "lockstep",
            episodes_in_flight=self.batch_size,
        )
        finished: list[Any] = []
        played: list[EpisodeRecord] = []
        since = [time.monotonic()]

        def hand_on() -> None:
            # episodes played together: each is given an equal share of the time since the last
            # hand-on, so the stored times add up to the wall time
            now = time.monotonic()
            share = (now - since[0]) / len(finished)
            since[0] = now
            records = [_record_of(t, share) for t in finished]
            keep(records)
            played.extend(records)
            finished.clear()

        def on_trajectory(trajectory: Any) -> None:
            finished.append(trajectory)
            if len(finished) >= chunk:
                hand_on()

        try:
            for part in [seeds] if continuous else _chunks(seeds, self.batch_size):
                manager.rollout(part, on_trajectory=on_trajectory)
            if finished:
                hand_on()
        finally:
            manager.close()
        return played


def _record_of(trajectory: Any, wall_s: float) -> EpisodeRecord:
    return _record(
        trajectory.env_id,
        trajectory.seed,
        trajectory.instruction,
        trajectory.first_observation,
        [
            TurnRecord(
                turn.reply,
                turn.observation,
                turn.reward,
                turn.metrics,
                turn.prompt_tokens,
                turn.response_tokens,
            )
            for turn in trajectory.turns
        ],
        trajectory.finish_reason,
        wall_s,
    )


def _make_player(
    choice: ModelChoice,
    seed: int,
    temperature: float,
    max_new_tokens: int,
    max_context_tokens: int,
    tokenizer_name: str | None,
    backend: str,
    batch_size: int,
    dtype: str,
) -> BaselinePlayer | _ModelPlayer:
    if choice.kind == "baseline":
        return BaselinePlayer(choice.name)
    from trainer.generation import SamplingParams, make_generator
    from trainer.models import load_model, load_tokenizer

    if choice.kind == "openai":
        try:
            tokenizer = load_tokenizer(tokenizer_name or choice.served_model)
        except Exception as error:
            raise SuiteEvalError(
                f"cannot load the tokenizer of {choice.served_model!r} ({error}); give the "
                "served model's tokenizer with --tokenizer (a preset or a local folder)"
            ) from None
        generator = make_generator(
            "openai", choice.served_model, tokenizer, base_url=choice.base_url
        )
        weights = f"{choice.base_url}#{choice.served_model}"
    else:
        from trainer.strategies.from_config import resolve_device

        model, tokenizer = load_model(choice.source, seed=seed)
        weights = _weights_hash(model)
        device = resolve_device("auto")
        model.to(device)
        options: dict[str, Any] = {"max_batch_size": batch_size}
        if backend == "continuous":
            # the running rows, and a quarter more for the episodes between two turns
            options |= {"dtype": dtype, "cache_rows": batch_size + max(8, batch_size // 4) + 1}
        generator = make_generator(backend, model, tokenizer, device=device, **options)
    sampling = SamplingParams(
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        stop_token_ids=(tokenizer.eos_token_id,),
        seed=seed if temperature > 0 else None,
    )
    return _ModelPlayer(generator, tokenizer, sampling, weights, max_context_tokens, batch_size)


def _weights_hash(model: Any) -> str:
    """A hash of every parameter and buffer, by name: equal weights, equal hash."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().view(-1).view(dtype=_bytes()).numpy())
    return "sha256:" + digest.hexdigest()[:32]


def _bytes() -> Any:
    import torch

    return torch.uint8


# ---------------------------------------------------------------------------------- episodes
def _make_env(suite_env: SuiteEnv) -> Any:
    env = rollenv.make(suite_env.id, **suite_env.kwargs)
    wrap = _reset_option_wrapper(suite_env)
    return wrap(env) if wrap else env


def _reset_option_wrapper(suite_env: SuiteEnv) -> Callable[[Any], Any] | None:
    key = suite_env.reset_option
    return None if key is None else (lambda env: SeedAsResetOption(env, key))


def _max_turns(suite_env: SuiteEnv) -> int:
    if suite_env.max_turns is not None:
        return suite_env.max_turns
    return rollenv.spec(suite_env.id).max_episode_steps or 10


def _record(
    env_id: str,
    seed: int,
    instruction: str,
    first_observation: str,
    turns: list[TurnRecord],
    finish_reason: str,
    wall_s: float,
) -> EpisodeRecord:
    return EpisodeRecord(
        env_id=env_id,
        seed=seed,
        instruction=instruction,
        first_observation=first_observation,
        turns=tuple(turns),
        success=bool(turns and turns[-1].metrics.get("success", False)),
        total_reward=sum(turn.reward for turn in turns),
        finish_reason=finish_reason,
        wall_s=wall_s,
    )
