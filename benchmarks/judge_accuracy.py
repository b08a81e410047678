"""How often the LLM judge agrees with the rule verifier (math-verify) on math answers.

Generated arithmetic questions on fractions, each with a reference answer and three candidate
answers: the reference itself, the same value in another form (``0.5`` for ``1/2``,
``\\frac{3}{4}``, ``7.0``), and a wrong value. The rule verifier (``environments.math.verify``:
math-verify behind a check of the answer's form) labels each; the judge (``trainer.rewards``'
reference-match prompt, greedy) answers yes or no, or is left unscored when its reply does not
parse. Reported: the judge's agreement with the rule on the answers it scored, how many it left
unscored, and the answers the rule rejects but the judge accepts, listed to be read.

Run (from the repository root)::

    python benchmarks/judge_accuracy.py --quick   # 30 answers, a minute
    python benchmarks/judge_accuracy.py           # 300 answers with the default model

Only the default model runs here as a judge (a second served model would need another GGUF
or hub download); ``--judge openai:http://HOST:PORT/v1#NAME`` scores with any
OpenAI-compatible server instead.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from fractions import Fraction
from typing import Any

from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table


def _forms(value: Fraction) -> list[str]:
    """Ways to write ``value`` that a rule verifier should accept."""
    if value.denominator == 1:
        n = value.numerator
        return [str(n), f"{n}.0"]
    p, q = value.numerator, value.denominator
    forms = [f"{p}/{q}", f"\\frac{{{p}}}{{{q}}}", f"\\dfrac{{{p}}}{{{q}}}"]
    decimal = float(value)
    if (q & (q - 1) == 0) or q in (5, 10, 20, 25, 40, 50):  # terminating decimals
        forms.append(f"{decimal:g}")
    return forms


def answer_set(seed: int) -> list[dict[str, Any]]:
    """One question and its three candidate answers."""
    rng = random.Random(seed)
    a, b = (
        Fraction(rng.randint(1, 9), rng.choice((2, 3, 4, 5, 8))),
        Fraction(rng.randint(1, 9), rng.choice((2, 4, 5, 6, 10))),
    )
    op = rng.choice("+-*")
    value = {"+": a + b, "-": a - b, "*": a * b}[op]
    question = f"What is {a} {op} {b}? Give the answer in lowest terms or as a decimal."
    reference = str(value)
    forms = _forms(value)
    other = rng.choice([f for f in forms if f != reference] or forms)
    wrong = value + Fraction(rng.choice((1, -1)), rng.choice((1, 2, 3, 4)))
    wrong_text = rng.choice(_forms(wrong))
    return [
        {"question": question, "reference": reference, "answer": reference, "kind": "same form"},
        {"question": question, "reference": reference, "answer": other, "kind": "other form"},
        {"question": question, "reference": reference, "answer": wrong_text, "kind": "wrong"},
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=300, help="answers judged (300)")
    parser.add_argument("--judge", default="smollm2-135m", help="a model or openai:URL#NAME")
    parser.add_argument("--batch-size", type=int, default=32, help="judge requests a call (32)")
    add_common_arguments(
        parser, default_json=RESULTS_DIR / "judge_accuracy.json", quick="30 answers"
    )
    args = parse_arguments(parser, argv, quick_defaults={"answers": 30})

    from environments.math.verify import is_correct
    from trainer.rewards.judge import JudgeRequest, make_judge

    items: list[dict[str, Any]] = []
    seed = 0
    while len(items) < args.answers:
        items += answer_set(seed)
        seed += 1
    items = items[: args.answers]
    for item in items:
        item["rule"] = is_correct(item["answer"], item["reference"], item["question"])

    judge = make_judge(args.judge, batch_size=args.batch_size)
    requests = [JudgeRequest(i["question"], i["answer"], reference=i["reference"]) for i in items]
    started = time.perf_counter()
    verdicts = judge.score(requests)
    seconds = time.perf_counter() - started
    for item, verdict in zip(items, verdicts, strict=True):
        item["judge"] = None if verdict.score is None else verdict.score == 1.0
        item["judge_text"] = verdict.judge_text

    scored = [i for i in items if i["judge"] is not None]
    agree = sum(i["judge"] == i["rule"] for i in scored)
    cells = {
        (rule, judged): sum(1 for i in items if i["rule"] is rule and i["judge"] is judged)
        for rule in (True, False)
        for judged in (True, False, None)
    }
    rows = [
        [
            "rule accepts" if rule else "rule rejects",
            *(str(cells[(rule, judged)]) for judged in (True, False, None)),
        ]
        for rule in (True, False)
    ]
    print_table(
        ["", "judge: yes", "judge: no", "unscored"],
        rows,
        f"Judge {args.judge} against the rule verifier, {len(items)} math answers",
    )
    by_kind = {}
    for kind in ("same form", "other form", "wrong"):
        group = [i for i in items if i["kind"] == kind]
        group_scored = [i for i in group if i["judge"] is not None]
        by_kind[kind] = {
            "answers": len(group),
            "rule_accepts": sum(i["rule"] for i in group),
            "judge_scored": len(group_scored),
            "judge_accepts": sum(bool(i["judge"]) for i in group_scored),
        }
    print_table(
        ["answers", "count", "rule accepts", "judge scored", "judge accepts"],
        [[k, *(str(v) for v in d.values())] for k, d in by_kind.items()],
        "By kind of answer",
    )
    judge_only = [i for i in items if i["rule"] is False and i["judge"] is True]
    print(
        f"agreement on the {len(scored)} scored answers: {agree}/{len(scored)} "
        f"({agree / len(scored):.1%})"
        if scored
        else "the judge scored no answer",
    )
    print(f"unscored (the verdict did not parse): {len(items) - len(scored)}/{len(items)}")
    print(f"rule rejects, judge accepts: {len(judge_only)}; the first 10:")
    for i in judge_only[:10]:
        print(f"  {i['question']} reference {i['reference']!r}, answer {i['answer']!r}")
    print(f"{seconds:.1f} s for {len(items)} verdicts ({judge.stats.calls} judge calls)")
    write_report(
        args.json,
        {
            "judge": args.judge,
            "answers": len(items),
            "scored": len(scored),
            "agreement": agree / len(scored) if scored else None,
            "cells": {f"rule={r} judge={j}": n for (r, j), n in cells.items()},
            "by_kind": by_kind,
            "rule_rejects_judge_accepts": judge_only,
            "seconds": seconds,
            "examples": items[:12],
        },
        libraries=["torch", "transformers", "math_verify"],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
