"""One resumable loop for experiments whose unit of work is a whole cell (one attack, one setting)."""

from __future__ import annotations

import sys
from typing import Any, Callable, Mapping


def run_logged_cells(path: str, settings: Mapping[str, Any], schema: Mapping[str, Any], count: int,
                     compute: Callable[[int], dict[str, Any]], *, resume: bool, progress: bool,
                     describe: Callable[[int], str]) -> list[dict[str, Any]]:
    """Cells 0..count-1, each ``compute(i)`` appended to a :class:`rerokit.experiments.records.TrialLog` as it ends.

    Args:
        path: the JSON-lines file (header = ``settings``).
        settings: the run's settings (a resumed file must hold the same).
        schema: the record's checks (:mod:`rerokit.experiments.records`).
        count: the number of cells.
        compute: cell index -> its record.
        resume: skip the cells already in the file.
        progress: print ``describe(i)`` on stderr before each computed cell.
        describe: cell index -> a line saying what is computed.

    Returns:
        The records of cells 0..count-1 in order (the file's and this run's).
    """
    from rerokit.experiments.records import TrialLog

    log = TrialLog(path, dict(settings), resume=resume, trials=count, schema=dict(schema))
    try:
        for i in range(count):
            if i not in log.done:
                if progress:
                    print(describe(i), file=sys.stderr, flush=True)
                log.append(i, compute(i))
        log.sort()
        return sorted((r for r in log if r["trial"] < count), key=lambda r: r["trial"])
    finally:
        log.close()
