"""The report's input files: an Opacus history, a dp-accounting event as JSON, an audit result.

Every reader takes a path, reads it as UTF-8 JSON (or JSON lines) with the standard ``json``
module only - never ``pickle`` or ``eval`` - and raises one ``ValueError`` whose message starts
with what the file is and its name and says what is wrong (``opacus history run.json: entry 3
must be [noise_multiplier, sample_rate, steps], got ...``). The CLI prints that message as its one
line. ``NaN``/``Infinity`` literals, files above :data:`MAX_FILE_BYTES` and events nested deeper
than :data:`MAX_EVENT_DEPTH` are refused.

Formats
-------

Opacus history (``--opacus-history``)
    ``[[noise_multiplier, sample_rate, steps], ...]`` - Opacus' ``accountant.history`` (and
    :class:`rerokit.opacus.RiskAccountant`'s) saved with ``json.dump`` - or the accountant's
    ``state_dict()``, ``{"history": [...], "mechanism": "..."}``.

dp-accounting event (``--event``)
    One object with exactly one key, the dp-accounting class name, mapping to its fields
    (a whitelist mirroring ``dp_accounting.dp_event``)::

        {"GaussianDpEvent": {"noise_multiplier": 1.0}}
        {"PoissonSampledDpEvent": {"sampling_probability": 0.01, "event": EVENT}}
        {"SelfComposedDpEvent": {"count": 1000, "event": EVENT}}
        {"ComposedDpEvent": {"events": [EVENT, ...]}}
        {"NoOpDpEvent": {}}

    Unknown classes or fields are errors. The tree is built as real dp-accounting events and
    flattened by :meth:`rerokit.bounds.schedule.Schedule.from_event` (the one flattening code).

Audit (``--audit``)
    What ``rerokit audit prior-aware|gradient --json`` prints (one JSON object), or the JSON
    lines file its ``--out`` writes (a header line with the settings, one line per trial).
    Read without torch.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from rerokit.bounds.schedule import Schedule
from rerokit.report.model import OMIT_NONE, AuditRun

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_EVENT_DEPTH",
    "MAX_TOTAL_STEPS",
    "AuditSummary",
    "load_history",
    "load_event",
    "event_from_json",
    "load_audit",
    "audit_from_dict",
    "parse_data_shape",
]

MAX_FILE_BYTES = 256 * 1024 * 1024
"""Largest input file read (an audit's JSON lines of 10^6 trials stays far below)."""

from rerokit.bounds.schedule import MAX_EVENT_DEPTH  # noqa: E402 - one home: the schedule's reader

MAX_TOTAL_STEPS = 10**9
"""Largest total number of DP-SGD steps an event or history may describe."""

_EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "GaussianDpEvent": ("noise_multiplier",),
    "PoissonSampledDpEvent": ("sampling_probability", "event"),
    "SelfComposedDpEvent": ("count", "event"),
    "ComposedDpEvent": ("events",),
    "NoOpDpEvent": (),
}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _read_text(path: Any, what: str) -> str:
    p = os.fspath(path)
    try:
        st = os.stat(p)
        if os.path.isdir(p):
            raise ValueError(f"{what} {p}: is a directory, not a file")
        if not stat.S_ISREG(st.st_mode):  # a pipe or device could block or never end
            raise ValueError(f"{what} {p}: is not a regular file (a device, pipe or socket)")
        size = st.st_size
        if size > MAX_FILE_BYTES:
            raise ValueError(f"{what} {p}: {size} bytes is larger than the {MAX_FILE_BYTES} bytes read")
        with open(p, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise ValueError(f"{what} {p}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{what} {p}: is not UTF-8 text (expected JSON)") from None


def _loads(text: str, what: str, path: Any) -> Any:
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} {os.fspath(path)}: not valid JSON ({exc.msg} at line {exc.lineno} "
                         f"column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{what} {os.fspath(path)}: not valid JSON ({exc})") from None


def _short(x: Any, limit: int = 60) -> str:
    s = json.dumps(x)[: limit + 1]
    return s if len(s) <= limit else s[:limit] + "..."


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


# --------------------------------------------------------------------------- Opacus history


def _history_schedule(obj: Any, where: str) -> Schedule:
    """Schedule from a parsed history (list of triples, or a state dict with a ``history`` key; a rerokit
    ``RiskAccountant`` state dict also keeps the sampler and the unit of privacy, which are used)."""
    sampling: dict[str, Any] = {}
    if isinstance(obj, dict):
        if "history" not in obj:
            raise ValueError(f"{where}: a JSON object must have a \"history\" key (Opacus accountant state_dict), "
                             f"got keys {sorted(obj)[:5]}")
        if obj.get("sampler") is not None:
            sampling = {"sampler": obj["sampler"], "examples_per_user": obj.get("examples_per_user", 1),
                        "sampler_source": obj.get("sampler_source", "declared")}
        obj = obj["history"]
    if not isinstance(obj, list):
        raise ValueError(f"{where}: must be a JSON list of [noise_multiplier, sample_rate, steps] entries "
                         "(or {\"history\": [...]})")
    if not obj:
        raise ValueError(f"{where}: the history is empty (no DP-SGD steps recorded)")
    for i, e in enumerate(obj):
        if not (isinstance(e, list) and len(e) == 3 and all(_is_number(v) for v in e)):
            raise ValueError(f"{where}: entry {i} must be [noise_multiplier, sample_rate, steps] (three numbers), "
                             f"got {_short(e)}")
        if isinstance(e[2], float) and not e[2].is_integer():
            raise ValueError(f"{where}: entry {i}: steps must be an integer >= 1, got {e[2]!r}")
    try:
        sched = Schedule.from_opacus_history([tuple(e) for e in obj])
        if sampling:
            sched = sched.with_sampling(**sampling)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{where}: {exc}") from None
    if sched.total_steps > MAX_TOTAL_STEPS:
        raise ValueError(f"{where}: {sched.total_steps} steps in total, more than the {MAX_TOTAL_STEPS} supported")
    return sched


def load_history(path: Any) -> Schedule:
    """Read an Opacus ``accountant.history`` saved as JSON (see the module docstring).

    Args:
      path: the JSON file: a list of [noise_multiplier, sample_rate, steps] or ``{"history": [...]}``.

    Returns:
      The :class:`~rerokit.bounds.schedule.Schedule` (consecutive equal (sigma, q) merged).

    Raises:
      ValueError: the file cannot be read, is not JSON, or an entry is not a valid triple.
    """
    where = f"opacus history {os.fspath(path)}"
    return _history_schedule(_loads(_read_text(path, "opacus history"), "opacus history", path), where)


# --------------------------------------------------------------------------- dp-accounting event


def event_from_json(obj: Any, *, where: str = "event") -> Any:
    """Build a dp-accounting ``DpEvent`` from its JSON form (whitelisted classes only).

    Args:
      obj: the parsed JSON (see the module docstring).
      where: prefix of error messages (e.g. ``"event run.json"``).

    Returns:
      The ``dp_accounting`` event tree.

    Raises:
      ValueError: an unknown class or field, a missing field, a value of the wrong type, or
        nesting deeper than :data:`MAX_EVENT_DEPTH`.
    """
    import dp_accounting as dpa

    classes = {
        "GaussianDpEvent": dpa.GaussianDpEvent,
        "PoissonSampledDpEvent": dpa.PoissonSampledDpEvent,
        "SelfComposedDpEvent": dpa.SelfComposedDpEvent,
        "ComposedDpEvent": dpa.ComposedDpEvent,
        "NoOpDpEvent": dpa.NoOpDpEvent,
    }

    def build(e: Any, path: str, depth: int) -> Any:
        if depth > MAX_EVENT_DEPTH:
            raise ValueError(f"{where}: events nested deeper than {MAX_EVENT_DEPTH} levels at {path}")
        if not (isinstance(e, dict) and len(e) == 1):
            raise ValueError(f"{where}: at {path} an event must be an object with one key, the event class "
                             f"({', '.join(_EVENT_FIELDS)}), got {_short(e)}")
        (name, fields), = e.items()
        if name not in _EVENT_FIELDS:
            raise ValueError(f"{where}: at {path} unknown event class {_short(name)}; allowed: "
                             f"{', '.join(_EVENT_FIELDS)}")
        if not isinstance(fields, dict):
            raise ValueError(f"{where}: at {path}.{name} the fields must be an object, got {_short(fields)}")
        want = _EVENT_FIELDS[name]
        extra = sorted(set(fields) - set(want))
        missing = [f for f in want if f not in fields]
        if extra or missing:
            raise ValueError(f"{where}: at {path}.{name} expected the fields {list(want)}"
                             + (f"; unknown {extra}" if extra else "") + (f"; missing {missing}" if missing else ""))
        here = f"{path}.{name}"
        if name == "GaussianDpEvent":
            s = fields["noise_multiplier"]
            if not _is_number(s) or not (math.isfinite(s) and s > 0):
                raise ValueError(f"{where}: at {here}.noise_multiplier must be a finite number > 0, got {_short(s)}")
            return classes[name](float(s))
        if name == "PoissonSampledDpEvent":
            q = fields["sampling_probability"]
            if not _is_number(q) or not (0 < q <= 1):
                raise ValueError(f"{where}: at {here}.sampling_probability must be a number in (0, 1], got {_short(q)}")
            return classes[name](float(q), build(fields["event"], here + ".event", depth + 1))
        if name == "SelfComposedDpEvent":
            c = fields["count"]
            if not (isinstance(c, int) and not isinstance(c, bool)) or not 1 <= c <= MAX_TOTAL_STEPS:
                raise ValueError(f"{where}: at {here}.count must be an integer in [1, {MAX_TOTAL_STEPS}], got {_short(c)}")
            return classes[name](build(fields["event"], here + ".event", depth + 1), c)
        if name == "ComposedDpEvent":
            evs = fields["events"]
            if not isinstance(evs, list) or not evs:
                raise ValueError(f"{where}: at {here}.events must be a non-empty list of events, got {_short(evs)}")
            return classes[name]([build(x, f"{here}.events[{i}]", depth + 1) for i, x in enumerate(evs)])
        return classes[name]()

    return build(obj, "$", 0)


def load_event(path: Any) -> Schedule:
    """Read a dp-accounting event saved as JSON (see the module docstring) as a schedule.

    Args:
      path: the JSON file.

    Returns:
      The :class:`~rerokit.bounds.schedule.Schedule` of its Gaussian / Poisson-sampled Gaussian steps.

    Raises:
      ValueError: the file cannot be read, is not JSON, breaks the schema, or holds no DP-SGD step.
    """
    where = f"event {os.fspath(path)}"
    ev = event_from_json(_loads(_read_text(path, "event"), "event", path), where=where)
    try:
        sched = Schedule.from_event(ev)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{where}: {exc}") from None
    if sched.total_steps > MAX_TOTAL_STEPS:
        raise ValueError(f"{where}: {sched.total_steps} steps in total, more than the {MAX_TOTAL_STEPS} supported")
    return sched


# --------------------------------------------------------------------------- audit results


@dataclass(frozen=True, kw_only=True)
class AuditSummary(AuditRun):
    """An audit's outcome as the report uses it: the :class:`~rerokit.report.model.AuditRun` fields
    (declared there once: the attack, its successes and interval, kappa, the audited DP-SGD settings,
    the seed, where it was read from) and the result of a one-run audit.

    Attributes:
      one_run: the result of a one-run audit (``rerokit audit one-run``; its own lower bounds), else None.
    """

    one_run: Optional[Mapping[str, Any]] = field(default=None, metadata=OMIT_NONE)

    @property
    def binomial(self) -> bool:
        """True when the success is a count of 0/1 outcomes (empirical lower bounds apply)."""
        return self.successes is not None


def _field(d: dict, key: str, where: str, kind: str, *, optional: bool = False) -> Any:
    if key not in d or d[key] is None:
        if optional:
            return None
        raise ValueError(f"{where}: missing \"{key}\"")
    v = d[key]
    ok = {
        "int": isinstance(v, int) and not isinstance(v, bool),
        "number": _is_number(v) and math.isfinite(v),
        "str": isinstance(v, str),
        "dict": isinstance(v, dict),
        "list": isinstance(v, list),
    }[kind]
    if not ok:
        raise ValueError(f"{where}: \"{key}\" must be a JSON {kind}, got {_short(v)}")
    return v


def _audit_settings(s: dict, where: str) -> dict[str, Any]:
    """The DP-SGD settings of an audit's ``settings`` object, validated."""
    sig = _field(s, "noise_multiplier", where + " settings", "number")
    q = _field(s, "sample_rate", where + " settings", "number")
    T = _field(s, "steps", where + " settings", "int")
    clip = _field(s, "clip", where + " settings", "number", optional=True)
    ds = _field(s, "dataset", where + " settings", "str", optional=True)
    seed = _field(s, "seed", where + " settings", "int", optional=True)
    if not sig >= 0:
        raise ValueError(f"{where}: settings.noise_multiplier must be >= 0, got {sig!r}")
    if not 0 < q <= 1:
        raise ValueError(f"{where}: settings.sample_rate must be in (0, 1], got {q!r}")
    if T < 1:
        raise ValueError(f"{where}: settings.steps must be an integer >= 1, got {T!r}")
    if clip is not None and not clip > 0:
        raise ValueError(f"{where}: settings.clip must be > 0, got {clip!r}")
    sampler = s.get("sampler")
    if sampler is not None and sampler not in ("poisson", "shuffle", "full_batch"):
        raise ValueError(f"{where}: settings.sampler must be poisson, shuffle or full_batch, got {_short(sampler)}")
    return {"noise_multiplier": float(sig), "sample_rate": float(q), "steps": int(T),
            "clip": None if clip is None else float(clip), "dataset": ds, "seed": seed, "sampler": sampler}


def _declared(s: dict, where: str) -> dict[str, Any]:
    """The (epsilon, delta) an audit file's header declares (None where it does not)."""
    eps = _field(s, "epsilon", where + " settings", "number", optional=True)
    delta = _field(s, "delta", where + " settings", "number", optional=True)
    if delta is not None and not 0 < delta < 1:
        raise ValueError(f"{where}: settings.delta must be in (0, 1), got {delta!r}")
    return {"target_epsilon": None if eps is None else float(eps), "delta": None if delta is None else float(delta)}


def _settings_kappa(s: dict, where: str) -> float:
    """kappa of the audit's prior from its settings: max weight, else 1/prior_size."""
    w = s.get("prior_weights")
    if w is not None:
        if not (isinstance(w, list) and w and all(_is_number(x) and math.isfinite(x) and x >= 0 for x in w)):
            raise ValueError(f"{where}: settings.prior_weights must be a list of numbers >= 0, got {_short(w)}")
        return float(max(w))
    n = _field(s, "prior_size", where + " settings", "int")
    if n < 2:
        raise ValueError(f"{where}: settings.prior_size must be an integer >= 2, got {n!r}")
    return 1.0 / n


def _check_attack(v: Any, where: str) -> str:
    if not (isinstance(v, str) and re.fullmatch(r"[A-Za-z0-9_.-]{1,40}", v)):
        raise ValueError(f"{where}: the attack name must be 1-40 letters, digits or _.- (e.g. alg2), got {_short(v)}")
    return v


def _check_prob(v: Any, name: str, where: str) -> float:
    if not (_is_number(v) and 0 <= v <= 1):
        raise ValueError(f"{where}: \"{name}\" must be a number in [0, 1], got {_short(v)}")
    return float(v)


def audit_from_dict(d: Any, *, where: str = "audit", path: str | None = None) -> AuditSummary:
    """An :class:`AuditSummary` from what ``rerokit audit prior-aware|gradient --json`` prints.

    The success count is recovered as round(success x trials) (the printed success is k / n
    exactly) and the interval recomputed by the same function as the audit
    (:meth:`rerokit.attacks.result.AttackResult.from_successes`, exact Clopper-Pearson).

    Args:
      d: the parsed JSON object.
      where: prefix of error messages.
      path: the file it came from (recorded).

    Returns:
      The validated :class:`AuditSummary`.

    Raises:
      ValueError: a field is missing or out of range.
    """
    if not isinstance(d, dict):
        raise ValueError(f"{where}: must be a JSON object (the output of 'rerokit audit ... --json')")
    s = _field(d, "settings", where, "dict")
    st = _audit_settings(s, where)
    if d.get("kind") == "one-run":
        return _one_run_summary(d, s, st, where, path)
    n = _field(d, "trials", where, "int")
    if n < 1:
        raise ValueError(f"{where}: \"trials\" must be an integer >= 1, got {n!r}")
    kappa = _check_prob(_field(d, "kappa", where, "number"), "kappa", where)
    if not kappa > 0:
        raise ValueError(f"{where}: \"kappa\" must be in (0, 1], got {kappa!r}")
    eps = _field(d, "epsilon", where, "number", optional=True)
    delta = _field(d, "delta", where, "number", optional=True)
    if delta is not None and not 0 < delta < 1:
        raise ValueError(f"{where}: \"delta\" must be in (0, 1), got {delta!r}")
    common = dict(kappa=kappa, target_epsilon=None if eps is None else float(eps),
                  delta=None if delta is None else float(delta), source="json", path=path, **st)
    from rerokit.experiments.audit_outcome import AuditOutcome

    gradient = AuditOutcome.kind_of(d) == "gradient"
    if "success" in d and not gradient:
        from rerokit.attacks.result import AttackResult

        attack = _check_attack(_field(d, "attack", where, "str", optional=True) or "prior-aware", where)
        p = _check_prob(d["success"], "success", where)
        k = round(p * n)
        if abs(k / n - p) > 1e-9:
            raise ValueError(f"{where}: \"success\" = {p!r} is not a count out of trials = {n}")
        r = AttackResult.from_successes([True] * k + [False] * (n - k), seed=st["seed"])
        return AuditSummary(attack=attack, successes=k, trials=n, success=r.value, interval=r.interval, **common)
    # the gradient audit prints its primary result (prior_success_<N>) as "success" (AuditOutcome.to_dict)
    metric = "success" if gradient and "success" in d else next(
        (key for key in d if re.fullmatch(r"prior_success_\d+", str(key))), None)
    if metric is None:
        raise ValueError(f"{where}: no success rate found (expected \"success\" from 'audit prior-aware' or "
                         "\"prior_success_N\" from 'audit gradient')")
    p = _check_prob(d[metric], metric, where)
    lo = _check_prob(_field(d, "ci_low", where, "number"), "ci_low", where)
    hi = _check_prob(_field(d, "ci_high", where, "number"), "ci_high", where)
    return AuditSummary(attack="gradient", successes=None, trials=n, success=p, interval=(lo, hi), **common)


def _one_run_summary(d: dict, s: dict, st: dict, where: str, path: str | None) -> AuditSummary:
    """A one-run audit (``rerokit audit one-run``): accuracy over all canary slots of the run (its
    Clopper-Pearson interval as the audit printed it), the one-run result itself for its own lower bounds."""
    m = _field(d, "canaries", where, "int")
    k = _field(d, "options", where, "int")
    if m < 1 or k < 2:
        raise ValueError(f"{where}: \"canaries\" must be >= 1 and \"options\" >= 2")
    # the bound's slots (a split selection bounds on a held-out half); the accuracy is over all of them
    m = _field(s, "canaries", where + " settings", "int", optional=True) or m
    if m < d["canaries"]:
        raise ValueError(f"{where}: settings \"canaries\" = {m} is below the bound's {d['canaries']} slots")
    acc = _check_prob(_field(d, "accuracy_all", where, "number"), "accuracy_all", where)
    ci = _field(d, "accuracy_interval", where, "list")
    if len(ci) != 2:
        raise ValueError(f"{where}: \"accuracy_interval\" must be two numbers")
    lo, hi = (_check_prob(v, "accuracy_interval", where) for v in ci)
    for key in ("epsilon_lower", "mu_lower"):
        if not _field(d, key, where, "number") >= 0:
            raise ValueError(f"{where}: \"{key}\" must be a number >= 0, got {_short(d[key])}")
    eps = _field(s, "epsilon", where + " settings", "number", optional=True)
    delta = _field(s, "delta", where + " settings", "number", optional=True)
    threat = s.get("threat") if s.get("threat") in ("white-box", "black-box") else "canaries"
    return AuditSummary(attack=f"one-run.{threat}", successes=round(acc * m), trials=m, success=acc, interval=(lo, hi),
                        kappa=1.0 / k, target_epsilon=None if eps is None else float(eps),
                        delta=None if delta is None else float(delta), source="json", path=path, one_run=d, **st)


def _audit_from_lines(text: str, where: str, path: str) -> AuditSummary:
    """An :class:`AuditSummary` from the JSON lines an audit's ``--out`` writes.

    Read by the results file's one reader (:func:`rerokit.experiments.schema.parse_results`, as the
    audit re-opens it), every record checked against the audit's record schema and its semantic
    checks (a guess in the prior, ``success`` agreeing with guess and target, probabilities in
    [0, 1]): a file the audit would refuse to resume is refused here too."""
    from rerokit.experiments.schema import failing_key, gradient_problem, gradient_schema, parse_results
    from rerokit.experiments.schema import prior_aware_problem, prior_aware_schema

    parsed = parse_results(text, where, parse_constant=_reject_constant)
    if parsed.header is None:
        raise ValueError(f"{where}: holds no finished trial")
    s = parsed.header["settings"]
    st = _audit_settings(s, where)
    kappa = _settings_kappa(s, where)
    gradient = s.get("attack") == "gradient"
    if gradient:
        sizes = s.get("prior_sizes") or [s.get("prior_size")]
        if not (isinstance(sizes, list) and all(isinstance(n, int) and not isinstance(n, bool) and n >= 2
                                                for n in sizes)):
            raise ValueError(f"{where}: settings.prior_sizes must list integers >= 2, got {_short(sizes)}")
        schema, problem = gradient_schema(sizes), gradient_problem
    else:
        attacks = s.get("attacks")
        if not (isinstance(attacks, list) and attacks and all(isinstance(a, str) for a in attacks)):
            raise ValueError(f"{where}: settings.attacks must be a non-empty list of attack names, got {_short(attacks)}")
        N = _field(s, "prior_size", where + " settings", "int")
        schema = prior_aware_schema(N, attacks)
        problem = lambda r: prior_aware_problem(r, N, attacks)  # noqa: E731
    trials: dict[int, dict] = {}
    lines_of: dict[int, int] = {}
    for i, rec in parsed.records:
        if not (isinstance(rec, dict) and rec.get("kind") == "trial" and isinstance(rec.get("trial"), int)
                and not isinstance(rec.get("trial"), bool) and rec["trial"] >= 0):
            raise ValueError(f"{where}: line {i} is not a trial record ({{\"kind\": \"trial\", \"trial\": i, ...}})")
        bad = failing_key(rec, schema)
        err = (f"has no {bad[0]!r}" if bad[1] is None else f"{bad[0]!r} {bad[1]}") if bad else problem(rec)
        if err is not None:
            raise ValueError(f"{where}: line {i}: trial {rec['trial']}: {err}")
        if rec["trial"] in trials:
            raise ValueError(f"{where}: line {i}: trial {rec['trial']} appears twice")
        trials[rec["trial"]] = rec
        lines_of[rec["trial"]] = i
    if not trials:
        raise ValueError(f"{where}: holds no finished trial")
    recs = [trials[i] for i in sorted(trials)]
    if st["seed"] is not None:  # every record must be a trial of this run (its seed from the run's seed)
        from rerokit.experiments.schema import seed_problems

        bad_seed = seed_problems(recs, st["seed"])
        if bad_seed is not None:
            raise ValueError(f"{where}: line {lines_of[bad_seed[0]]}: trial {bad_seed[0]}: {bad_seed[1]}")
    common = dict(kappa=kappa, source="jsonl", path=path, **_declared(s, where), **st)
    from rerokit.attacks.result import AttackResult

    if gradient:
        n0 = sizes[0]
        vals = [float(r["prior_success"][str(n0)]) for r in recs]
        res = AttackResult.from_values(vals, seed=st["seed"], metric="success", support=(0.0, 1.0))
        common["kappa"] = 1.0 / n0
        return AuditSummary(attack="gradient", successes=None, trials=len(vals), success=res.value,
                            interval=res.interval, **common)
    attack = _check_attack(attacks[0], where)
    outcomes = [bool(r["success"][attack]) for r in recs]
    res = AttackResult.from_successes(outcomes, seed=st["seed"])
    return AuditSummary(attack=attack, successes=int(sum(outcomes)), trials=len(outcomes), success=res.value,
                        interval=res.interval, **common)


def load_audit(path: Any) -> AuditSummary:
    """Read an audit result: the JSON ``rerokit audit ... --json`` prints, or its ``--out`` JSON lines.

    Args:
      path: the file.

    Returns:
      The :class:`AuditSummary` (for JSON lines: all finished trials, the first listed attack).

    Raises:
      ValueError: the file cannot be read or is neither format.
    """
    p = os.fspath(path)
    where = f"audit {p}"
    text = _read_text(path, "audit")
    lines = text.splitlines()
    first = next((ln for ln in lines if ln.strip()), None)
    if first is None:
        raise ValueError(f"{where}: is empty (expected the JSON of 'rerokit audit ... --json' or its --out file)")
    try:
        head = json.loads(first, parse_constant=_reject_constant)
    except (ValueError, RecursionError):  # not JSON, or nested beyond the stack: read below, one error
        head = None
    if isinstance(head, dict) and head.get("kind") == "header":
        return _audit_from_lines(text, where, p)
    return audit_from_dict(_loads(text, "audit", path), where=where, path=p)


# --------------------------------------------------------------------------- data shape


def parse_data_shape(text: Any) -> tuple[int, ...]:
    """``"1x28x28"`` -> ``(1, 28, 28)`` (channels x height x width, or any 1-4 positive sizes).

    Args:
      text: a string of positive integers separated by ``x``, or a sequence of ints.

    Returns:
      The shape as a tuple of ints (their product, the data dimension, at most 10^8).

    Raises:
      ValueError: not of that form.
    """
    if isinstance(text, str):
        parts = text.strip().lower().split("x")
        if not all(re.fullmatch(r"[0-9]{1,9}", t) for t in parts):
            raise ValueError(f"data_shape must look like 1x28x28 (positive integers joined by x), got {text!r}")
        shape = tuple(int(t) for t in parts)
    else:
        try:
            shape = tuple(text)
        except TypeError:
            raise TypeError(f"data_shape must be a string like '1x28x28' or a tuple of ints, got {type(text).__name__}") from None
        if not all(isinstance(t, int) and not isinstance(t, bool) for t in shape):
            raise TypeError(f"data_shape must hold integers, got {shape!r}")
    if not 1 <= len(shape) <= 4 or any(t < 1 for t in shape) or math.prod(shape) > 10**8:
        raise ValueError(f"data_shape must be 1 to 4 positive sizes with a product <= 1e8 (e.g. 1x28x28), got {text!r}")
    return shape
