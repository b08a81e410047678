"""``RewardPool``: reward workers as Ray actors, scoring while the caller goes on generating.

ROLL's reward workers run beside the rollouts on their own resources; a finished group's
episodes go in and numbers come out. Here a request is plain data (:class:`ScoreRequest`: a
rule verifier's name and arguments, or a judge request); :meth:`RewardPool.submit` returns a
``concurrent.futures.Future`` at once, and a dispatcher thread hands batches to the workers:

* each request goes to a worker of its kind, as ROLL routes each domain to its reward worker:
  rule verifiers to rule workers (CPU); code run against tests to sandbox workers (started on
  the first such request, ``sandbox_workers`` of them, with a longer deadline); judge requests
  to judge workers, which hold the judge model (``judge_workers`` of them, with their own
  resources, a GPU where there is one); a judge that hangs never holds up the verifiers;
* each worker has one batch at a time; the pool starts ``min_workers`` rule workers and adds
  one (up to ``max_workers``) when more than ``grow_after`` batches wait for each;
* a worker that dies mid-batch (a node lost, ``ray.kill``) is replaced and its batch is given
  to a worker again: results are keyed by request id, so none is lost or counted twice;
* a request whose scorer fails or passes its deadline comes back *unscored* (``score=None``),
  for the caller to leave out of the update and count.

Workers take Ray resources like every other part (``num_cpus``, ``num_gpus``, custom
``resources``), on any node of the cluster.

Example:
    >>> import ray
    >>> _ = ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    >>> pool = RewardPool(min_workers=1, max_workers=2)
    >>> request = ScoreRequest.rule(0, "environments.math.verify:is_correct", "0.5",
    ...                             reference="1/2")
    >>> pool.score([request])
    [ScoreResult(id=0, score=1.0, reason='scored')]
    >>> pool.close(); ray.shutdown()
"""

from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

__all__ = ["KINDS", "RewardPool", "ScoreRequest", "ScoreResult"]

#: the kinds of reward worker, and of request
KINDS = ("rule", "sandbox", "judge")


@dataclass(frozen=True)
class ScoreRequest:
    """One thing to score.

    Attributes:
        id: unique among the requests in flight (results carry it back).
        kind: ``"rule"``, ``"sandbox"`` or ``"judge"``.
        payload: rule and sandbox: ``{"rule": "module:function", "response": str, "data":
            {...}}``;
            judge: :class:`~trainer.rewards.judge.JudgeRequest`'s fields (``question``,
            ``response``, ``reference`` or ``rubric`` as a list of criteria).
    """

    id: int
    kind: str
    payload: dict[str, Any]

    @classmethod
    def rule(cls, id: int, rule: str, response: str, **data: Any) -> ScoreRequest:
        """A rule verifier's call: ``rule(response, **data)``."""
        return cls(id, "rule", {"rule": rule, "response": response, "data": data})

    @classmethod
    def from_env(cls, id: int, request: dict[str, Any]) -> ScoreRequest:
        """The request an env put in ``info["reward_request"]`` (see
        :mod:`trainer.rollout.deferred_rewards`); ``success_at`` stays with the caller."""
        kind = request.get("kind")
        if kind not in KINDS:
            raise ValueError(f"a reward request's kind is one of {KINDS}, got {kind!r}")
        payload = {k: v for k, v in request.items() if k not in ("kind", "success_at")}
        return cls(id, kind, payload)

    @classmethod
    def judged(
        cls, id: int, question: str, response: str, *, reference: str | None = None,
        rubric: list[dict[str, Any]] | None = None,
    ) -> ScoreRequest:  # fmt: skip
        """A judge's verdict against a reference answer or a rubric."""
        payload = {"question": question, "response": response}
        payload.update({"reference": reference, "rubric": rubric})
        return cls(id, "judge", payload)


@dataclass(frozen=True)
class ScoreResult:
    """A request's score in [0, 1], or ``None`` (unscored) with the reason."""

    id: int
    score: float | None
    reason: str


class RewardWorker:
    """The actor: scores batches of one kind: ``"rule"`` and ``"sandbox"`` (a function run with
    a deadline: a verifier, or code run against tests) with a
    :class:`~trainer.rewards.rule.RuleScorer`, ``"judge"`` with a
    :class:`~trainer.rewards.judge.Judge` (made on the first batch)."""

    def __init__(
        self, kind: str, deadline_s: float, judge: str | None, judge_timeout_s: float
    ) -> None:
        self.kind = kind
        self.rules: Any = None
        if kind in ("rule", "sandbox"):
            from trainer.rewards.rule import RuleScorer

            self.rules = RuleScorer(deadline_s)
        self.judge_spec, self.judge_timeout_s = judge, judge_timeout_s
        self._judge: Any = None

    def pid(self) -> int:
        import os

        return os.getpid()

    def score(self, requests: list[ScoreRequest]) -> list[ScoreResult]:
        wrong = [r for r in requests if r.kind != self.kind]
        results = [ScoreResult(r.id, None, f"sent to a {self.kind} worker") for r in wrong]
        mine = [r for r in requests if r.kind == self.kind]
        if self.kind == "judge" and mine:
            return results + self._score_judged(mine)
        for request in mine:
            p = request.payload
            outcome = self.rules.score(p["rule"], p["response"], p.get("data") or {})
            results.append(ScoreResult(request.id, outcome.score, outcome.reason))
        return results

    def _score_judged(self, requests: list[ScoreRequest]) -> list[ScoreResult]:
        from trainer.rewards.judge import JudgeRequest, Rubric, make_judge

        if self._judge is None:
            self._judge = make_judge(self.judge_spec, timeout_s=self.judge_timeout_s)
        asked = []
        for r in requests:
            p = r.payload
            rubric = Rubric.from_data(p["rubric"]) if p.get("rubric") is not None else None
            asked.append(JudgeRequest(p["question"], p["response"], p.get("reference"), rubric))
        verdicts = self._judge.score(asked)
        return [
            ScoreResult(r.id, v.score, v.reason) for r, v in zip(requests, verdicts, strict=True)
        ]


@dataclass
class _Batch:
    kind: str
    requests: list[ScoreRequest]
    submission: _Submission
    tries: int = 0


@dataclass
class PoolStats:
    """What the pool did: workers started, replaced after dying, batches retried, and the
    requests of each kind."""

    requests_by_kind: dict[str, int] = field(default_factory=dict)
    workers_started: int = 0
    workers_replaced: int = 0
    batches_retried: int = 0
    requests_scored: int = 0
    requests_unscored: int = 0
    peak_workers: int = 0


class RewardPool:
    """A pool of :class:`RewardWorker` actors fed by a dispatcher thread.

    Args:
        min_workers, max_workers: the size range of the rule workers.
        grow_after: add a rule worker when more than this many batches wait per worker.
        batch_size: judge requests per batch handed to a judge worker (rule requests go one at
            a time: a worker scores them one after another, so a batch would serialise them).
        num_cpus, num_gpus, resources: each rule worker's Ray resources.
        rule_deadline_s: the most seconds one rule call may take.
        judge: the judge (a model name or ``openai:URL#NAME``), or ``None`` for none (judge
            requests then come back unscored).
        judge_workers: judge workers (each loads the judge on its first batch).
        judge_num_cpus, judge_num_gpus: each judge worker's Ray resources.
        judge_timeout_s: the most seconds one judge call may take.
        sandbox_workers: sandbox workers, started on the first sandbox request.
        sandbox_num_cpus: each sandbox worker's CPUs.
        sandbox_deadline_s: the most seconds one sandbox request may take.
        max_tries: a batch whose worker died is given out again up to this many times.
    """

    def __init__(
        self,
        *,
        min_workers: int = 1,
        max_workers: int = 4,
        grow_after: int = 2,
        batch_size: int = 8,
        num_cpus: float = 1,
        num_gpus: float = 0,
        resources: dict[str, float] | None = None,
        rule_deadline_s: float = 10.0,
        judge: str | None = None,
        judge_workers: int = 1,
        judge_num_cpus: float = 1,
        judge_num_gpus: float = 0,
        judge_timeout_s: float = 60.0,
        sandbox_workers: int = 1,
        sandbox_num_cpus: float = 0.5,
        sandbox_deadline_s: float = 60.0,
        max_tries: int = 3,
    ) -> None:
        if not 1 <= min_workers <= max_workers:
            raise ValueError(
                f"reward workers need 1 <= min_workers <= max_workers, got {min_workers} and "
                f"{max_workers}"
            )
        counts = {"batch_size": batch_size, "grow_after": grow_after, "max_tries": max_tries,
                  "judge_workers": judge_workers, "sandbox_workers": sandbox_workers}  # fmt: skip
        too_few = [name for name, count in counts.items() if count < 1]
        if too_few:
            raise ValueError(f"{', '.join(too_few)} must be >= 1")
        if judge is not None:
            from trainer.rewards.judge import check_judge_spec

            check_judge_spec(judge)  # a bad or unreachable judge: one line, before any load
        import ray

        self._ray = ray
        groups = [
            ("rule workers", min_workers, num_cpus, num_gpus),
            ("sandbox workers", sandbox_workers, sandbox_num_cpus, 0.0),
        ]
        if judge is not None:
            groups.append(("judge workers", judge_workers, judge_num_cpus, judge_num_gpus))
        _check_fits(ray, groups)
        actor = ray.remote(RewardWorker)
        self._actor_classes = {
            "rule": actor.options(
                num_cpus=num_cpus, num_gpus=num_gpus, resources=resources or {}, max_restarts=0
            ),
            "sandbox": actor.options(num_cpus=sandbox_num_cpus, max_restarts=0),
            "judge": actor.options(
                num_cpus=judge_num_cpus, num_gpus=judge_num_gpus, max_restarts=0
            ),
        }
        self.judge, self.sandbox_workers = judge, sandbox_workers
        self._deadlines = {"rule": rule_deadline_s, "sandbox": sandbox_deadline_s, "judge": 0.0}
        self._judge_args = (judge, judge_timeout_s)
        self.min_workers, self.max_workers, self.grow_after = min_workers, max_workers, grow_after
        self.batch_size, self.max_tries = batch_size, max_tries
        self.stats = PoolStats()
        self._lock = threading.Condition()
        self._queues: dict[str, deque[_Batch]] = {kind: deque() for kind in KINDS}
        self._idle: dict[str, list[Any]] = {kind: [] for kind in KINDS}
        self._running: dict[Any, tuple[Any, _Batch]] = {}  # ObjectRef -> (worker, batch)
        self._closed = False
        self._sandboxes_started = False
        for _ in range(min_workers):
            self._idle["rule"].append(self._new_worker("rule"))
        for _ in range(judge_workers if judge is not None else 0):
            self._idle["judge"].append(self._new_worker("judge"))
        self._thread = threading.Thread(target=self._dispatch, name="reward-pool", daemon=True)
        self._thread.start()

    @property
    def workers(self) -> list[Any]:
        """The live worker actors (idle and busy)."""
        with self._lock:
            idle = [w for workers in self._idle.values() for w in workers]
            return [*idle, *(worker for worker, _ in self._running.values())]

    def submit(self, requests: list[ScoreRequest]) -> Future:
        """Starts scoring ``requests``; the future's result is their :class:`ScoreResult` list,
        in the order given."""
        ids = [r.id for r in requests]
        if len(set(ids)) != len(ids):
            raise ValueError("request ids must be unique within a submission")
        future: Future = Future()
        if not requests:
            future.set_result([])
            return future
        with self._lock:
            if self._closed:
                raise RuntimeError("the reward pool is closed")
            parts = _batches(requests, self.batch_size)
            submission = _Submission(future, ids, len(parts))
            for part in parts:
                kind = part[0].kind
                count = self.stats.requests_by_kind.get(kind, 0)
                self.stats.requests_by_kind[kind] = count + len(part)
                if kind == "judge" and self.judge is None:
                    results = [ScoreResult(r.id, None, "this pool has no judge") for r in part]
                    submission.add_results(results, self.stats)
                elif kind not in self._queues:
                    results = [ScoreResult(r.id, None, f"unknown kind {kind!r}") for r in part]
                    submission.add_results(results, self.stats)
                else:
                    if kind == "sandbox" and not self._sandboxes_started:
                        self._sandboxes_started = True
                        for _ in range(self.sandbox_workers):
                            self._idle["sandbox"].append(self._new_worker("sandbox"))
                    self._queues[kind].append(_Batch(kind, part, submission))
            self._lock.notify_all()
        return future

    def score(self, requests: list[ScoreRequest]) -> list[ScoreResult]:
        """Scores ``requests`` and waits for the results."""
        return self.submit(requests).result()

    def close(self) -> None:
        """Stops the dispatcher and the workers; waiting submissions fail."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        self._thread.join(10)
        for worker in self.workers:
            self._ray.kill(worker)

    # ------------------------------------------------------------------ the dispatcher
    def _new_worker(self, kind: str) -> Any:
        worker = self._actor_classes[kind].remote(kind, self._deadlines[kind], *self._judge_args)
        self.stats.workers_started += 1
        return worker

    def _dispatch(self) -> None:
        ray = self._ray
        while True:
            with self._lock:
                while not self._closed and not self._waiting() and not self._running:
                    self._lock.wait(0.5)
                if self._closed:
                    self._fail_waiting(RuntimeError("the reward pool was closed"))
                    return
                self._grow()
                for kind, queue in self._queues.items():
                    idle = self._idle[kind]
                    while queue and idle:
                        batch, worker = queue.popleft(), idle.pop()
                        batch.tries += 1
                        self._running[worker.score.remote(batch.requests)] = (worker, batch)
                live = sum(map(len, self._idle.values())) + len(self._running)
                self.stats.peak_workers = max(self.stats.peak_workers, live)
                refs = list(self._running)
            if not refs:
                continue
            done, _ = ray.wait(refs, num_returns=1, timeout=0.2)
            for ref in done:
                with self._lock:
                    worker, batch = self._running.pop(ref)
                try:
                    results = ray.get(ref)
                except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as error:
                    self._replace(worker, batch, error)
                    continue
                with self._lock:
                    self._idle[batch.kind].append(worker)
                batch.submission.add_results(results, self.stats)

    def _waiting(self) -> bool:
        return any(self._queues.values())

    def _grow(self) -> None:
        """Adds a rule worker when rule batches back up (judge workers hold a model each: their
        number is fixed)."""
        busy = sum(1 for _, batch in self._running.values() if batch.kind == "rule")
        live = len(self._idle["rule"]) + busy
        waiting = len(self._queues["rule"])
        if live < self.max_workers and waiting > self.grow_after * max(live, 1):
            self._idle["rule"].append(self._new_worker("rule"))

    def _replace(self, dead: Any, batch: _Batch, error: Exception) -> None:
        with self._lock:
            self.stats.workers_replaced += 1
            self._idle[batch.kind].append(self._new_worker(batch.kind))
            if batch.tries >= self.max_tries:
                results = [
                    ScoreResult(r.id, None, f"its reward worker died {batch.tries} times")
                    for r in batch.requests
                ]
                batch.submission.add_results(results, self.stats)
            else:
                self.stats.batches_retried += 1
                self._queues[batch.kind].appendleft(batch)
            self._lock.notify_all()

    def _fail_waiting(self, error: Exception) -> None:
        waiting = [b for queue in self._queues.values() for b in queue]
        for batch in [*waiting, *(b for _, b in self._running.values())]:
            batch.submission.fail(error)
        for queue in self._queues.values():
            queue.clear()


def _check_fits(ray: Any, groups: list[tuple[str, int, float, float]]) -> None:
    """Raises ``ValueError`` (one line) when the Ray cluster has too few CPUs or GPUs in all for
    the workers started at once: an actor Ray cannot place would wait forever.

    Args:
        groups: ``(name, count, cpus each, gpus each)`` of each kind of worker.
    """
    total = ray.cluster_resources()
    for resource, column in (("CPU", 2), ("GPU", 3)):
        needed = sum(group[1] * group[column] for group in groups)
        if needed > total.get(resource, 0.0) + 1e-9:
            asked = ", ".join(f"{g[1]} {g[0]} x {g[column]:g}" for g in groups)
            raise ValueError(
                f"the reward workers need {needed:g} {resource} ({asked}) but the Ray cluster "
                f"has {total.get(resource, 0.0):g}: lower rewards.worker_cpus or "
                "judge_worker_cpus (or _gpus), or the worker counts"
            )


def _batches(requests: list[ScoreRequest], batch_size: int) -> list[list[ScoreRequest]]:
    """Judge requests go ``batch_size`` at a time (one batched generation); rule requests one at
    a time, so that slow verifiers spread over the workers instead of queueing in one."""
    judged = [r for r in requests if r.kind == "judge"]
    parts = [judged[i : i + batch_size] for i in range(0, len(judged), batch_size)]
    return parts + [[r] for r in requests if r.kind != "judge"]


class _Submission:
    """One submit call's future, completed when all its batches are in."""

    def __init__(self, future: Future, ids: list[int], parts: int) -> None:
        self.future, self.ids, self.parts_left = future, ids, parts
        self.results: dict[int, ScoreResult] = {}

    def add_results(self, results: list[ScoreResult], stats: PoolStats) -> None:
        for result in results:
            if result.id in self.results:  # a batch given out twice answers once
                continue
            self.results[result.id] = result
            if result.score is None:
                stats.requests_unscored += 1
            else:
                stats.requests_scored += 1
        self.parts_left -= 1
        if self.parts_left == 0 and not self.future.done():
            self.future.set_result([self.results[i] for i in self.ids])

    def fail(self, error: Exception) -> None:
        if not self.future.done():
            self.future.set_exception(error)
