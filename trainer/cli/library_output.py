"""``quiet_library_output``: a run's terminal shows the run, not its libraries.

transformers and huggingface_hub draw their own tqdm bars (``Loading weights: 100%|...``,
``Writing model shards``) and warn about deprecations; inside a run these go nowhere or to the
run's log file, so the run's own view (``trainer.training.run_view``) is the only thing that moves.

Example:
    >>> from pathlib import Path
    >>> import tempfile, warnings
    >>> from trainer.cli.library_output import quiet_library_output
    >>> log = Path(tempfile.mkdtemp()) / "train.log"
    >>> with quiet_library_output(log):
    ...     warnings.warn("an old API")
    >>> "an old API" in log.read_text()
    True
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

__all__ = ["quiet_library_output"]

#: loggers that give themselves a terminal handler when their library is imported (DeepSpeed's,
#: imported by transformers' ``save_pretrained`` at a run's first checkpoint): a filter on the
#: logger hands their records to the log file and to none of their own handlers
_SELF_HANDLED_LOGGERS = ("DeepSpeed",)

#: loggers whose handlers the block replaces with the log file (Ray's: its start, its warnings)
_LIBRARY_LOGGERS = ("py.warnings", "transformers", "torch", "ray")

#: read by tqdm (>= 4.66) and transformers, in this process and its children (Ray workers)
_QUIET_ENVIRONMENT = {
    "TQDM_DISABLE": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
}


@contextlib.contextmanager
def quiet_library_output(log_file: Path) -> Iterator[None]:
    """While the block runs: no library progress bars, and Python warnings and library log
    records (warning and up) appended to ``log_file`` instead of the terminal."""
    log_file = Path(log_file)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    saved = {name: os.environ.get(name) for name in _QUIET_ENVIRONMENT}
    os.environ.update(_QUIET_ENVIRONMENT)
    handler = logging.FileHandler(log_file)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    _configure_ray_logging()
    loggers = [logging.getLogger(name) for name in _LIBRARY_LOGGERS]
    previous = [(lg, lg.handlers[:], lg.propagate, lg.level) for lg in loggers]
    for library_logger in loggers:
        library_logger.handlers = [handler]
        library_logger.propagate = False
        library_logger.setLevel(logging.WARNING)
    to_file_only = _ToFileOnly(handler)
    for name in _SELF_HANDLED_LOGGERS:
        logging.getLogger(name).addFilter(to_file_only)
    transformers_bars = _transformers_bars(enable=False)
    logging.captureWarnings(True)
    try:
        yield
    finally:
        logging.captureWarnings(False)
        for name in _SELF_HANDLED_LOGGERS:
            logging.getLogger(name).removeFilter(to_file_only)
        for library_logger, handlers, propagate, level in previous:
            library_logger.handlers, library_logger.propagate = handlers, propagate
            library_logger.setLevel(level)
        handler.close()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if transformers_bars:
            _transformers_bars(enable=True)


def _configure_ray_logging() -> None:
    """Imports Ray where it is installed and not yet imported: its import gives the ``ray``
    logger a terminal handler, which an import inside the block would add after the swap
    (``ray.init`` then only sets the logger's level)."""
    if "ray" not in sys.modules and importlib.util.find_spec("ray") is not None:
        import ray  # noqa: F401


class _ToFileOnly(logging.Filter):
    """Writes a record of warning level and up to ``handler``, then stops it (returns False):
    the logger's own handlers, added whenever its library likes, never see it."""

    def __init__(self, handler: logging.Handler) -> None:
        super().__init__()
        self.handler = handler

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            self.handler.handle(record)
        return False


def _transformers_bars(*, enable: bool) -> bool:
    """Turns transformers' own bars off or on (its setting is read once, at its import);
    False where transformers is not installed."""
    try:
        from transformers.utils import logging as transformers_logging
    except ImportError:
        return False
    if enable:
        transformers_logging.enable_progress_bar()
    else:
        transformers_logging.disable_progress_bar()
    return True
