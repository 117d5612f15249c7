"""Resumable JSON-lines result files: one object per finished trial, appended and flushed.

An interrupted run loses at most the trial in flight; ``resume`` reads the trials already done
(and checks that the run settings match) so that a restarted run skips them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

__all__ = ["TrialLog"]


class TrialLog:
    """Append-only JSONL log. The first line is a header ``{"kind": "header", "settings": ...}``;
    each further line is ``{"kind": "trial", "trial": i, ...}``.

    ``TrialLog(path, settings, resume=True)`` re-opens an existing file if its header settings
    equal ``settings`` (else raises ``ValueError``), and ``done`` lists the finished trial ids.
    Without ``resume`` an existing non-empty file is an error, never silently overwritten.
    """

    def __init__(self, path: str | os.PathLike | None, settings: dict[str, Any], *, resume: bool = False):
        self.path = Path(path) if path is not None else None
        self.settings = json.loads(json.dumps(settings))
        self.trials: dict[int, dict[str, Any]] = {}
        if self.path is None:
            return
        if self.path.is_dir():
            raise ValueError(f"out must be a file path, got the directory {self.path}")
        if self.path.exists() and self.path.stat().st_size > 0:
            if not resume:
                raise ValueError(f"out file {self.path} exists; pass resume to continue it or choose another path")
            self._load()
        else:
            if self.path.parent and not self.path.parent.exists():
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._write({"kind": "header", "settings": self.settings})

    def _load(self) -> None:
        assert self.path is not None
        lines = self.path.read_text().splitlines()
        try:
            header = json.loads(lines[0]) if lines else None
        except json.JSONDecodeError:
            header = None
        if not isinstance(header, dict) or header.get("kind") != "header":
            raise ValueError(f"out file {self.path} is not a rerokit results file (no header line); "
                             "use a new file")
        if header.get("settings") != self.settings:
            raise ValueError(
                f"out file {self.path} was written with other settings; use a new file or the same settings"
            )
        for ln in lines[1:]:
            try:
                rec = json.loads(ln)
            except json.JSONDecodeError:
                continue  # a line cut by an interruption: that trial is redone
            if isinstance(rec, dict) and rec.get("kind") == "trial" and "trial" in rec:
                self.trials[int(rec["trial"])] = rec
        # Rewrite without a possibly truncated last line: into a temporary file that replaces the
        # original atomically, so an interruption here never loses the finished trials.
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w") as f:
            f.write(json.dumps({"kind": "header", "settings": self.settings}) + "\n")
            for i in sorted(self.trials):
                f.write(json.dumps(self.trials[i]) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    @property
    def done(self) -> set[int]:
        return set(self.trials)

    def append(self, trial: int, record: dict[str, Any]) -> None:
        rec = {"kind": "trial", "trial": int(trial), **record}
        rec = json.loads(json.dumps(rec, default=_default))
        self.trials[int(trial)] = rec
        if self.path is not None:
            self._write(rec)

    def _write(self, obj: dict[str, Any]) -> None:
        assert self.path is not None
        with open(self.path, "a") as f:
            f.write(json.dumps(obj, default=_default) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self.trials[i] for i in sorted(self.trials))


def _default(o: Any) -> Any:
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
