"""Console logging: keep third-party lines that read like failures out of a job's console.

Two libraries log routine events in words that look like errors: ``faiss.loader`` says "Could
not load library with AVX512 support due to: ModuleNotFoundError(...)" at INFO every time it
picks its CPU build, and ``bm25s`` sets its own logger to DEBUG at import ("Building index from
IDs objects"). :class:`QuietThirdParty` sits on the console handler of Hydra's job logging
(``conf/config.yaml``, ``hydra.job_logging``) and drops records of the named loggers below their
level; the job's log file still receives everything.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

#: Logger name -> lowest level shown on the console (the default of ``conf/config.yaml``).
DEFAULT_QUIET = {"faiss.loader": "WARNING", "bm25s": "INFO"}


class QuietThirdParty(logging.Filter):
    """Drop records of ``loggers`` (name -> lowest level kept) below their level.

    A logger's children are covered too (``faiss`` covers ``faiss.loader``); other loggers pass.

    Args:
        loggers: Logger name -> level name (``"WARNING"``) or number.

    Raises:
        ValueError: a level name that :mod:`logging` does not know.
    """

    def __init__(self, loggers: Mapping[str, str | int] | None = None) -> None:
        super().__init__()
        self.levels: dict[str, int] = {}
        for name, level in (DEFAULT_QUIET if loggers is None else loggers).items():
            number = level if isinstance(level, int) else logging.getLevelName(str(level).upper())
            if not isinstance(number, int):
                raise ValueError(
                    f"hydra.job_logging.filters.quiet_third_party: unknown level {level!r} for {name!r}"
                )
            self.levels[str(name)] = number

    def filter(self, record: logging.LogRecord) -> bool:
        name = record.name
        while name:
            if name in self.levels:
                return record.levelno >= self.levels[name]
            name = name.rpartition(".")[0]
        return True
