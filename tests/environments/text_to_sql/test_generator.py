"""Generated databases and questions: fair, unambiguous, and of the difficulty asked for."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from environments.text_to_sql.database import Database
from environments.text_to_sql.generator import generate_task, trivial_results
from environments.text_to_sql.questions import EASY_TEMPLATES, HARD_TEMPLATES
from environments.text_to_sql.results import same_result
from environments.text_to_sql.schema import DOMAINS


@pytest.mark.parametrize("difficulty", ["easy", "hard"])
def test_every_gold_answer_is_non_empty_and_no_trivial_query_gives_it(difficulty):
    for seed in range(150):
        task = generate_task(random.Random(seed), difficulty)
        gold = task.gold.rows
        assert gold and gold[0] != (None,)
        for sql, rows in trivial_results(task.database).items():
            assert not same_result(gold, rows, ordered=False), (seed, sql)


def test_ordered_questions_have_no_ties_in_their_sort_keys():
    checked = 0
    for seed in range(300):
        task = generate_task(random.Random(seed), "mixed")
        question = task.question
        if not question.ordered:
            continue
        keys = [row[0] for row in task.database.run(question.order_keys_sql).rows]
        if question.distinct_keys:
            keys = keys[: question.distinct_keys]
        assert len(keys) == len(set(keys)), (seed, question.text)
        checked += 1
    assert checked > 20


def test_easy_questions_use_one_table_and_hard_ones_join_or_group():
    for seed in range(100):
        easy = generate_task(random.Random(seed), "easy").question.sql
        assert "JOIN" not in easy and "GROUP BY" not in easy
        hard = generate_task(random.Random(seed), "hard").question.sql
        assert "JOIN" in hard or "GROUP BY" in hard


def test_every_template_and_domain_is_drawn():
    templates, domains = Counter(), Counter()
    for seed in range(600):
        task = generate_task(random.Random(seed), "mixed")
        templates[task.question.template] += 1
        domains[task.database.domain.name] += 1
    assert set(templates) == {t.__name__ for t in EASY_TEMPLATES + HARD_TEMPLATES}
    assert set(domains) == set(DOMAINS)


def test_labels_are_unique_and_references_point_at_rows():
    for seed in range(30):
        for domain in DOMAINS.values():
            db = Database.generate(domain, random.Random(seed))
            for table in domain.tables:
                if table.label:
                    rows = db.run(f"SELECT {table.label.name} FROM {table.name}").rows
                    assert len(rows) == len(set(rows))
                for ref in table.of_kind("ref"):
                    dangling = db.run(
                        f"SELECT COUNT(*) FROM {table.name} WHERE {ref.name} NOT IN "
                        f"(SELECT id FROM {ref.ref})"
                    ).rows
                    assert dangling == [(0,)]


def test_same_seed_same_task():
    first, second = generate_task(random.Random(5), "hard"), generate_task(random.Random(5), "hard")
    assert first.question == second.question
    assert first.database.rows == second.database.rows
