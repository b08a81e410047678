"""``TextToSQLEnv``: answer a question about a generated SQLite database with one SQL query.

Each reset draws a database (a shop, a school or a library, with random rows) and a question
with its gold query. The reply is a query; it runs read-only (see ``database.Database.run``) and
earns 1 when its rows equal the gold query's (column names and column order never matter; row
order matters only when the question asks for one), else 0. A query that fails to run is still
an answer: it earns 0 and ends the episode. ``InteractiveTextToSQLEnv`` first lets the agent
explore with ``sql[...]`` queries whose rows or error it sees, then ``answer[...]``.

Example:
    >>> env = TextToSQLEnv(difficulty="easy")
    >>> obs, info = env.reset(seed=0)
    >>> obs.startswith("Database (SQLite):")
    True
    >>> _, reward, terminated, _, info = env.step(f"<answer>{env.task.question.sql}</answer>")
    >>> reward, terminated, info["metrics"]["success"]
    (1.0, True, True)
"""

from __future__ import annotations

import difflib
import random
import re
from collections.abc import Sequence
from typing import Any, ClassVar

from environments.text_to_sql.database import QueryResult
from environments.text_to_sql.generator import Task, generate_task, trivial_queries
from environments.text_to_sql.questions import TEMPLATES
from environments.text_to_sql.results import same_result
from environments.text_to_sql.schema import DOMAINS
from rollenv.action_tools import ActionTool, templated_tool
from rollenv.actions import AnswerFormat
from rollenv.text_env import TextEnv, in_text_space, shortened

SHOWN_ROWS = 20
SHOWN_CELL_CHARS = 60
SHOWN_QUERY_CHARS = 2000
_INTERACTIVE_ACTION = re.compile(r"(sql|answer)\[(.*)\]", re.IGNORECASE | re.DOTALL)


def format_result(result: QueryResult, max_rows: int = SHOWN_ROWS) -> str:
    """A query's rows as text (``|`` between columns), its first ``max_rows`` only, or its error.

    Example:
        >>> print(format_result(QueryResult(("name", "n"), [("Ana", 2), (None, 1.5)])))
        name | n
        Ana | 2
        NULL | 1.5
        (2 rows)
        >>> format_result(QueryResult(error="no such table: pets"))
        'Error: no such table: pets'
    """
    if result.error is not None:
        return f"Error: {result.error}"
    rows = result.rows or []
    lines = [" | ".join(result.columns)]
    for row in rows[:max_rows]:
        lines.append(" | ".join(_cell(value) for value in row))
    if len(rows) > max_rows:
        lines.append(f"... ({len(rows) - max_rows} more rows not shown)")
    lines.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    text = "NULL" if value is None else value.hex() if isinstance(value, bytes) else str(value)
    text = text.replace("\n", " ")
    return text if len(text) <= SHOWN_CELL_CHARS else text[: SHOWN_CELL_CHARS - 3] + "..."


class TextToSQLEnv(TextEnv):
    """One question about a generated database; the reply is one SQL query.

    Args:
        difficulty: which question templates: ``easy`` (one table: filters, counts,
            aggregates, order by and limit), ``hard`` (joins, group by, having) or ``mixed``.
        domains: the databases to draw from: any of ``shop``, ``school``, ``library``.
        example_rows: rows of each table shown under its ``CREATE TABLE``.
        format_penalty: reward of a reply with no answer.
        answer_format: overrides how the query is read from a reply (default: inside
            ``<answer></answer>``, never split, since ``||`` is SQL's concatenation).
        render_mode: ``"ansi"`` or ``None``.
    """

    oracle = "environments.text_to_sql.oracle:TextToSQLOracle"
    #: any non-empty answer is a query, and so an action
    free_form: ClassVar[bool] = True
    tool_name = "answer"
    tool_argument = "query"
    tool_description = "Answers with one SQLite query; its result is compared with the right one."

    def __init__(
        self,
        difficulty: str = "easy",
        *,
        domains: Sequence[str] = tuple(DOMAINS),
        example_rows: int = 2,
        format_penalty: float = -0.1,
        answer_format: AnswerFormat | dict[str, Any] | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            answer_format=answer_format or AnswerFormat(separator=None),
            format_penalty=format_penalty,
            max_actions=1,
            render_mode=render_mode,
        )
        if difficulty not in TEMPLATES:
            raise ValueError(f"difficulty={difficulty!r} is not one of {sorted(TEMPLATES)}")
        domains = tuple(domains)
        unknown = [d for d in domains if d not in DOMAINS]
        if unknown or not domains:
            hints = {d: difflib.get_close_matches(d, DOMAINS, n=1) for d in unknown}
            close = "; ".join(f"{d!r}: did you mean {h[0]!r}?" for d, h in hints.items() if h)
            raise ValueError(
                f"domains must be a non-empty subset of {sorted(DOMAINS)}, got {list(domains)}"
                + (f" ({close})" if close else "")
            )
        if example_rows < 0:
            raise ValueError(f"example_rows must be >= 0, got {example_rows}")
        self.difficulty = difficulty
        self.domains = domains
        self.example_rows = example_rows
        self.task: Task | None = None
        self.answered = False
        self.correct = False
        self.last_query: str | None = None
        self.last_result: QueryResult | None = None

    # ------------------------------------------------------------------ TextEnv
    @property
    def instruction(self) -> str:
        wrap = self.answer_format.wrap
        return (
            "You answer questions about a SQLite database by writing SQL. You see the tables "
            "(CREATE TABLE statements with example rows) and a question. "
            f"{self._how_to_act()} "
            "Your query runs read-only (one SELECT statement; WITH is allowed). It is correct "
            "when its rows hold the same values as the right answer: column names and the "
            "order of the columns do not matter, the order of the rows matters only when the "
            "question asks for an order. Return exactly the columns the question asks for, "
            "no more, and do not round numbers. A correct answer earns 1; a wrong one, or a "
            "query that fails to run, earns 0 and ends the episode. "
            f"{self.answer_format.describe()} "
            f"Example: {wrap(self._example_action())}"
        )

    def _how_to_act(self) -> str:
        return "Reply with one SQL query that answers the question; it is your final answer."

    def _example_action(self) -> str:
        return "SELECT name FROM pets WHERE age > 3"

    @property
    def action_words(self) -> tuple[str, ...]:
        return ("SELECT 1", *self._table_queries())

    def _table_queries(self) -> list[str]:
        if self.task is None:
            return []
        return [f"SELECT * FROM {t.name}" for t in self.task.database.domain.tables]

    def _new_episode(self, rng: random.Random, options: dict[str, Any] | None) -> None:
        if self.task is not None:
            self.task.database.close()
        self.task = generate_task(rng, self.difficulty, self.domains)
        self.answered = self.correct = False
        self.last_query = self.last_result = None

    def _reset_info(self) -> dict[str, Any]:
        question = self.task.question
        return {"template": question.template, "domain": self.task.database.domain.name}

    def _observation(self) -> str:
        task = self.task
        text = (
            f"Database (SQLite):\n{task.database.schema_text(self.example_rows)}\n\n"
            f"Question: {task.question.text}"
        )
        if self.last_query is not None:
            verdict = ""
            if self.answered:
                verdict = "\nThat is the right answer." if self.correct else "\nThat is wrong."
            query = shortened(self.last_query, SHOWN_QUERY_CHARS)
            text += (
                f"\n\n{self._last_query_heading()}:\n{query}\n"
                f"Result:\n{format_result(self.last_result)}{verdict}"
            )
        return in_text_space(text + self._budget_line())

    def _last_query_heading(self) -> str:
        return "Your answer"

    def _budget_line(self) -> str:
        return ""

    def _parse_action(self, text: str) -> tuple[str, str] | None:
        return ("answer", text)

    def _apply(self, action: tuple[str, str]) -> tuple[float, bool]:
        kind, sql = action
        self.last_query = sql
        self.last_result = result = self.task.database.run(sql)
        if kind == "sql":
            return 0.0, True
        self.answered = True
        self.correct = result.ok and same_result(
            self.task.gold.rows, result.rows, ordered=self.task.question.ordered
        )
        return (1.0 if self.correct else 0.0), True

    def _solved(self) -> bool:
        return self.correct

    def _failed(self) -> bool:
        return self.answered and not self.correct

    def task_ignoring_replies(self) -> dict[str, str]:
        """Queries that ignore the question (whole tables, row counts...), and the question."""
        replies = {"question copied as the query": self.task.question.text}
        for sql in trivial_queries(self.task.database):
            replies[sql] = sql
        return {name: self.answer_format.wrap(self.answer_of(sql)) for name, sql in replies.items()}

    def answer_of(self, sql: str) -> str:
        """The action that submits ``sql`` as the final answer."""
        return sql

    def close(self) -> None:
        if self.task is not None:
            self.task.database.close()
            self.task = None
        super().close()


class InteractiveTextToSQLEnv(TextToSQLEnv):
    """The same questions; first explore with ``sql[...]``, then ``answer[...]``.

    Args:
        max_actions: queries in all, the answer included; the episode is truncated after them.
        **kwargs: as ``TextToSQLEnv``.
    """

    free_form: ClassVar[bool] = False

    def __init__(self, difficulty: str = "mixed", *, max_actions: int = 6, **kwargs: Any) -> None:
        if max_actions < 2:
            raise ValueError(f"max_actions must be >= 2 (a query, the answer), got {max_actions}")
        super().__init__(difficulty, **kwargs)
        self.max_actions = max_actions

    def _how_to_act(self) -> str:
        return (
            f"You have {self.max_actions} actions. sql[QUERY] runs an exploratory query and "
            f"shows you its first {SHOWN_ROWS} rows or its error (no reward). answer[QUERY] "
            "submits QUERY as your final answer and ends the episode. If your actions run out "
            "before you answer, the episode ends with 0."
        )

    def _example_action(self) -> str:
        return "sql[SELECT DISTINCT age FROM pets]"

    @property
    def action_words(self) -> tuple[str, ...]:
        explore = [f"sql[{sql} LIMIT 5]" for sql in self._table_queries()]
        return (*explore, "answer[SELECT 1]") if explore else ("sql[SELECT 1]", "answer[SELECT 1]")

    def action_tools(self) -> tuple[ActionTool, ...]:
        query = {"query": {"type": "string", "minLength": 1}}
        return (
            templated_tool("run_sql", "Runs a query and shows its result (no reward).",
                           "sql[{query}]", query),
            templated_tool("answer", "Answers with the final query; the episode ends.",
                           "answer[{query}]", query),
        )  # fmt: skip

    def _parse_action(self, text: str) -> tuple[str, str] | None:
        match = _INTERACTIVE_ACTION.fullmatch(text)
        if match is None or not match.group(2).strip():
            return None
        return match.group(1).lower(), match.group(2).strip()

    def _last_query_heading(self) -> str:
        return "Your answer" if self.answered else "Your last query"

    def _budget_line(self) -> str:
        return f"\n\nActions left: {self.max_actions - self.actions_taken}"

    def answer_of(self, sql: str) -> str:
        return f"answer[{sql}]"
