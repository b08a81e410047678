"""TextToSQL envs: rewards, read-only execution, the interactive actions, bad settings."""

from __future__ import annotations

import random
import time

import pytest

import rollenv
from environments.text_to_sql.database import MAX_ROWS, Database
from environments.text_to_sql.env import InteractiveTextToSQLEnv, TextToSQLEnv
from environments.text_to_sql.schema import DOMAINS
from rollenv.policies import RandomPolicy, oracle_for, run_episode


def _answer(env, sql: str):
    return env.step(f"<answer>{sql}</answer>")


def _seed_where(env, predicate, limit: int = 400) -> int:
    for seed in range(limit):
        env.reset(seed=seed)
        if predicate(env.task):
            return seed
    raise AssertionError("no such seed")


def test_the_gold_query_earns_one_and_a_wrong_one_nothing():
    env = TextToSQLEnv()
    env.reset(seed=1)
    _, reward, terminated, truncated, info = _answer(env, env.task.question.sql)
    assert (reward, terminated, truncated, info["metrics"]["success"]) == (1.0, True, False, True)
    env.reset(seed=1)
    table = env.task.database.domain.tables[0].name
    obs, reward, terminated, _, info = _answer(env, f"SELECT * FROM {table}")
    assert (reward, terminated, info["metrics"]["success"]) == (0.0, True, False)
    assert info["metrics"]["action_is_valid"] and "That is wrong." in obs


def test_a_failing_query_is_a_valid_answer_that_earns_nothing():
    env = TextToSQLEnv()
    env.reset(seed=2)
    obs, reward, terminated, _, info = _answer(env, "SELEC name FROM nowhere")
    assert (reward, terminated, info["metrics"]["action_is_valid"]) == (0.0, True, True)
    assert 'Error: near "SELEC": syntax error' in obs


def test_column_names_and_column_order_do_not_matter():
    env = TextToSQLEnv(difficulty="hard")
    seed = _seed_where(env, lambda t: t.question.template == "group_count")
    column, table = env.task.question.sql.removeprefix("SELECT ").split(", COUNT(*) FROM ")
    table = table.split(" GROUP BY")[0]
    env.reset(seed=seed)
    sql = f"SELECT COUNT(*) AS n, {column} AS what FROM {table} GROUP BY 2 ORDER BY 1"
    _, reward, *_ = _answer(env, sql)
    assert reward == 1.0


def _literal_query(rows) -> str:
    """A query that returns exactly ``rows``, in that order (SQLite keeps VALUES' order)."""
    values = ", ".join("(" + ", ".join(map(repr, row)) + ")" for row in rows)
    return f"SELECT * FROM (VALUES {values})"


def test_row_order_matters_only_when_the_question_asks_for_one():
    env = TextToSQLEnv()
    for template, ordered in [("top_k", True), ("category_filter", False)]:
        seed = _seed_where(
            env, lambda t, name=template: t.question.template == name and len(t.gold.rows) > 1
        )
        rows = env.task.gold.rows
        assert env.task.question.ordered is ordered
        assert _answer(env, _literal_query(rows))[1] == 1.0
        env.reset(seed=seed)
        assert _answer(env, _literal_query(rows[::-1]))[1] == (0.0 if ordered else 1.0)


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM orders",
        "INSERT INTO customers (name) VALUES ('x')",
        "UPDATE products SET price = 0",
        "DROP TABLE orders",
        "CREATE TABLE t (x)",
        "ATTACH DATABASE ':memory:' AS other",
        "PRAGMA query_only = OFF",
        "PRAGMA table_info(orders)",
        "SELECT 1; DELETE FROM orders",
        "VACUUM",
    ],
)
def test_queries_cannot_write_attach_or_change_settings(sql):
    db = Database.generate(DOMAINS["shop"], random.Random(0))
    before = {t.name: db.run(f"SELECT * FROM {t.name}").rows for t in db.domain.tables}
    assert db.run(sql).error is not None
    assert db.run("DELETE FROM orders").error is not None, "query_only was switched off"
    after = {t.name: db.run(f"SELECT * FROM {t.name}").rows for t in db.domain.tables}
    assert after == before


def test_runaway_and_oversized_queries_stop_with_an_error():
    db = Database.generate(DOMAINS["school"], random.Random(0))
    start = time.perf_counter()
    forever = db.run(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n"
    )
    assert forever.error.startswith("interrupted")
    assert time.perf_counter() - start < 5
    assert "too big" in db.run("SELECT length(randomblob(100000000))").error
    counting = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)"
    many = db.run(f"{counting} SELECT i FROM n LIMIT {MAX_ROWS + 1}")
    assert many.error == f"the query returned more than {MAX_ROWS} rows"
    assert db.run("SELECT 1").rows == [(1,)], "the connection still works"


def test_interactive_queries_show_rows_then_the_answer_ends_the_episode():
    env = InteractiveTextToSQLEnv()
    obs, _ = env.reset(seed=3)
    assert obs.endswith("Actions left: 6")
    table = env.task.database.domain.tables[0].name
    count = len(env.task.database.rows[table])
    obs, reward, terminated, truncated, info = env.step(
        f"<answer>sql[SELECT COUNT(*) AS n FROM {table}]</answer>"
    )
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert f"Result:\nn\n{count}\n(1 row)" in obs and obs.endswith("Actions left: 5")
    obs, reward, terminated, _, info = env.step(f"<answer>answer[{env.task.question.sql}]</answer>")
    assert (reward, terminated, info["metrics"]["success"]) == (1.0, True, True)
    assert "That is the right answer." in obs


def test_interactive_episode_is_truncated_when_actions_run_out():
    env = InteractiveTextToSQLEnv(max_actions=2)
    env.reset(seed=0)
    assert env.step("<answer>sql[SELECT 1]</answer>")[2:4] == (False, False)
    _, reward, terminated, truncated, _ = env.step("<answer>sql[SELECT 2]</answer>")
    assert (reward, terminated, truncated) == (0.0, False, True)


@pytest.mark.parametrize(
    "reply",
    ["<answer>SELECT 1</answer>", "<answer>sql[]</answer>", "<answer>query[SELECT 1]</answer>"],
)
def test_interactive_replies_without_the_action_syntax_are_penalised_no_ops(reply):
    env = InteractiveTextToSQLEnv()
    obs_before, _ = env.reset(seed=0)
    obs, reward, terminated, _, info = env.step(reply)
    assert (obs, reward, terminated) == (obs_before, -0.1, False)
    assert info["metrics"]["action_is_valid"] is False


def test_single_turn_replies_without_an_answer_are_penalised_no_ops():
    env = TextToSQLEnv()
    obs_before, _ = env.reset(seed=0)
    for reply in ["SELECT 1", "<answer>  </answer>", ""]:
        obs, reward, terminated, _, info = env.step(reply)
        assert (obs, reward, terminated) == (obs_before, -0.1, False)


def test_bad_settings_name_the_field_and_allowed_values():
    with pytest.raises(
        ValueError, match=r"difficulty='medium' is not one of \['easy', 'hard', 'mixed'\]"
    ):
        TextToSQLEnv(difficulty="medium")
    with pytest.raises(ValueError, match="did you mean 'school'"):
        TextToSQLEnv(domains=["schol"])
    with pytest.raises(ValueError, match="max_actions must be >= 2"):
        InteractiveTextToSQLEnv(max_actions=1)


def test_domains_restrict_the_databases():
    env = TextToSQLEnv(domains=["library"])
    for seed in range(10):
        env.reset(seed=seed)
        assert env.task.database.domain.name == "library"


@pytest.mark.parametrize("env_id", ["TextToSQL-v0", "TextToSQLHard-v0", "TextToSQLInteractive-v0"])
def test_oracle_always_and_random_policy_never_succeeds(env_id):
    env = rollenv.make(env_id)
    oracle = oracle_for(env)
    assert all(run_episode(env, oracle, seed=seed).success for seed in range(200))
    random_wins = [run_episode(env, RandomPolicy(env, seed=s), seed=s).success for s in range(200)]
    assert not any(random_wins)


@pytest.mark.parametrize("env_id", ["TextToSQL-v0", "TextToSQLHard-v0", "TextToSQLInteractive-v0"])
def test_no_task_ignoring_reply_earns_reward(env_id):
    report = rollenv.check_reward(rollenv.make(env_id), seeds=range(40))
    assert report.oracle.success_rate == 1.0


def test_reset_and_step_are_fast():
    env = rollenv.make("TextToSQLHard-v0")
    start = time.perf_counter()
    for seed in range(100):
        env.reset(seed=seed)
        _answer(env, env.unwrapped.task.question.sql)
    assert (time.perf_counter() - start) / 100 < 0.05
