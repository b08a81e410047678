"""``InstructionFollowingEnv``: write about a topic while keeping 1-3 verifiable constraints.

One turn. The observation is a writing task and its constraints (see
:mod:`~environments.instruction_following.constraints`); the reply, inside
``<answer></answer>``, is checked by rule. It earns the fraction of constraints kept (or, with
``all_or_nothing``, 1 only when every one is kept), and success means every one is kept.

Rules alone would pay replies that ignore the task: an empty answer keeps "no commas", the
constraints copied back hold every keyword. So a reply first has to be an attempt at the task,
or it earns 0 whatever it keeps (:meth:`InstructionFollowingEnv.why_off_task`): it names the
topic, has at least ``min_words`` words of which at least 8 are different, copies no run of
8 words from the prompt or the instruction, and does not talk to the checker (two or more of
:data:`META_WORDS`: "this reply keeps every constraint and earns full reward").

Example:
    >>> env = InstructionFollowingEnv()
    >>> task = {"task": "Write a diary entry about the garden.", "topic": "garden",
    ...         "constraints": [{"kind": "no_commas", "args": {}}]}
    >>> obs, info = env.reset(options=task)
    >>> print(obs)
    Task: Write a diary entry about the garden.
    Constraints:
    1. Do not use any commas.
    >>> reply = "My garden woke early today. The roses opened and the bees came back to work."
    >>> obs, reward, terminated, truncated, info = env.step(f"<answer>{reply}</answer>")
    >>> reward, info["metrics"]["success"]
    (1.0, True)
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any, ClassVar

from environments.instruction_following.constraints import (
    CONSTRAINT_KINDS,
    check,
    describe,
    kind_of,
    validate,
    words,
)
from environments.instruction_following.generator import Prompt, generate_prompt
from environments.instruction_following.writer import write_reply
from rollenv.actions import AnswerFormat
from rollenv.text_env import TextEnv

#: a reply that repeats this many words of the prompt in a row copied it
COPIED_RUN = 8
#: words about the scoring rather than the task; a reply with two of them (such as "this reply
#: keeps every constraint and earns full reward") talks to the checker, not about the topic
META_WORDS = frozenset(
    [
        "constraint", "constraints", "reward", "rewards", "instruction", "instructions",
        "requirement", "requirements", "checker", "checkers", "verifier", "compliance",
        "comply", "complies", "compliant", "satisfy", "satisfies", "satisfied", "score",
        "scored", "scores", "scoring",
    ]
)  # fmt: skip
SAMPLE_REPLIES = (
    "Here is my reply.",
    "I follow every constraint.",
    "The answer is below.",
)


def _shingles(text: str, size: int = COPIED_RUN) -> set[tuple[str, ...]]:
    tokens = [w.lower() for w in words(text)]
    return {tuple(tokens[i : i + size]) for i in range(len(tokens) - size + 1)}


class InstructionFollowingEnv(TextEnv):
    """Instruction following on generated prompts, scored by rule.

    Args:
        constraints: how many constraints a prompt has: a count or ``(fewest, most)``.
        kinds: the constraint kinds to draw from (default: all of
            :data:`~environments.instruction_following.constraints.CONSTRAINT_KINDS`).
        all_or_nothing: reward 1 only when every constraint is kept, instead of the fraction.
        min_words: the fewest words a reply may have to count as an attempt.
        format_penalty: reward of a reply without an answer.
        answer_format: overrides how the answer is read from a reply.
        render_mode: ``"ansi"`` or ``None``.
        defer_reward: leave the scoring to reward workers: the answer's step earns 0 and
            ``info["reward_request"]`` names :func:`score_reply` and its arguments (the
            trainer's :mod:`~trainer.rollout.deferred_rewards`).

    ``reset(options={"task": ..., "topic": ..., "constraints": [...]})`` plays a given prompt.
    """

    oracle = "environments.instruction_following.oracle:InstructionFollowingOracle"
    free_form: ClassVar[bool] = True
    tool_name = "answer"
    tool_argument = "text"
    tool_description = "Gives the response to the task."

    def __init__(
        self,
        constraints: int | tuple[int, int] = (1, 3),
        kinds: Sequence[str] | None = None,
        *,
        all_or_nothing: bool = False,
        min_words: int = 15,
        format_penalty: float = -0.1,
        answer_format: AnswerFormat | dict[str, Any] | None = None,
        render_mode: str | None = None,
        defer_reward: bool = False,
    ) -> None:
        super().__init__(
            answer_format=answer_format or AnswerFormat(separator=None),
            format_penalty=format_penalty,
            max_actions=1,
            render_mode=render_mode,
        )
        low, high = (constraints, constraints) if isinstance(constraints, int) else constraints
        if not 1 <= low <= high <= 5:
            raise ValueError(
                f"constraints must be a count or a (fewest, most) pair within 1..5, "
                f"got {constraints!r}"
            )
        self.kinds = [kind_of(name).name for name in kinds] if kinds else list(CONSTRAINT_KINDS)
        self.constraint_range = (low, high)
        self.all_or_nothing = all_or_nothing
        self.min_words = min_words
        self.prompt = Prompt("", "")
        self.kept: list[bool] = []
        self.off_task: str | None = None
        self.solved = False
        self.defer_reward = defer_reward
        self.deferred: str | None = None  # the answer handed to reward workers

    # ------------------------------------------------------------------ TextEnv
    @property
    def instruction(self) -> str:
        scoring = (
            "You earn 1 only when every constraint is kept."
            if self.all_or_nothing
            else "You earn the fraction of the constraints you keep."
        )
        return (
            "Write a reply to the task that keeps every constraint listed under it. Each "
            f"constraint is checked by a rule. {scoring} The reply must be an attempt at the "
            f"task: it names the task's topic, has at least {self.min_words} words and is in "
            f"your own words (repeating {COPIED_RUN} or more words of the task in a row scores "
            "0), about the topic and not about the constraints or the score. "
            + (
                "Your whole reply is checked."
                if self.answer_format.tag is None
                else "Put the reply inside <answer></answer>, optionally after brief reasoning "
                "inside <think></think>."
            )
        )

    @property
    def action_words(self) -> tuple[str, ...]:
        return SAMPLE_REPLIES

    def _new_episode(self, rng: random.Random, options: dict[str, Any] | None) -> None:
        if options and "constraints" in options:
            self.prompt = _given_prompt(options)
        else:
            self.prompt = generate_prompt(rng, self.kinds, self.constraint_range)
        self.kept, self.off_task, self.solved, self.deferred = [], None, False, None

    def _observation(self) -> str:
        text = self._observation_without_verdict()
        if self.deferred is not None:
            return f"{text}\nSubmitted: it is scored after the episode."
        return f"{text}\n{self._verdict()}" if self.kept or self.off_task else text

    def _parse_action(self, text: str) -> str | None:
        return text or None

    def _apply(self, action: str) -> tuple[float, bool]:
        if self.defer_reward:
            self.deferred = action
            self.defer_scoring(
                {
                    "kind": "rule",
                    "rule": "environments.instruction_following.env:score_reply",
                    "response": action,
                    "data": {
                        "prompt": self._reset_info(),
                        "all_or_nothing": self.all_or_nothing,
                        "min_words": self.min_words,
                    },
                }
            )
            return 0.0, True
        self.off_task = self.why_off_task(action)
        self.kept = [check(c, action) for c in self.prompt.constraints]
        if self.off_task:
            self.solved = False
            return 0.0, True
        self.solved = all(self.kept)
        if self.all_or_nothing:
            return (1.0 if self.solved else 0.0), True
        return sum(self.kept) / len(self.kept), True

    def _solved(self) -> bool:
        return self.solved

    def _failed(self) -> bool:
        return not self.solved and self.actions_taken >= 1

    def _reset_info(self) -> dict[str, Any]:
        return {
            "task": self.prompt.task,
            "topic": self.prompt.topic,
            "constraints": [dict(c) for c in self.prompt.constraints],
        }

    def task_ignoring_replies(self) -> dict[str, str]:
        """The topic alone or repeated, the constraints restated, a claim of compliance, and
        prose that keeps the constraints but is about nothing (the oracle's, topic removed)."""
        wrap, topic = self.answer_format.wrap, self.prompt.topic
        keywords = [
            word
            for c in self.prompt.constraints
            for word in (c["args"].get("keywords") or [c["args"].get("keyword")])
            if word
        ]
        elsewhere = write_reply(self.prompt)
        elsewhere = re.sub(rf"\b{re.escape(topic)}\b", "place", elsewhere, flags=re.IGNORECASE)
        return {
            "topic alone": wrap(topic),
            "topic repeated": wrap(" ".join([topic] * 40)),
            "topic and keywords listed": wrap(" ".join([topic, *keywords])),
            "constraints restated": wrap("\n".join(describe(c) for c in self.prompt.constraints)),
            "a claim of compliance": wrap(
                f"This reply about the {topic} keeps every constraint. All the constraints "
                "are satisfied, so it earns full reward."
            ),
            "prose about nothing": wrap(elsewhere),
        }

    # ------------------------------------------------------------------ the rules
    def why_off_task(self, text: str) -> str | None:
        """Why ``text`` is not an attempt at the task (it then earns 0), or ``None``.

        Example:
            >>> env = InstructionFollowingEnv()
            >>> _ = env.reset(seed=0)
            >>> env.why_off_task("Nothing here.")
            'it has 2 words, fewer than 15'
        """
        found = words(text)
        if len(found) < self.min_words:
            return f"it has {len(found)} words, fewer than {self.min_words}"
        if len({w.lower() for w in found}) < 8:
            return "it has fewer than 8 different words"
        if not re.search(rf"\b{re.escape(self.prompt.topic)}\b", text, re.IGNORECASE):
            return f"it does not name the topic ({self.prompt.topic})"
        if sum(w.lower() in META_WORDS for w in found) >= 2:
            return "it talks about its constraints or its reward instead of the task"
        prompt_text = self._observation_without_verdict() + "\n" + self.instruction
        if _shingles(text) & _shingles(prompt_text):
            return f"it repeats {COPIED_RUN} or more words of the prompt in a row"
        return None

    def _observation_without_verdict(self) -> str:
        lines = [f"Task: {self.prompt.task}", "Constraints:"]
        lines += [f"{i}. {describe(c)}" for i, c in enumerate(self.prompt.constraints, 1)]
        return "\n".join(lines)

    def _verdict(self) -> str:
        if self.off_task:
            return f"Not scored: {self.off_task}."
        kept = ", ".join(str(i) for i, ok in enumerate(self.kept, 1) if ok) or "none"
        return f"Kept {sum(self.kept)} of {len(self.kept)} constraints (kept: {kept})."


def score_reply(
    answer: str, prompt: dict[str, Any], all_or_nothing: bool = False, min_words: int = 15
) -> float:
    """The reward :class:`InstructionFollowingEnv` gives the (non-empty) ``answer``, read out of
    a reply, to ``prompt`` (its reset info: ``task``, ``topic``, ``constraints``): the rule a
    reward worker runs for an env made with ``defer_reward=True``.

    Example:
        >>> prompt = {"task": "Write a note about the garden.", "topic": "garden",
        ...           "constraints": [{"kind": "no_commas", "args": {}}]}
        >>> score_reply("My garden woke early today. The roses opened and the bees came back "
        ...             "to work.", prompt)
        1.0
    """
    env = InstructionFollowingEnv(
        all_or_nothing=all_or_nothing,
        min_words=min_words,
        answer_format=AnswerFormat(tag=None, separator=None),
    )
    env.reset(options=prompt)
    return float(env.step(answer)[1])


def _given_prompt(options: dict[str, Any]) -> Prompt:
    task, topic, constraints = options.get("task"), options.get("topic"), options["constraints"]
    if not isinstance(task, str) or not isinstance(topic, str) or not topic.strip():
        raise ValueError(
            "reset options need 'task' and 'topic' (strings) beside 'constraints', got "
            f"task={task!r}, topic={topic!r}"
        )
    if not isinstance(constraints, list) or not constraints:
        raise ValueError(f"'constraints' must be a non-empty list, got {constraints!r}")
    for constraint in constraints:
        validate(constraint)
    return Prompt(task, topic, [dict(c) for c in constraints])


__all__ = ["COPIED_RUN", "META_WORDS", "InstructionFollowingEnv", "score_reply"]
