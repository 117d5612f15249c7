"""Resumable JSON-lines result files: one object per finished trial, appended and flushed.

An interrupted run loses at most the trial in flight; ``resume`` reads the trials already done
(and checks that the run settings match) so that a restarted run skips them.

A resumed file is checked line by line before any work: every record must be a trial of this
run (``0 <= trial < trials``, no trial twice) with the keys and types its run writes (the
caller's ``schema``). Anything else - a line that is not JSON in the middle of the file, a
missing key, a string where a number belongs, trial -1, bytes that are not UTF-8 - is a
``ValueError`` naming the file and the line. Only a cut *last* line (an interruption while it
was written) is repaired, by dropping it.

While a ``TrialLog`` is open it holds an exclusive ``flock`` on the results file itself, i.e. on
its inode: a second run on the same file - through the same path, a symlink or a hard link - is
refused at once instead of redoing the same trials or interleaving its records; the lock is
released by :meth:`TrialLog.close` (or leaving a ``with`` block, or the process ending, also by
a kill), and no lock file is left behind. Within one process a new log of the same file takes the
lock over from an earlier one that was not closed (an interrupted run): the lock guards against
concurrent processes.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from rerokit.experiments.schema import Bool, DictOf, Int, ListOf, Nullable, Num, OneOf, Str, failing_key, header
from rerokit.experiments.schema import parse_results, show

__all__ = [
    "TrialLog",
    "Num",
    "Int",
    "Bool",
    "Str",
    "ListOf",
    "DictOf",
    "Nullable",
    "OneOf",
]


# --------------------------------------------------------------------------- the log

# the locked file's identity (device, inode) -> (the open file holding the lock, id of the TrialLog
# that owns it), for this process
_HELD: dict[tuple[int, int], tuple[Any, int]] = {}


class TrialLog:
    """Append-only JSONL log. The first line is a header ``{"kind": "header", "schema_version": 1, "settings": ...}``
    (:func:`rerokit.experiments.schema.header`);
    each further line is ``{"kind": "trial", "trial": i, ...}``.

    ``TrialLog(path, settings, resume=True)`` re-opens an existing file if its header settings
    equal ``settings`` (else raises ``ValueError``), and ``done`` lists the finished trial ids.
    Without ``resume`` an existing non-empty file is reused when it is *finished* (the same
    settings and every trial ``0..trials-1``: a re-run of a finished job reports it again, see
    :attr:`reused`), replaced with ``overwrite``, and otherwise an error naming both options -
    never silently overwritten.

    While open, the log holds an exclusive ``flock`` on the results file itself (not on a file
    beside it): the lock belongs to the file's inode, so the same file reached through a symlink, a
    hard link or another spelling of its path is refused to a second process, and nothing is left
    behind after the run. Released by :meth:`close` (also a context manager), or when the process
    ends (a kill included).

    Args:
        path: the JSON-lines file (its folder is created), or None for a log kept in memory only.
        settings: the run's settings (JSON-ready), written in the header and compared on resume.
        resume: continue an existing file with the same settings.
        trials: the run's trial count K; every record (read or appended) must have an integer
            ``0 <= trial < K``. None: any ``trial >= 0``.
        schema: key -> check (:class:`Num`, :class:`Int`, :data:`Bool`, :data:`Str`,
            :class:`ListOf`, :class:`DictOf`, :class:`Nullable`, :class:`OneOf`) of every key a
            trial record of this run must have.
        name: the option or parameter that gave ``path``, used in messages.
        overwrite: replace an existing file (not with ``resume``); None: the caller offers no
            such option (messages then do not suggest it).
        validate: ``validate(record) -> None or an error text``: what a record must satisfy beyond
            its schema for this run (e.g. its seed is the run's seed of that trial, a guess lies in
            the prior, ``success`` agrees with guess and target); checked on every record read on
            resume and every record appended.

    Raises:
        ValueError: if ``path`` is empty, a folder or not a regular file; if the file exists, is
            not empty and is neither finished with these settings nor resumed nor overwritten; if
            another run holds its lock; on resume, if its settings differ or a record is not a
            valid trial of this run (naming the line).
    """

    def __init__(
        self,
        path: str | os.PathLike | None,
        settings: dict[str, Any],
        *,
        resume: bool = False,
        trials: int | None = None,
        schema: Mapping[str, Callable[[Any], str | None]] | None = None,
        name: str = "out",
        overwrite: bool | None = None,
        validate: Callable[[dict[str, Any]], str | None] | None = None,
    ):
        self.path = Path(path) if path is not None else None
        self.settings = json.loads(json.dumps(settings))
        self.trials: dict[int, dict[str, Any]] = {}
        self.limit = None if trials is None else int(trials)
        self.schema = dict(schema or {})
        self.name = name
        self.validate = validate
        self.reused = False
        """True when an existing finished file with these settings was opened without ``resume``."""
        self._order: list[int] = []  # trial ids in file order
        self._lock: Any = None
        self._key: tuple[int, int] | None = None
        if self.path is None:
            return
        if resume and overwrite:
            raise ValueError(f"give resume (--resume) or overwrite (--overwrite) for {name}, not both")
        if str(path) == "":
            raise ValueError(f"{name} must be a file path, got an empty string")
        if self.path.is_dir():
            raise ValueError(f"{name} must be a file path, got the directory {self.path}")
        if self.path.exists() and not self.path.is_file():
            raise ValueError(f"{name} must be a regular file, got {self.path} (a device, pipe or socket)")
        if self.path.parent and not self.path.parent.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._acquire()
        try:
            if self.path.stat().st_size > 0 and not overwrite:
                if not resume:
                    self._reuse_or_refuse(overwrite is not None)
                else:
                    self._load()
            else:
                self._rewrite(header(self.settings), [])
        except BaseException:
            self.close()
            raise

    def _reuse_or_refuse(self, can_overwrite: bool) -> None:
        """An existing file opened without resume: reused when finished with these settings, else refused."""
        options = "--resume (resume=True) to continue it" + (
            ", --overwrite (overwrite=True) to replace it" if can_overwrite else "") + " or another path"
        try:
            self._load(repair=False)
        except ValueError as exc:
            raise ValueError(f"{exc}. Use {options}") from None
        missing = None if self.limit is None else self.limit - len(self.trials)
        if missing != 0:
            held = f"holds {len(self.trials)} of the {self.limit} trials" if missing else "may not be finished"
            raise ValueError(f"{self.name} file {self.path} exists and {held} of this run; use {options}")
        self.reused = True

    # -- lock
    def _acquire(self) -> None:
        """Lock the results file's inode (created empty if missing): ``flock`` on an open file.

        After locking, the path must still name the locked inode (another run may have replaced the
        file atomically in between: then lock the new one)."""
        assert self.path is not None
        for _ in range(100):
            fh = open(self.path, "a+b")  # noqa: SIM115 - kept open while the lock is held
            st = os.fstat(fh.fileno())
            key = (st.st_dev, st.st_ino)
            held = _HELD.get(key)
            if held is not None:
                # this process already holds the lock through an earlier log of the same file that was
                # not closed (a run interrupted in-process, e.g. by KeyboardInterrupt in a notebook or
                # a test): runs in one process are sequential, so the new log takes the lock over
                fh.close()
                self._lock, self._key = held[0], key
                _HELD[key] = (held[0], id(self))
                return
            try:
                _flock(fh)
            except BlockingIOError:
                fh.close()
                raise ValueError(f"{self.name} file {self.path} is in use by another rerokit run (it is locked); "
                                 "wait for it to finish or use another file") from None
            except OSError as exc:
                fh.close()
                raise ValueError(f"{self.name}: cannot lock {self.path}: {exc.strerror or type(exc).__name__}") from None
            try:
                now = os.stat(self.path)
            except OSError:
                now = None
            if now is not None and (now.st_dev, now.st_ino) == key:
                self._lock, self._key = fh, key
                _HELD[key] = (fh, id(self))
                return
            fh.close()  # replaced while we locked it: lock the file now at that path
        raise ValueError(f"{self.name}: {self.path} keeps being replaced by another process; use another file")

    def close(self) -> None:
        """Release the lock (idempotent). The records stay readable in :attr:`trials`."""
        lock, self._lock = self._lock, None
        if lock is None:
            return
        held = _HELD.get(self._key) if self._key is not None else None
        if held is not None and held[1] == id(self):  # not taken over by a later log of the file
            del _HELD[self._key]  # type: ignore[arg-type]
            lock.close()  # closing the file releases its flock

    def __enter__(self) -> "TrialLog":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:  # a log that is dropped without close() still frees its lock
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    # -- reading
    def _fail(self, line: int, what: str) -> ValueError:
        return ValueError(f"{self.name} file {self.path}, line {line}: {what}; this is not a record this run "
                          "writes (edit or remove that line, or use a new file)")

    def _load(self, repair: bool = True) -> None:
        """Read the file (:func:`rerokit.experiments.schema.parse_results`, the one reader of the format),
        check its settings and every record; with ``repair``, rewrite it without a cut last line."""
        assert self.path is not None
        where = f"{self.name} file {self.path}"
        parsed = parse_results(self.path.read_bytes(), where)
        if parsed.header_cut:  # the header itself was cut: start again
            if repair:
                self._rewrite(header(self.settings), [])
            return
        assert parsed.header is not None
        if parsed.header["settings"] != self.settings:
            raise ValueError(f"{where} was written with other settings"
                             f"{_differing(parsed.header['settings'], self.settings)}; use a new file or the same settings")
        keep: list[dict[str, Any]] = []
        first_line: dict[int, int] = {}
        for lineno, rec in parsed.records:
            err = self._check(rec)
            if err is not None:
                raise self._fail(lineno, err)
            t = rec["trial"]
            if t in first_line:
                raise self._fail(lineno, f"trial {t} appears twice (first on line {first_line[t]})")
            first_line[t] = lineno
            self.trials[t] = rec
            self._order.append(t)
            keep.append(rec)
        if parsed.cut and repair:
            self._rewrite(header(self.settings), keep)

    def _check(self, rec: Any) -> str | None:
        """None if ``rec`` is a valid trial record of this run, else what is wrong."""
        if not isinstance(rec, dict):
            return f"a trial record must be a JSON object, got {show(rec)}"
        if rec.get("kind") != "trial":
            return f"\"kind\" must be \"trial\", got {show(rec.get('kind'))}"
        if "trial" not in rec:
            return "has no \"trial\" number"
        t = rec["trial"]
        if isinstance(t, bool) or not isinstance(t, int):
            return f"\"trial\" must be an integer, got {show(t)}"
        if t < 0 or (self.limit is not None and t >= self.limit):
            rng = f"0..{self.limit - 1}" if self.limit is not None else ">= 0"
            extra = f" (this run has {self.limit} trials)" if self.limit is not None else ""
            return f"trial {t} is outside {rng}{extra}"
        bad = failing_key(rec, self.schema)
        if bad is not None:
            key, err = bad
            return f"trial {t} has no {key!r}" if err is None else f"trial {t}: {key!r} {err}"
        if self.validate is not None:
            err = self.validate(rec)
            if err is not None:
                return f"trial {t}: {err}"
        return None

    def _rewrite(self, header: dict[str, Any], records: list[dict[str, Any]]) -> None:
        """Replace the file by ``header`` and ``records`` atomically: a unique temporary file in the same folder
        (two processes never share it), locked, fsynced, then ``os.replace``; an interruption before the
        replace leaves the original untouched. The lock moves to the new file with it (it was taken
        before the rename, so the path is never unlocked)."""
        assert self.path is not None
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name + ".", suffix=".tmp")
        f = os.fdopen(fd, "w+b")
        try:
            if self._lock is not None:
                _flock(f)
            for obj in (header, *records):
                f.write((json.dumps(obj) + "\n").encode())
            f.flush()
            os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            f.close()
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        if self._lock is None:
            f.close()
            return
        st = os.fstat(f.fileno())
        old, self._lock = self._lock, f
        if self._key is not None:
            _HELD.pop(self._key, None)
        self._key = (st.st_dev, st.st_ino)
        _HELD[self._key] = (f, id(self))
        old.close()

    # -- writing
    @property
    def done(self) -> set[int]:
        """The ids of the trials in the log (read on resume or appended)."""
        return set(self.trials)

    def append(self, trial: int, record: dict[str, Any]) -> None:
        """Append one finished trial to the file (flushed and fsynced) and to :attr:`trials`.

        Args:
            trial: the trial id.
            record: its JSON-ready fields (numpy values are converted); ``kind`` and ``trial`` are
                added.

        Raises:
            ValueError: if the record does not match the schema or the trial is already logged.
        """
        rec = {"kind": "trial", "trial": int(trial), **record}
        rec = json.loads(json.dumps(rec, default=_default))
        err = self._check(rec)
        if err is None and rec["trial"] in self.trials:
            err = f"trial {rec['trial']} is already in the log"
        if err is not None:  # a programming error: the record does not match the declared schema
            raise ValueError(f"{self.name}: record not written: {err}")
        self.trials[int(trial)] = rec
        self._order.append(int(trial))
        if self.path is not None:
            self._write(rec)

    def sort(self) -> None:
        """Rewrite the file with its records in trial order (atomically, as on a resume) if they
        are not. Records are appended as blocks finish, which on Ray workers is not always in
        order; sorting at the end of a run makes its file the same, line for line, as a run
        whose blocks finished in order."""
        if self.path is None or all(a < b for a, b in zip(self._order, self._order[1:])):
            return
        self._rewrite(header(self.settings), [self.trials[i] for i in sorted(self.trials)])
        self._order = sorted(self.trials)

    def _write(self, obj: dict[str, Any]) -> None:
        assert self.path is not None
        with open(self.path, "a") as f:
            f.write(json.dumps(obj, default=_default) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self.trials[i] for i in sorted(self.trials))


def _differing(old: Any, new: dict[str, Any]) -> str:
    """`` (key: file value vs this run's)`` for up to three top-level keys whose values differ."""
    if not isinstance(old, dict):
        return ""
    keys = [k for k in dict.fromkeys([*old, *new]) if old.get(k, _MISSING) != new.get(k, _MISSING)]
    if not keys:
        return ""
    val = lambda d, k: "absent" if k not in d else show(d[k])  # noqa: E731
    parts = [f"{k}: {val(old, k)} in the file, {val(new, k)} now" for k in keys[:3]]
    return " (" + "; ".join(parts) + (f"; {len(keys) - 3} more" if len(keys) > 3 else "") + ")"


_MISSING = object()


def _flock(f: Any) -> None:
    """An exclusive, non-blocking lock on the open file ``f`` (``BlockingIOError`` if another holds it)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: lock the first byte of the file instead
        import msvcrt

        try:
            msvcrt.locking(f.fileno(), msvcrt.LK_NBLCK, 1)
        except OSError as exc:
            raise BlockingIOError(str(exc)) from None
        return
    fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


def _default(o: Any) -> Any:
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
