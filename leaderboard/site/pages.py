"""Every page of the site, rendered from the store by path: the same paths whether served or
exported (``paths`` lists them, ``render`` draws one).

Templates are Jinja2 with autoescaping on: transcripts, model names and commands are untrusted
text and reach the page only escaped; the charts are matplotlib's own SVG.

Example:
    >>> from leaderboard.records import Board
    >>> from leaderboard.site.catalog import Catalog
    >>> site = Site(store=None, catalog=Catalog(boards=(), runs={}))
    >>> list(site.paths())
    ['index.html']
    >>> "No results yet" in site.render("index.html")
    True
    >>> site.render("models/nobody.html")
    Traceback (most recent call last):
    ...
    leaderboard.site.pages.PageNotFound: No model named by 'nobody' is on this leaderboard.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import jinja2
from markupsafe import Markup

from leaderboard.provenance import rollenv_version
from leaderboard.records import Board, BoardRow, EnvResult, EpisodeSummary, TrainingPoint
from leaderboard.site import formatting, paths
from leaderboard.site.catalog import Catalog, ResultReader
from leaderboard.site.charts import Bar, Curve, env_chart, learning_chart
from leaderboard.site.grids import family_of, palette_for
from leaderboard.site.transcript import turns_of
from leaderboard.store import StoreError

__all__ = ["MATCHES_LISTED", "OVERALL_RULE", "PageNotFound", "Site", "not_found_page"]

#: the newest matches a game's ratings page lists (every match has its page)
MATCHES_LISTED = 200

#: the overall score's rule, as the page states it
OVERALL_RULE = (
    "Overall: the mean of the per-env success rates over every env of the suite; "
    "rows missing an env have none and rank last."
)
_PAGE = re.compile(r"^(?P<kind>models|envs|runs|episodes|ratings|matches)/(?P<name>[^/]+)\.html$")

_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("leaderboard.site", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_TEMPLATES.globals.update(
    percent=formatting.percent,
    interval=formatting.interval,
    number=formatting.number,
    moment=formatting.moment,
    duration=formatting.duration,
    sampling_label=formatting.sampling_label,
    model_path=paths.model_path,
    env_path=paths.env_path,
    run_path=paths.run_path,
    episode_path=paths.episode_path,
    ratings_path=paths.ratings_path,
    match_path=paths.match_path,
    family_of=family_of,
    overall_rule=OVERALL_RULE,
)


class PageNotFound(LookupError):
    """No page at a path; the message says which model, env, run or episode is unknown."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Located:
    """Where a stored episode sits: its line, and its evaluation's board and row."""

    summary: EpisodeSummary
    board: Board
    row: BoardRow


class Site:
    """The pages of one reading of the store.

    Args:
        store: where episodes and transcripts are read from (lazily, page by page).
        catalog: the boards and runs; read from ``store`` when not given.
    """

    def __init__(self, store: ResultReader, catalog: Catalog | None = None) -> None:
        self._store = store
        self.catalog = catalog if catalog is not None else Catalog.read(store)
        self._rows = {
            row.evaluation.eval_id: (board, row)
            for board in self.catalog.boards
            for row in board.rows
        }
        self._lists: dict[tuple[int, str], list[EpisodeSummary]] = {}
        self._located: dict[int, Located] = {}
        self._charts: dict[tuple[str, int, str], Markup] = {}
        self._generated = formatting.moment(time.time())

    # ------------------------------------------------------------------ the site's pages
    def paths(self) -> Iterator[str]:
        """Every page's path: the index, then models, envs, runs, episodes, rated games and
        their matches."""
        yield paths.INDEX
        yield from (paths.model_path(model) for model in self.catalog.models())
        yield from (paths.env_path(env_id) for env_id in self.catalog.env_ids())
        yield from (paths.run_path(run_id) for run_id in self.catalog.runs)
        for board in self.catalog.boards:
            for row in board.rows:
                for env_id in board.env_ids:
                    for summary in self._episodes(row.evaluation.eval_id, env_id):
                        yield paths.episode_path(summary.episode_id)
        for game in self.catalog.ratings:
            yield paths.ratings_path(game)
            for match_id, _ in self._store.matches(game):
                yield paths.match_path(match_id)

    def render(self, path: str) -> str:
        """The HTML of the page at ``path`` (relative to the root; ``""`` is the index).

        Raises:
            PageNotFound: nothing is stored under that path.
        """
        if path in ("", paths.INDEX):
            return self._index()
        match = _PAGE.match(path)
        if match is None:
            raise PageNotFound(f"There is no page {path!r} on this leaderboard.")
        kind, name = match["kind"], match["name"]
        if kind == "models":
            return self._model(name)
        if kind == "envs":
            return self._env(name)
        if kind == "runs":
            return self._run(name)
        if kind == "ratings":
            return self._ratings(name)
        if not name.isdigit():
            one = {"matches": "match", "episodes": "episode"}[kind]
            raise PageNotFound(f"There is no {one} {name!r}: {kind} are numbered.")
        if kind == "matches":
            return self._match(int(name))
        return self._episode(int(name))

    # ------------------------------------------------------------------ one page each
    def _index(self) -> str:
        suites = [
            {
                "board": board,
                "rows": self._row_views(board),
                "charts": {env_id: self._env_chart(board, env_id) for env_id in board.env_ids},
            }
            for board in self.catalog.boards
        ]
        runs = [self._run_view(run_id) for run_id in self.catalog.runs]
        return self._page(
            "index.html",
            paths.INDEX,
            title="Leaderboard",
            suites=suites,
            runs=runs,
            models=list(self.catalog.models()),
            env_ids=self.catalog.env_ids(),
            rated_games=list(self.catalog.ratings),
        )

    def _model(self, name: str) -> str:
        model = self._by_slug(self.catalog.models(), name, "model")
        entries = []
        for board, row in self.catalog.models()[model]:
            evaluation = row.evaluation
            entries.append(
                {
                    "board": board,
                    "row": row,
                    "rank": board.rows.index(row) + 1,
                    "label": self._labels(board)[evaluation.eval_id],
                    "episodes": {
                        env_id: self._episodes(evaluation.eval_id, env_id)
                        for env_id in board.env_ids
                    },
                }
            )
        path = paths.model_path(model)
        run_id = self.catalog.run_of(model)
        return self._page(
            "model.html", path, title=model, model=model, entries=entries, run_id=run_id
        )

    def _env(self, name: str) -> str:
        env_id = self._by_slug(self.catalog.env_ids(), name, "env")
        sections = []
        for board in self.catalog.boards_with(env_id):
            labels = self._labels(board)
            rows = sorted(
                (row for row in board.rows if env_id in row.results),
                key=lambda row: -row.results[env_id].success_rate,
            )
            missing = [row for row in board.rows if env_id not in row.results]
            sections.append(
                {
                    "board": board,
                    "rows": [
                        {
                            "row": row,
                            "label": labels[row.evaluation.eval_id],
                            "result": row.results.get(env_id),
                            "episodes": self._episodes(row.evaluation.eval_id, env_id),
                        }
                        for row in rows + missing
                    ],
                    "chart": self._env_chart(board, env_id),
                }
            )
        path = paths.env_path(env_id)
        return self._page("env.html", path, title=env_id, env_id=env_id, sections=sections)

    def _run(self, name: str) -> str:
        run_id = self._by_slug(self.catalog.runs, name, "training run")
        return self._page(
            "run.html", paths.run_path(run_id), title=run_id, run=self._run_view(run_id)
        )

    def _ratings(self, name: str) -> str:
        game = self._by_slug(self.catalog.ratings, name, "rated game")
        played = self._store.matches(game)
        return self._page(
            "ratings.html",
            paths.ratings_path(game),
            title=f"Ratings · {game}",
            game=game,
            ratings=self.catalog.ratings[game],
            matches=list(reversed(played))[:MATCHES_LISTED],
            played=len(played),
        )

    def _match(self, match_id: int) -> str:
        try:
            record = self._store.match(match_id)
        except StoreError:
            raise PageNotFound(f"No match {match_id} is stored on this leaderboard.") from None
        return self._page(
            "match.html",
            paths.match_path(match_id),
            title=f"{record.game} seed {record.seed} · {' vs '.join(record.players)}",
            match=record,
            match_id=match_id,
            rated=record.game in self.catalog.ratings,
        )

    def _episode(self, episode_id: int) -> str:
        try:
            record = self._store.episode(episode_id)
        except StoreError:
            raise PageNotFound(f"No episode {episode_id} is stored on this leaderboard.") from None
        located = self._locate(episode_id, record.env_id)
        evaluation = located.row.evaluation
        siblings = self._episodes(evaluation.eval_id, record.env_id)
        place = [summary.episode_id for summary in siblings].index(episode_id)
        return self._page(
            "episode.html",
            paths.episode_path(episode_id),
            title=f"{record.env_id} seed {record.seed} · {evaluation.identity.model}",
            episode=record,
            evaluation=evaluation,
            board=located.board,
            label=self._labels(located.board)[evaluation.eval_id],
            family=family_of(record.env_id),
            legend=list((palette_for(record.env_id) or {}).items()),
            turns=turns_of(record),
            previous=siblings[place - 1] if place > 0 else None,
            following=siblings[place + 1] if place + 1 < len(siblings) else None,
            place=place + 1,
            siblings=len(siblings),
        )

    # ------------------------------------------------------------------ pieces
    def _page(self, template: str, path: str, **context: object) -> str:
        return _TEMPLATES.get_template(template).render(
            root=paths.root_of(path),
            path=path,
            generated=self._generated,
            rollenv_version=rollenv_version(),
            **context,
        )

    def _row_views(self, board: Board) -> list[dict[str, object]]:
        labels = self._labels(board)
        return [
            {
                "rank": rank,
                "row": row,
                "label": labels[row.evaluation.eval_id],
                "weights_note": _weights_note(row)
                if labels[row.evaluation.eval_id] != _plain_label(row)
                else "",
                "run_id": self.catalog.run_of(row.evaluation.identity.model),
                "cells": [(env_id, row.results.get(env_id)) for env_id in board.env_ids],
            }
            for rank, row in enumerate(board.rows, start=1)
        ]

    def _env_chart(self, board: Board, env_id: str) -> Markup:
        key = (board.suite, board.suite_version, env_id)
        if key not in self._charts:
            labels = self._labels(board)
            scored: list[tuple[EnvResult, BoardRow]] = [
                (row.results[env_id], row) for row in board.rows if env_id in row.results
            ]
            scored.sort(key=lambda pair: -pair[0].success_rate)
            bars = [
                Bar(
                    labels[row.evaluation.eval_id],
                    result.success_rate,
                    result.low,
                    result.high,
                    baseline=row.evaluation.identity.weights == "baseline",
                )
                for result, row in scored
            ]
            name = f"{board.suite}-v{board.suite_version}-{env_id}"
            self._charts[key] = Markup(env_chart(bars, key=name)) if bars else Markup()
        return self._charts[key]

    def _run_view(self, run_id: str) -> dict[str, object]:
        points = self.catalog.runs[run_id]
        env_ids = list(dict.fromkeys(point.env_id for point in points))
        curves = []
        for env_id in env_ids:
            mine = [
                point for point in points if point.env_id == env_id and _success(point) is not None
            ]
            curves.append(Curve(env_id, [p.step for p in mine], [_success(p) for p in mine]))
        curves = [curve for curve in curves if curve.steps]
        return {
            "run_id": run_id,
            "models": list(dict.fromkeys(point.model for point in points)),
            "env_ids": env_ids,
            "points": points,
            "metric_names": sorted({name for point in points for name in point.metrics}),
            "chart": Markup(learning_chart(curves, key=f"run-{run_id}")) if curves else Markup(),
            "checkpoints": self.catalog.checkpoints_of(run_id),
        }

    def _labels(self, board: Board) -> dict[int, str]:
        """Each row's name: the model, its sampling when not greedy, and its weights' hash
        where two rows would otherwise read the same."""
        plain = {row.evaluation.eval_id: _plain_label(row) for row in board.rows}
        names = list(plain.values())
        return {
            eval_id: label if names.count(label) == 1 else f"{label} · {_weights_note(row)}"
            for row in board.rows
            for eval_id, label in [(row.evaluation.eval_id, plain[row.evaluation.eval_id])]
        }

    def _episodes(self, eval_id: int, env_id: str) -> list[EpisodeSummary]:
        key = (eval_id, env_id)
        if key not in self._lists:
            listed = sorted(self._store.episodes(eval_id, env_id), key=lambda s: s.seed)
            self._lists[key] = listed
            board, row = self._rows[eval_id]
            for summary in listed:
                self._located[summary.episode_id] = Located(summary, board, row)
        return self._lists[key]

    def _locate(self, episode_id: int, env_id: str) -> Located:
        """The evaluation an episode belongs to, looked up in the lists of its env."""
        for board in self.catalog.boards_with(env_id):
            for row in board.rows:
                if episode_id in self._located:
                    break
                self._episodes(row.evaluation.eval_id, env_id)
        if episode_id not in self._located:
            raise PageNotFound(f"Episode {episode_id} belongs to no evaluation on this board.")
        return self._located[episode_id]

    @staticmethod
    def _by_slug(names: Iterable[str], name: str, kind: str) -> str:
        for candidate in names:
            if paths.slug(candidate) == name:
                return candidate
        raise PageNotFound(f"No {kind} named by {name!r} is on this leaderboard.")


def not_found_page(message: str, path: str = "") -> str:
    """The page for a path with nothing behind it, saying what was not found."""
    return _TEMPLATES.get_template("not_found.html").render(
        root=paths.root_of(path),
        path=path,
        title="Not found",
        message=message,
        generated=formatting.moment(time.time()),
        rollenv_version=rollenv_version(),
    )


def _plain_label(row: BoardRow) -> str:
    identity = row.evaluation.identity
    sampling = formatting.sampling_label(identity.sampling)
    return f"{identity.model} ({sampling})" if sampling else identity.model


def _weights_note(row: BoardRow) -> str:
    return row.evaluation.identity.weights[:10]


def _success(point: TrainingPoint) -> float | None:
    metrics = point.metrics
    for name in ("success", "success_rate"):
        if name in metrics:
            return float(metrics[name])
    return None
