"""``MathEnv``: answer a math problem; the answer is checked for equivalence by math-verify.

The final answer goes in ``<answer>...</answer>`` or ``\\boxed{...}``. The reward is 1 for a
correct answer, 0 for a wrong one. Correct means a *result* in the task's answer form (a number
where the reference is one, a fraction in lowest terms; never the question's expression copied
back) that math-verify finds equal to the reference: ``0.5`` and ``\\frac{1}{2}`` count as the
same, ``\\frac{12}{16}`` does not answer "simplify 12/16" (see ``environments.math.verify``).
With ``max_tool_calls > 0`` (``MathTool-v0``) the model may first run Python, written in
``<python>...</python>``, in a sandboxed session that keeps its variables between calls; it sees
the output and answers when ready.

Example:
    >>> import rollenv
    >>> env = rollenv.make("MathVerify-v0")  # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)  # doctest: +SKIP
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

from environments.code.env import clean_text
from environments.math.data import (
    DEFAULT_TASKS,
    MathProblem,
    check_task_config,
    generate,
    load_jsonl,
)
from environments.math.verify import extract_answer, is_correct
from rollenv.action_tools import ActionTool, text_tool
from rollenv.actions import AnswerFormat, tag_contents
from rollenv.shadowing import import_hub_package
from rollenv.text_env import TextEnv

_NUMBERS = re.compile(r"-?\d+(?:\.\d+)?")
# a run of numbers joined by arithmetic operators (brackets and signs allowed), or a $...$ span
_EXPRESSION = re.compile(r"[-(\s]*\d[\d.\s]*(?:[-+*/^×÷][-(\s]*\d[\d.\s)]*)+")
_LATEX_SPAN = re.compile(r"\$([^$]+)\$")
TOOL_OUTPUT_CHARS = 2000


def question_expressions(question: str) -> list[str]:
    """The pieces of mathematics in a question: operator expressions and ``$...$`` spans.

    Example:
        >>> question_expressions("Calculate 14 + 37 * -17 / 1 + 46.")
        ['14 + 37 * -17 / 1 + 46']
    """
    found = [m.strip().rstrip(".").strip() for m in _EXPRESSION.findall(question)]
    found += [m.strip() for m in _LATEX_SPAN.findall(question)]
    return [text for text in found if text]


class MathEnv(TextEnv):
    """A math problem per episode, from reasoning-gym generators or a JSONL file.

    Args:
        tasks: reasoning-gym task names; each reset picks one with the seed.
        task_config: settings of a task's reasoning-gym configuration, by task name (its
            difficulty), e.g. ``{"chain_sum": {"max_terms": 2, "max_digits": 2}}``.
        dataset: a GSM8K/MATH-style JSONL file, used instead of ``tasks``.
        problems: explicit problems, overriding both.
        max_tool_calls: Python runs allowed before answering (0 = single turn, no tool).
        timeout_s: deadline of one Python run.
        memory_mb: memory limit of the Python session.
        backend: sandbox backend (``None``: bwrap on Linux).
        format_penalty: reward of a reply with neither an answer nor code.
        render_mode: ``"ansi"`` or ``None``.
        defer_reward: leave checking the answer to reward workers: the answer's step earns 0
            and ``info["reward_request"]`` names :func:`~environments.math.verify.is_correct`
            and its arguments (math-verify, run there with a deadline that holds off the main
            thread).

    ``reset(options={"problem": MathProblem(...)})`` plays a given problem.
    """

    free_form = True
    oracle = "environments.math.oracle:MathOracle"

    def __init__(
        self,
        tasks: Sequence[str] = DEFAULT_TASKS,
        *,
        task_config: Mapping[str, Mapping[str, Any]] | None = None,
        dataset: str | None = None,
        problems: Sequence[MathProblem] | None = None,
        max_tool_calls: int = 0,
        timeout_s: float = 5.0,
        memory_mb: int = 512,
        backend: Any = None,
        format_penalty: float = -0.1,
        answer_format: AnswerFormat | dict[str, Any] | None = None,
        render_mode: str | None = None,
        defer_reward: bool = False,
    ) -> None:
        super().__init__(
            answer_format=answer_format or AnswerFormat(separator=None, strict=False),
            format_penalty=format_penalty,
            max_actions=max_tool_calls + 1,
            render_mode=render_mode,
        )
        if not tasks and dataset is None and problems is None:
            raise ValueError("give reasoning-gym tasks, a dataset file or problems")
        self.tasks = tuple(tasks)
        self.task_config = {task: dict(config) for task, config in (task_config or {}).items()}
        unknown = sorted(set(self.task_config) - set(self.tasks))
        if unknown:
            raise ValueError(
                f"task_config names {unknown}, which are not among tasks {list(self.tasks)}"
            )
        for task, config in self.task_config.items():
            check_task_config(task, config)
        self.dataset = dataset
        self._problems = tuple(problems) if problems is not None else None
        self.max_tool_calls = max_tool_calls
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.backend = backend
        self.problem: MathProblem | None = None
        self.tool_output = ""
        self.correct = False
        self.defer_reward = defer_reward
        self._session = None

    # ------------------------------------------------------------------ TextEnv
    @property
    def instruction(self) -> str:
        tool = (
            f" Before answering you may run Python code written inside <python></python>, up "
            f"to {self.max_tool_calls} times; you see its output, and variables persist "
            "between runs (print what you need)."
            if self.max_tool_calls
            else ""
        )
        return (
            "Solve the math problem. Give only the final answer, inside <answer></answer> "
            f"(or \\boxed{{}}), optionally after reasoning inside <think></think>.{tool} "
            "Example: <answer>\\frac{3}{4}</answer>"
        )

    @property
    def action_words(self) -> tuple[str, ...]:
        return ("0", "1", "42")

    def action_tools(self) -> tuple[ActionTool, ...]:
        answer = text_tool("answer", "Gives the final answer (a number or a LaTeX expression).",
                           "value")  # fmt: skip
        if not self.max_tool_calls:
            return (answer,)

        def python_code(reply: str) -> dict[str, Any] | None:
            code = tag_contents(reply, "python")
            if extract_answer(reply) is None and code and code[-1].strip():
                return {"code": code[-1]}
            return None

        python = ActionTool(
            "python",
            "Runs Python code in a session whose variables persist; you see what it prints.",
            {
                "type": "object",
                "properties": {"code": {"type": "string", "minLength": 1}},
                "required": ["code"],
                "additionalProperties": False,
            },
            to_answer=lambda arguments: f"<python>{arguments['code']}</python>",
            from_answer=python_code,
            whole_reply=True,
        )
        return (python, answer)

    def _new_episode(self, rng: random.Random, options: dict[str, Any] | None) -> None:
        self.close_session()
        if options and "problem" in options:
            self.problem = options["problem"]
        elif self._problems is not None or self.dataset is not None:
            if self._problems is None:
                self._problems = load_jsonl(self.dataset)
            self.problem = self._problems[rng.randrange(len(self._problems))]
        else:
            task = rng.choice(self.tasks)
            self.problem = generate(task, rng.getrandbits(31), self.task_config.get(task))
        self.tool_output = ""
        self.correct = False

    def _observation(self) -> str:
        text = self.problem.question
        if self.tool_output:
            text += f"\n\n# Output of your code:\n{self.tool_output}"
        return clean_text(text)

    def _parse_action(self, text: str) -> Any:
        return text

    def _parse_reply(self, reply: Any) -> list[tuple[str, str]] | None:
        if not isinstance(reply, str):
            return None
        answer = extract_answer(reply)
        if answer is not None:
            return [("answer", answer)]
        if self.max_tool_calls:
            code = tag_contents(reply, "python")
            if code and code[-1].strip() and self.actions_taken < self.max_tool_calls:
                return [("python", code[-1])]
        return None

    def _apply(self, action: tuple[str, str]) -> tuple[float, bool]:
        kind, text = action
        if kind == "answer" and self.defer_reward:
            self._answered = True
            data = {"reference": self.problem.answer, "question": self.problem.question}
            rule = "environments.math.verify:is_correct"
            self.defer_scoring({"kind": "rule", "rule": rule, "response": text, "data": data})
            return 0.0, True
        if kind == "answer":
            self.correct = is_correct(text, self.problem.answer, self.problem.question)
            self._answered = True
            return (1.0 if self.correct else 0.0), True
        result = self.session().run(text, timeout_s=self.timeout_s)
        output = result.stdout + result.stderr
        if result.timed_out:
            output += f"\n(timed out after {self.timeout_s:g} s; the session was restarted)"
        self.tool_output = output[-TOOL_OUTPUT_CHARS:] or "(no output)"
        return 0.0, True

    def _solved(self) -> bool:
        return self.correct

    def _failed(self) -> bool:
        return getattr(self, "_answered", False) and not self.correct

    def _reset_info(self) -> dict[str, Any]:
        self._answered = False
        return {"source": self.problem.source}

    def task_ignoring_replies(self) -> dict[str, str]:
        """The question's own mathematics handed back: what math-verify alone would evaluate."""
        question = self.problem.question
        wrap = self.answer_format.wrap
        replies = {"question in \\boxed{}": f"\\boxed{{{question}}}"}
        expressions = question_expressions(question)
        if expressions:
            longest = max(expressions, key=len)
            replies["expression restated"] = wrap(longest)
            replies["expression restated, boxed"] = f"\\boxed{{{longest}}}"
        numbers = _NUMBERS.findall(question)
        if len(numbers) > 1:
            replies["every number in the question"] = wrap(", ".join(numbers))
        return replies

    # ------------------------------------------------------------------ the tool
    def session(self):
        """The sandboxed Python session of this episode (started on first use)."""
        if self._session is None:
            Session = import_hub_package("sandboxes").Session  # noqa: N806 - the class

            self._session = Session(
                self.backend, timeout_s=self.timeout_s, memory_mb=self.memory_mb
            )
        return self._session

    def close_session(self) -> None:
        """Ends the episode's Python session, if any."""
        if self._session is not None:
            self._session.close()
            self._session = None

    def close(self) -> None:
        self.close_session()
        super().close()
