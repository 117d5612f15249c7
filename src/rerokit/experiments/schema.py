"""The results file of a rerokit run (``--out``, the JSON lines of :class:`~rerokit.experiments.records.TrialLog`):
its format, its one reader, and the records of the audits. Torch-free, so that the report reads
audit files without importing torch.

The file: a header line ``{"kind": "header", "schema_version": 1, "settings": {...}}`` and one
line per finished trial ``{"kind": "trial", "trial": i, ...}``. :func:`parse_results` is the one
reader of that format (the writer :class:`TrialLog` re-opens files with it, and the report's
``--audit`` reader uses it too): a line that is not JSON in the middle of the file is an error
naming the line; only a cut *last* line (an interruption while it was written) is dropped.
A header without ``schema_version`` is version 1 (files written before the field existed).

The record vocabulary (:func:`Num`, :func:`Int`, :data:`Bool`, :data:`Str`, :class:`ListOf`,
:class:`DictOf`, :class:`Nullable`, :class:`OneOf`) states what each run writes; the audits'
records are :func:`prior_aware_schema` / :func:`gradient_schema` with their semantic checks
(:func:`prior_aware_problem`, :func:`gradient_problem`), used by the audit that writes them and by
the report that reads them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

__all__ = [
    "SCHEMA_VERSION",
    "header",
    "parse_results",
    "ParsedResults",
    "Num",
    "Int",
    "Bool",
    "Str",
    "ListOf",
    "DictOf",
    "Nullable",
    "OneOf",
    "failing_key",
    "show",
    "prior_aware_schema",
    "prior_aware_problem",
    "gradient_schema",
    "gradient_problem",
    "seed_problems",
]

SCHEMA_VERSION = 1
"""Version of the results-file format written in every header (``schema_version``)."""


def header(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The header line's object of a results file with these run settings."""
    return {"kind": "header", "schema_version": SCHEMA_VERSION, "settings": settings}


# --------------------------------------------------------------------------- record schemas
# A schema maps each required key of a trial record to a check; a check is a callable
# ``check(value) -> None or an error text`` with a ``desc`` attribute used in messages.


class _Check:
    desc = "a value"

    def __call__(self, v: Any) -> str | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _bad(self, v: Any) -> str:
        return f"must be {self.desc}, got {show(v)}"


class _Num(_Check):
    """A JSON number (NaN allowed: undefined metrics such as NCC of a constant record)."""

    def __init__(self, *, minimum: float | None = None, finite: bool = False):
        self.minimum, self.finite = minimum, finite
        self.desc = "a number" + ("" if minimum is None else f" >= {minimum:g}") + (" (finite)" if finite else "")

    def __call__(self, v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return self._bad(v)
        if self.finite and not math.isfinite(v):
            return self._bad(v)
        if self.minimum is not None and v < self.minimum:
            return self._bad(v)
        return None


class _Int(_Check):
    def __init__(self, *, minimum: int | None = None):
        self.minimum = minimum
        self.desc = "an integer" + ("" if minimum is None else f" >= {minimum}")

    def __call__(self, v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, int) or (self.minimum is not None and v < self.minimum):
            return self._bad(v)
        return None


class _Bool(_Check):
    desc = "true or false"

    def __call__(self, v: Any) -> str | None:
        return None if isinstance(v, bool) else self._bad(v)


class _Str(_Check):
    desc = "a string"

    def __call__(self, v: Any) -> str | None:
        return None if isinstance(v, str) else self._bad(v)


class OneOf(_Check):
    """One of the given JSON values (e.g. a dataset name of this run).

    Args:
        *values: the allowed values (compared by type and value: ``1`` does not pass for ``1.0``).
    """

    def __init__(self, *values: Any):
        self.values = values
        self.desc = "one of " + ", ".join(json.dumps(x) for x in values)

    def __call__(self, v: Any) -> str | None:
        return None if any(type(v) is type(x) and v == x for x in self.values) else self._bad(v)


class Nullable(_Check):
    """``null`` or a value passing ``check``.

    Args:
        check: the check of a non-null value.
    """

    def __init__(self, check: _Check):
        self.check = check
        self.desc = f"null or {check.desc}"

    def __call__(self, v: Any) -> str | None:
        return None if v is None or self.check(v) is None else self._bad(v)


class ListOf(_Check):
    """A JSON list of items passing ``item``, of length ``length`` when given.

    Args:
        item: the check of every item.
        length: the required length, or None for any.
    """

    def __init__(self, item: _Check, *, length: int | None = None):
        self.item, self.length = item, length
        self.desc = "a list" + ("" if length is None else f" of {length}") + f" items, each {item.desc}"

    def __call__(self, v: Any) -> str | None:
        if not isinstance(v, list) or (self.length is not None and len(v) != self.length):
            n = f"a list of {len(v)} items" if isinstance(v, list) else show(v)
            return f"must be {self.desc}, got {n}"
        for i, x in enumerate(v):
            if self.item(x) is not None:
                return f"item {i} must be {self.item.desc}, got {show(x)}"
        return None


class DictOf(_Check):
    """A JSON object with exactly the keys ``keys`` (all string keys when None) whose values pass
    ``value``; or, with ``fields``, an object with at least those keys, each with its own check.

    Args:
        value: the check of every value (needed without ``fields``).
        keys: the exact keys (converted to strings, as JSON writes them), or None for any.
        fields: key -> check of each required key (then ``value`` and ``keys`` are not used).
    """

    def __init__(self, value: _Check | None = None, *, keys: Any = None, fields: Mapping[str, _Check] | None = None):
        self.value, self.fields = value, dict(fields or {})
        self.keys = None if keys is None else [str(k) for k in keys]
        if fields is not None:
            self.desc = "an object with the keys " + ", ".join(self.fields)
        else:
            assert value is not None
            keys_text = "an object with the keys " + ", ".join(self.keys) if self.keys is not None else "an object"
            self.desc = f"{keys_text}, values {value.desc}"

    def __call__(self, v: Any) -> str | None:
        if not isinstance(v, dict):
            return self._bad(v)
        if self.fields:
            bad = failing_key(v, self.fields)
            if bad is None:
                return None
            k, err = bad
            return f"has no key {k!r}" if err is None else f"[{k!r}] {err}"
        if self.keys is not None and sorted(v) != sorted(self.keys):
            return f"must have the keys {', '.join(self.keys)}, got {', '.join(map(str, v)) or 'none'}"
        assert self.value is not None
        for k, x in v.items():
            if self.value(x) is not None:
                return f"[{k!r}] must be {self.value.desc}, got {show(x)}"
        return None


def Num(*, minimum: float | None = None, finite: bool = False) -> _Check:  # noqa: N802 - schema vocabulary
    """A JSON number (not a bool; NaN passes unless ``finite``: undefined metrics such as the NCC of a
    constant record).

    Args:
        minimum: the smallest allowed value, or None.
        finite: refuse NaN and +-inf (written as ``NaN``/``Infinity`` by ``json``).

    Returns:
        The check.
    """
    return _Num(minimum=minimum, finite=finite)


def Int(*, minimum: int | None = None) -> _Check:  # noqa: N802
    """A JSON integer (not a bool, not 1.0).

    Args:
        minimum: the smallest allowed value, or None.

    Returns:
        The check.
    """
    return _Int(minimum=minimum)


Bool = _Bool()
Str = _Str()


def show(v: Any) -> str:
    s = json.dumps(v) if not isinstance(v, float) or math.isfinite(v) else repr(v)
    return s if len(s) <= 40 else s[:37] + "..."


def failing_key(obj: dict, checks: Mapping[str, _Check]) -> tuple[str, str | None] | None:
    """The first key of ``checks`` that ``obj`` lacks, as (key, None), or whose value fails its
    check, as (key, error text); None when every check passes."""
    for k, chk in checks.items():
        if k not in obj:
            return k, None
        err = chk(obj[k])
        if err is not None:
            return k, err
    return None



# --------------------------------------------------------------------------- the one reader


@dataclass(frozen=True)
class ParsedResults:
    """A results file split into its parts (nothing checked beyond the line format).

    Attributes:
      header: the header object (``kind``, ``schema_version``, ``settings``).
      records: (line number, parsed object) of every complete trial line, in file order.
      cut: the last line was cut by an interruption (not JSON, or without its newline).
      header_cut: the file is only a cut header line (the run was interrupted while writing it).
    """

    header: dict[str, Any] | None
    records: tuple[tuple[int, Any], ...]
    cut: bool
    header_cut: bool = False


def _loads(text: str, parse_constant: Callable[[str], Any] | None) -> Any:
    try:
        return json.loads(text) if parse_constant is None else json.loads(text, parse_constant=parse_constant)
    except RecursionError:  # nesting deeper than the interpreter's stack: not a record of a run
        raise json.JSONDecodeError("nested too deeply", text[:20], 0) from None


def parse_results(data: bytes | str, where: str, *, parse_constant: Callable[[str], Any] | None = None,
                  ) -> ParsedResults:
    """Split a results file into header and records (the one reader of the format).

    Args:
      data: the file's bytes (or text).
      where: the file as named in messages (e.g. ``out file runs/a.jsonl``).
      parse_constant: passed to ``json.loads`` (e.g. to refuse ``NaN``); default accepts them.

    Returns:
      The :class:`ParsedResults`.

    Raises:
      ValueError: if the bytes are not UTF-8, there is no header line, its schema version is
        newer than this rerokit's, or a line other than the last is not JSON (naming the line).
    """
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise ValueError(f"{where} is not a rerokit results file (not UTF-8 text: byte {exc.start}, "
                             f"line {line}); use a new file") from None
    else:
        text = data
    lines = text.split("\n")
    tail = lines.pop()  # "" for a complete file, else a line an interruption may have cut
    if not lines:
        if tail and not tail.endswith("}"):  # only a cut header line
            try:
                _loads(tail, parse_constant)
            except json.JSONDecodeError:
                return ParsedResults(None, (), True, header_cut=True)
        lines, tail = [tail], ""
    try:
        head = _loads(lines[0], parse_constant)
    except json.JSONDecodeError:
        head = None
    if not isinstance(head, dict) or head.get("kind") != "header" or not isinstance(head.get("settings"), dict):
        raise ValueError(f"{where} is not a rerokit results file (no header line); use a new file")
    version = head.get("schema_version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version > SCHEMA_VERSION:
        raise ValueError(f"{where} has results-file schema version {show(version)}; this rerokit reads version "
                         f"{SCHEMA_VERSION} or older (upgrade rerokit)")
    records: list[tuple[int, Any]] = []
    body = [(i + 2, ln, True) for i, ln in enumerate(lines[1:])]
    if tail:
        body.append((len(lines) + 1, tail, False))
    cut = False
    for lineno, ln, terminated in body:
        try:
            rec = _loads(ln, parse_constant)
        except json.JSONDecodeError:
            if not terminated:  # a line cut by an interruption: that trial is redone
                cut = True
                continue
            raise ValueError(f"{where}, line {lineno}: {'not valid JSON' if ln.strip() else 'an empty line'}; "
                             "this is not a record this run writes (edit or remove that line, or use a new file)"
                             ) from None
        except ValueError as exc:  # refused by parse_constant (e.g. NaN where the reader wants numbers)
            raise ValueError(f"{where}, line {lineno}: {exc}") from None
        records.append((lineno, rec))
        cut = cut or not terminated  # complete but without its newline: rewritten to add it
    return ParsedResults(head, tuple(records), cut)


# --------------------------------------------------------------------------- the audits' records


def prior_aware_schema(prior_size: int, attacks: Sequence[str]) -> dict[str, Any]:
    """Keys and types of a trial record of the prior-aware audit (Hayes et al. 2023, Alg. 2/3).

    Args:
      prior_size: N, the prior's size.
      attacks: the attacks the run scores.

    Returns:
      key -> check, for :class:`~rerokit.experiments.records.TrialLog`.
    """
    return {"seed": Int(minimum=0), "prior": ListOf(Int(minimum=0), length=prior_size),
            "target": Int(minimum=0), "guess": DictOf(Int(minimum=0), keys=attacks),
            "success": DictOf(Bool, keys=attacks), "target_clipped_fraction": Num(minimum=0, finite=True)}


def prior_aware_problem(rec: Mapping[str, Any], prior_size: int, attacks: Sequence[str]) -> str | None:
    """What contradicts the run in a prior-aware record that passed :func:`prior_aware_schema`.

    The prior lists N distinct dataset records; target and guesses are positions in it; ``success``
    is exactly "guess == target"; the clipped fraction lies in [0, 1].

    Returns:
      None, or the problem in words.
    """
    N = prior_size
    if len(set(rec["prior"])) != N:
        return "the prior lists a dataset record twice"
    if rec["target"] >= N:
        return f"target {rec['target']} is outside the prior 0..{N - 1}"
    for a in attacks:
        g = rec["guess"][a]
        if g >= N:
            return f"guess {g} of {a} is outside the prior 0..{N - 1}"
        if rec["success"][a] != (g == rec["target"]):
            return (f"success of {a} is {str(rec['success'][a]).lower()} but the guess is {g} and the target "
                    f"{rec['target']}")
    if rec["target_clipped_fraction"] > 1:
        return f"target_clipped_fraction {rec['target_clipped_fraction']} is above 1"
    return None


def gradient_schema(prior_sizes: Sequence[int]) -> dict[str, Any]:
    """Keys and types of a trial record of the gradient audit (Hayes et al. 2023, Eq. 1, App. D).

    Args:
      prior_sizes: the prior sizes whose App. D success each record holds.

    Returns:
      key -> check, for :class:`~rerokit.experiments.records.TrialLog`.
    """
    return {"seed": Int(minimum=0), "target_index": Int(minimum=0), "mse": Num(minimum=0, finite=True),
            "objective": Num(), "prior_success": DictOf(Num(minimum=0, finite=True), keys=prior_sizes)}


def gradient_problem(rec: Mapping[str, Any]) -> str | None:
    """What contradicts the run in a gradient-audit record that passed :func:`gradient_schema`
    (a prior-matching success is a probability: at most 1)."""
    bad = [n for n, v in rec["prior_success"].items() if v > 1]
    return f"prior_success[{bad[0]}] = {rec['prior_success'][bad[0]]} is above 1" if bad else None



MAX_CHECKED_TRIAL = 10**7
"""Largest trial id whose seed a reader recomputes (larger ids are refused as not from a run)."""


def seed_problems(records: Sequence[Mapping[str, Any]], seed: int) -> tuple[int, str] | None:
    """The first record whose ``seed`` is not its trial's seed in a run of seed ``seed``
    (:func:`rerokit.seeding.trial_seeds`), as (trial, problem); None when all agree.

    Args:
      records: trial records with integer ``trial`` and ``seed``.
      seed: the run's seed.
    """
    from rerokit.seeding import trial_seeds

    if not records:
        return None
    top = max(int(r["trial"]) for r in records)
    if top >= MAX_CHECKED_TRIAL:
        return top, f"trial {top} is beyond the {MAX_CHECKED_TRIAL} trials a run writes"
    seeds = trial_seeds(seed, top + 1)
    for r in records:
        if r["seed"] != seeds[r["trial"]]:
            return r["trial"], f"seed {r['seed']} is not this run's seed of that trial ({seeds[r['trial']]}, from seed {seed})"
    return None
