"""``SearchQAEnv``: answer a question about a made-up world by searching its encyclopedia.

The corpus is generated (``world.py``, ``corpus.py``) so the facts exist nowhere else; the agent
searches it with BM25 and answers once. Actions: ``search[query]`` shows the top ``k`` passages
for the query; ``answer[text]`` ends the episode, paying 1 if the text is the answer by
normalised exact match (``answers.py``) and 0 otherwise. Anything else is an invalid reply.
Running out of actions without an answer truncates the episode with 0.

Example:
    >>> env = SearchQAEnv(hops=1, corpus_size="small")
    >>> obs, info = env.reset(seed=0)
    >>> print(obs)
    Question: In which city was Zefe Drandbraendick born?
    No search yet.
    Actions left: 4. Use search[query] or answer[text].
    >>> obs, *_ = env.step("<answer>search[Zefe Drandbraendick]</answer>")
    >>> print(obs.splitlines()[2])  # doctest: +ELLIPSIS
    [1] Zefe Drandbraendick: Zefe Drandbraendick was a poet, born in Trunhamouth in 1822. ...
    >>> env.step("<answer>answer[Trunhamouth]</answer>")[1:3]
    (1.0, True)
"""

from __future__ import annotations

import random
import re
from typing import Any, ClassVar

from environments.searchqa.answers import is_correct
from environments.searchqa.corpus import CORPUS_SIZES, Corpus, Passage, load_corpus
from environments.searchqa.questions import Question, draw_question
from rollenv.action_tools import ActionTool, templated_tool
from rollenv.actions import AnswerFormat
from rollenv.text_env import TextEnv

_ACTION = re.compile(r"(search|answer)\[(.*)\]", re.IGNORECASE | re.DOTALL)


class SearchQAEnv(TextEnv):
    """Search-QA over a generated encyclopedia.

    Args:
        hops: 1 (a fact of a named entity) or 2 (a fact of an entity the first one names).
        corpus_size: ``"small"``, ``"medium"`` or ``"large"`` (160, 600, 2300 passages).
        look_alikes: whether the world has twins with names sharing a word (harder reading).
        corpus_seed: which world; the index is built once per process for each.
        top_k: passages a search shows.
        max_actions: searches plus the answer, per episode; defaults to ``2 * hops + 2``.
        format_penalty: reward of a reply with no valid action.
        answer_format: overrides how actions are read from a reply (an ``AnswerFormat`` or its
            keyword arguments as a dict).
        render_mode: ``"ansi"`` or ``None``.

    ``reset(options={"question": Question(...)})`` asks a given question.
    """

    oracle: ClassVar[str] = "environments.searchqa.oracle:SearchQAOracle"

    def __init__(
        self,
        hops: int = 1,
        corpus_size: str = "medium",
        *,
        look_alikes: bool = True,
        corpus_seed: int = 0,
        top_k: int = 3,
        max_actions: int | None = None,
        format_penalty: float = -0.1,
        answer_format: AnswerFormat | dict[str, Any] | None = None,
        render_mode: str | None = None,
    ) -> None:
        if hops not in (1, 2):
            raise ValueError(f"hops must be 1 or 2, got {hops!r}")
        if corpus_size not in CORPUS_SIZES:
            raise ValueError(
                f"corpus_size must be one of {tuple(CORPUS_SIZES)}, got {corpus_size!r}"
            )
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        super().__init__(
            answer_format=answer_format or {"max_actions": 1},
            format_penalty=format_penalty,
            max_actions=max_actions if max_actions is not None else 2 * hops + 2,
            render_mode=render_mode,
        )
        self.hops = hops
        self.top_k = top_k
        self.corpus: Corpus = load_corpus(corpus_seed, corpus_size, look_alikes)
        self.question: Question | None = None
        self.query: str | None = None
        self.results: list[Passage] = []
        #: titles of every passage a search showed this episode
        self.retrieved: set[str] = set()
        self.given_answer: str | None = None
        self._instruction = self._write_instruction()

    # ------------------------------------------------------------------ TextEnv
    @property
    def instruction(self) -> str:
        return self._instruction

    def _write_instruction(self) -> str:
        return (
            "You answer a question about a fictional world using its encyclopedia; you cannot "
            "know the facts otherwise. Actions: search[query] shows the "
            f"{self.top_k} passages that best match the query (BM25 keyword search: use names "
            "and key words); answer[text] gives your final answer and ends the episode. You "
            f"have {self.max_actions} actions in all. Some names look alike: read the passage "
            "of the exact name asked. Answer with the name or number only (e.g. answer[1795] "
            "or answer[Port Ranmouth]); it must match exactly, ignoring case, punctuation and "
            "articles. A reply without a valid action costs a penalty. "
            f"{self.answer_format.describe()} Example: "
            f"{self.answer_format.wrap('search[Vulae Brewery]')}"
        )

    @property
    def action_words(self) -> tuple[str, ...]:
        """Sample actions: search the question, or answer with a value a shown passage states."""
        if self.question is None:
            return ("search[founded]", "answer[unknown]")
        values = dict.fromkeys(v for p in self.results for v in p.values)
        return (f"search[{self.question.text}]", *(f"answer[{v}]" for v in values))

    def action_tools(self) -> tuple[ActionTool, ...]:
        text = {"type": "string", "minLength": 1}
        return (
            templated_tool("search", "Searches the passages.", "search[{query}]", {"query": text}),
            templated_tool("answer", "Gives the final answer.", "answer[{text}]", {"text": text}),
        )

    def _new_episode(self, rng: random.Random, options: dict[str, Any] | None) -> None:
        if options and "question" in options:
            question = options["question"]
            if not isinstance(question, Question):
                raise ValueError(f"options['question'] must be a Question, got {question!r}")
            self.question = question
        else:
            self.question = draw_question(rng, self.corpus.world, self.hops)
        self.query, self.results, self.given_answer = None, [], None
        self.retrieved = set()

    def _observation(self) -> str:
        lines = [f"Question: {self.question.text}"]
        if self.query is None:
            lines.append("No search yet.")
        elif not self.results:
            lines.append(f"No passage matches search[{self.query}].")
        else:
            lines.append(f"Results for search[{self.query}]:")
            lines += [f"[{i}] {p.render()}" for i, p in enumerate(self.results, start=1)]
        left = (self.max_actions or 0) - self.actions_taken
        lines.append(f"Actions left: {left}. Use search[query] or answer[text].")
        return "\n".join(lines)

    def _parse_action(self, text: str) -> tuple[str, str] | None:
        match = _ACTION.fullmatch(text)
        if match is None or not match.group(2).strip():
            return None
        return match.group(1).lower(), match.group(2).strip()

    def _apply(self, action: tuple[str, str]) -> tuple[float, bool]:
        verb, text = action
        if verb == "answer":
            self.given_answer = text
            return (1.0 if self._solved() else 0.0), True
        before = (self.query, [p.id for p in self.results])
        self.query = text
        self.results = self.corpus.search(text, self.top_k)
        self.retrieved.update(p.title for p in self.results)
        return 0.0, (self.query, [p.id for p in self.results]) != before

    def _solved(self) -> bool:
        return self.given_answer is not None and is_correct(self.given_answer, self.question.answer)

    def _failed(self) -> bool:
        return self.given_answer is not None and not self._solved()

    def task_ignoring_replies(self) -> dict[str, str]:
        """Answers made of the question or the shown passages, not of the fact asked."""
        shown = " ".join(p.render() for p in self.results) or self.question.text
        return {
            "question as the answer": self.answer_format.wrap(f"answer[{self.question.text}]"),
            "shown passages as the answer": self.answer_format.wrap(f"answer[{shown}]"),
        }
