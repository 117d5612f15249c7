"""What the experiments write besides their JSON-lines logs: the output folder, CSV tables and
matplotlib figures (one implementation each)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Mapping, Sequence

from rerokit._files import check_output_dir


def output_dir(out_dir: Any) -> Path:
    """``out_dir`` checked (not "", not a file: ``Path("")`` would be the current folder) and created.

    Args:
        out_dir: the experiment's output folder (str or path-like).

    Returns:
        The folder as a :class:`~pathlib.Path`.

    Raises:
        ValueError: as :func:`rerokit._files.check_output_dir` (named ``out_dir``).
    """
    out = check_output_dir("out_dir", out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return out


def write_csv(path: Any, rows: Sequence[Mapping[str, Any]], fields: Sequence[str]) -> None:
    """``rows`` as a CSV table with the columns ``fields`` (a missing key is an empty cell).

    Args:
        path: the CSV file (overwritten).
        rows: the table's rows (keys outside ``fields`` are not written).
        fields: the columns, in order.
    """
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(fields))
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k) for k in fields})


def pyplot():
    """``matplotlib.pyplot`` on the non-interactive Agg backend (figures are only saved)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
