"""Per-command verdict functions: what each command's result means, in words, then its numbers.

:data:`VERDICTS` maps a command ("bound dpsgd", "calibrate dpsgd", ...) to a function
``result dict -> Summary`` (:class:`rerokit.report.terminal.Summary`: verdict sentences, the rows
of the table, notes). ``rerokit.cli._common.emit`` looks the command up here
(:func:`summary_for`) and prints it with :func:`rerokit.report.terminal.render`; a command
without an entry gets :func:`generic_summary` (a verdict from the fields it recognises, the
other fields as a table with internal names hidden or explained).

Rules every function follows: a verdict sentence first; each number once (a bracket beside its
value, not in a second row); bounds say their direction in the value ("<= 0.1942"); each row says
its method and whether it is certified or an estimate; internal fields (``direction``,
``floored``, ``threshold_epsilon``, ``value_discretization_interval``, ``log10_*`` when the
value is representable) are left to ``--json``. Only the standard library and
:mod:`rerokit.report.format` are used (the ``bound dpsgd`` path imports no scipy).

Typed results: ``bound dpsgd|dp|rdp|zcdp|gdp|fano|tradeoff|uninformed|mse-rdp``, ``kappa ...``,
``calibrate dpsgd`` and ``attack analytic|glm|reconn`` print the ``to_dict()`` of a class of
:mod:`rerokit.report.results`, and their verdicts read the JSON back with its ``from_dict`` (no string
keys); the audits' verdict reads its result as the
:class:`~rerokit.experiments.audit_outcome.AuditOutcome` the audit wrote. A key a command renames is
caught by :func:`summary_for`'s check (:data:`_TYPED`, :data:`_READABLE`), not shown as ``None``.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

from rerokit.report.format import Lead, fmt, fmt_bracket, fmt_bracket_log10, fmt_log10
from rerokit.report.model import MembershipFacts
from rerokit.report.results import (AnalyticAttackOutput, CalibrateOutput, ConversionBound, DpsgdNoPriorOutput,
                                    DpsgdOutput, FanoBound, GlmAttackOutput, KappaResult, MseRdpBound, ReconnOutput,
                                    TradeoffOutput, UninformedOutput)
from rerokit.report.terminal import HIDDEN_FIELDS, Row, Summary, generic_rows

__all__ = ["VERDICTS", "summary_for", "generic_summary"]


def _le(v: Any) -> str:
    return "\u2264 " + fmt(v)


def _ge(v: Any) -> str:
    return "\u2265 " + fmt(v)


def _kappa_str(k: Any, l10: Any) -> str:
    """kappa, by its log10 where it underflows."""
    if (k is None or k == 0 or (isinstance(k, float) and k < 1e-300)) and l10 is not None:
        return fmt_log10(l10)
    return fmt(k)


def _gamma_str(g: Any, l10: Any) -> str:
    """gamma, by its log10 where it underflows."""
    if isinstance(g, (int, float)) and g < 1e-300 and l10 is not None:
        return fmt_log10(l10)
    return fmt(g)


def _notes(d: dict[str, Any]) -> tuple[str, ...]:
    out = []
    for k in ("note",):
        if d.get(k):
            out.append(str(d[k]))
    det = d.get("details")
    if isinstance(det, dict) and det.get("note"):
        out.append(str(det["note"]))
    if isinstance(d.get("comparisons"), dict) and d["comparisons"].get("note"):
        out.append(str(d["comparisons"]["note"]))
    return tuple(out)


def _odds_vs_chance(g: Any, log10_gamma: Any, k: Any, log10_kappa: Any) -> str:
    """'20 in 100 attempts, against 10 by chance' (Nanayakkara et al. 2023: frequencies, rounded up)."""
    from rerokit.report.format import chance, odds

    if not isinstance(g, (int, float)) or not isinstance(k, (int, float)):
        return "n/a"
    o = odds(float(g), log10_gamma)
    c = chance(float(k), log10_kappa)
    if o.endswith(" in 100") and c.endswith(" in 100"):
        c = c[: -len(" in 100")]
    return f"{o} attempts, against {c} by chance"


def _run_text(sigma: Any, q: Any, steps: Any) -> str:
    """"σ = 1, q = 0.01, T = 100" (the values given)."""
    return ", ".join(f"{sym} = {fmt(v)}" for sym, v in (("\u03c3", sigma), ("q", q), ("T", steps)) if v is not None)


def _settings_text(s: dict[str, Any] | None) -> str:
    if not isinstance(s, dict):
        return ""
    parts = []
    for k, sym in (("noise_multiplier", "\u03c3"), ("sample_rate", "q"), ("sampling_rate", "q"), ("steps", "T")):
        if s.get(k) is not None:
            parts.append(f"{sym} = {fmt(s[k])}")
    return ", ".join(parts)


def _membership_rows(m: MembershipFacts, section: str = "Membership inference (same run)") -> list[Row]:
    rows = []
    first = True
    for pt in m.tpr_at_fpr:
        rows.append(Row(f"TPR at FPR {float(pt.fpr) * 100:g}%", _le(pt.tpr), fmt_bracket(pt.interval),
                        "f-DP curve, same PLD", "certified", section=section if first else None))
        first = False
    rows.append(Row("advantage (TPR \u2212 FPR)", _le(m.advantage), fmt_bracket(m.advantage_interval),
                    "same curve", "certified", section=section if first else None))
    rows.append(Row(f"accuracy (Bayes, prior {fmt(m.prior_membership)})", _le(m.bayes_accuracy),
                    fmt_bracket(m.bayes_accuracy_interval), "same curve", "certified"))
    return rows


# --------------------------------------------------------------------------- bound dpsgd


_DPSGD_METHOD = {
    "exact": ("Hayes et al. 2023 Thm 2, certified PLD", "certified"),
    "closed-form": ("Hayes et al. 2023 Thm 2, closed form (q = 1)", "exact"),
    "envelope": ("closed-form envelope (\u03c3 outside the PLD range)", "certified"),
    "mc": ("Hayes et al. 2023 Alg. 1 (Monte Carlo)", "estimate (95% CI)"),
}


def _bound_dpsgd_no_prior(o: DpsgdNoPriorOutput) -> Summary:
    m = MembershipFacts.from_dict(o.membership)
    p = m.tpr_at(0.01)
    verdict = [(Lead("Membership inference: "), f"on DP-SGD ({_run_text(o.noise_multiplier, o.sample_rate, o.steps)}) "
                f"any test of \"was this record in "
                f"training?\" has TPR \u2264 {fmt(p.tpr if p is not None else None)} at 1% FPR and advantage \u2264 "
                f"{fmt(m.advantage)} (certified); the run is (\u03b5 = {fmt(o.epsilon)}, \u03b4 = "
                f"{fmt(o.delta)})-DP. Give a prior (--prior-size) for the reconstruction bound.")]
    rows = [Row(f"\u03b5 at \u03b4 = {fmt(o.delta)}", _le(o.epsilon), "", "PLD, add-or-remove", "certified",
                section="Differential privacy")]
    rows += _membership_rows(m, section="Membership inference")
    return Summary(tuple(verdict), tuple(rows), (), ())


def _read_dpsgd(d: dict[str, Any]) -> DpsgdOutput | DpsgdNoPriorOutput:
    """``bound dpsgd``'s JSON read back as what it printed: with a prior (a ``gamma``) or without."""
    return DpsgdOutput.from_dict(d) if "gamma" in d else DpsgdNoPriorOutput.from_dict(d)


def _bound_dpsgd(d: dict[str, Any]) -> Summary:
    """``bound dpsgd``: its JSON read back as the :class:`~rerokit.report.results.DpsgdOutput` (or, without a
    prior, :class:`~rerokit.report.results.DpsgdNoPriorOutput`) it printed."""
    o = _read_dpsgd(d)
    if isinstance(o, DpsgdNoPriorOutput):
        return _bound_dpsgd_no_prior(o)
    method, status = _DPSGD_METHOD.get(o.method, (str(o.method), ""))
    est = o.method == "mc"
    kappa, gamma = _kappa_str(o.kappa, o.log10_kappa), _gamma_str(o.gamma, o.log10_gamma)
    verdict = [(Lead("Reconstruction: "), f"with a prior whose blind guess succeeds with probability "
                f"\u03ba = {kappa}, "
                + ("Monte Carlo estimates" if est else "no attack on DP-SGD")
                + f" ({_run_text(o.noise_multiplier, o.sample_rate, o.steps)})"
                + (f" the best attack's success at about {gamma} (an estimate, not a bound)." if est else
                   f" succeeds with probability above {gamma} (certified): at most "
                   f"{_odds_vs_chance(o.gamma, o.log10_gamma, o.kappa, o.log10_kappa)}.")),]
    m = MembershipFacts.from_dict(o.membership)
    p = m.tpr_at(0.01)
    if p is not None:
        verdict.append((Lead("Membership inference: "), f"on the same run, TPR at 1% FPR \u2264 "
                        f"{fmt(p.tpr)}; advantage \u2264 {fmt(m.advantage)} (certified)."))
    # a gamma below the smallest double is shown by its log10, and so is its bracket (the float one is [0, 5e-324])
    tiny = isinstance(o.gamma, float) and o.gamma < 1e-300
    detail = fmt_bracket_log10(o.log10_interval) if tiny else fmt_bracket(o.interval)
    rows = [
        Row("\u03b3: success of any reconstruction attack", ("\u2248 " if est else "\u2264 ") + gamma,
            ("95% CI " if est else "") + detail, method, status, section="Reconstruction"),
        Row("\u03ba: success of a blind guess (the prior)", "= " + kappa, "", "prior", "exact"),
        Row("advantage (\u03b3 \u2212 \u03ba) / (1 \u2212 \u03ba)", ("\u2248 " if est else "\u2264 ") + fmt(o.advantage),
            "", "Hayes et al. 2023 App. H, Eq. 4", status),
    ]
    det = o.details
    if est:
        rows.append(Row("Monte Carlo samples (seed)", f"{det['mc_samples']} ({det['seed']})",
                        f"standard error {fmt(det['standard_error'])}", "", ""))
    c = o.comparisons
    if c.rdp_gamma is not None:
        rows.append(Row("\u03b3 from RDP (looser, for comparison)", _le(c.rdp_gamma), "",
                        f"Balle et al. 2022 Thm 2, order {fmt(c.rdp_order)}", "certified", section="Comparisons"))
    if c.epsilon is not None:
        rows.append(Row(f"\u03b5 at \u03b4 = {fmt(c.delta)}", "inf" if c.epsilon == math.inf else _le(c.epsilon),
                        "", "PLD, add-or-remove", "certified"))
    rows += _membership_rows(m)
    notes = [str(n) for n in (det.get("note"), c.note) if n]
    if det.get("floored") and not det.get("note"):
        notes.append("the PLD's infinity mass / round-off floor dominates at this kappa (the value stays valid)")
    return Summary(tuple(verdict), tuple(rows), (), tuple(notes))


# --------------------------------------------------------------------------- bound dp / rdp / zcdp / gdp / fano


def _guarantee_summary(r: ConversionBound | FanoBound) -> Summary:
    """The verdict of a bound from a privacy guarantee (both classes have the attributes read here)."""
    inp = r.inputs
    given = [(sym, inp[k]) for k, sym in (("epsilon", "\u03b5"), ("alpha", "\u03b1"), ("rho", "\u03c1"), ("mu", "\u03bc"),
                                         ("noise_multiplier", "\u03c3")) if inp.get(k) is not None]
    if inp.get("mutual_information") is not None:
        given.append(("mutual information I", inp["mutual_information"]))
    g = ", ".join(f"{sym} = {fmt(v)}" for sym, v in given) or "this guarantee"
    kappa, gamma = _kappa_str(r.kappa, r.log10_kappa), _gamma_str(r.gamma, r.log10_gamma)
    verdict = [(Lead("Reconstruction: "), f"a mechanism with {g} lets no attack reconstruct a target from a prior "
                f"with blind guess \u03ba = {kappa} with probability above {gamma} ({r.bound}).")]
    rows = [Row("\u03b3: success of any reconstruction attack", "\u2264 " + gamma, "", r.bound, "certified"),
            Row("\u03ba: success of a blind guess (the prior)", "= " + kappa, "", "prior", "exact"),
            Row("advantage (\u03b3 \u2212 \u03ba) / (1 \u2212 \u03ba)", _le(r.advantage), "", "", "certified")]
    if r.mutual_information_bound is not None:
        rows.append(Row("mutual information bound (nats)", _le(r.mutual_information_bound), "", "Guo et al. 2022b",
                        "certified"))
    for k, lab in (("sensitivity", "sensitivity"), ("prior_size", "prior size")):
        if inp.get(k) is not None:
            rows.append(Row(lab, fmt(inp[k])))
    return Summary(tuple(verdict), tuple(rows), (), ())


def _bound_conversion(d: dict[str, Any]) -> Summary:
    """``bound dp|rdp|zcdp|gdp``: its JSON read back as the :class:`~rerokit.report.results.ConversionBound` it printed."""
    return _guarantee_summary(ConversionBound.from_dict(d))


def _bound_fano(d: dict[str, Any]) -> Summary:
    """``bound fano``: its JSON read back as the :class:`~rerokit.report.results.FanoBound` it printed."""
    return _guarantee_summary(FanoBound.from_dict(d))


# --------------------------------------------------------------------------- bound tradeoff


def _bound_tradeoff(d: dict[str, Any]) -> Summary:
    """``bound tradeoff``: its JSON read back as the :class:`~rerokit.report.results.TradeoffOutput` it printed."""
    r = TradeoffOutput.from_dict(d)
    run = _run_text(r.noise_multiplier, r.sample_rate, r.steps)
    verdict = [(Lead("Membership inference: "), f"on DP-SGD ({run}; {str(r.adjacency).replace('_', '-')} adjacency) "
                f"no test's advantage TPR \u2212 FPR exceeds {fmt(r.advantage)} and no test's TPR exceeds the "
                "values below at each FPR (certified brackets).")]
    rows: list[Row] = []
    for i, p in enumerate(r.points or ()):
        rows.append(Row(f"TPR at FPR {fmt(p.fpr)}", _le(p.tpr[1]), fmt_bracket(p.tpr),
                        f"\u03b2 in {fmt_bracket(p.beta)}", "certified", section="Trade-off curve" if i == 0 else None))
    if r.curve is not None:
        rows.append(Row("curve points (FPR, \u03b2 bracket, TPR bracket)", f"{len(r.curve.alpha)} points", "", "see --json",
                        "certified", section="Trade-off curve"))
    rows.append(Row("largest bracket width", fmt(r.max_error), "", "numerical error", ""))
    rows.append(Row("advantage (TPR \u2212 FPR)", _le(r.advantage), fmt_bracket(r.advantage_interval),
                    "same curve (TV)", "certified", section="Derived risks"))
    rows.append(Row(f"accuracy (Bayes, prior {fmt(r.prior_membership)})", _le(r.bayes_accuracy),
                    fmt_bracket(r.bayes_accuracy_interval), "same curve", "certified"))
    return Summary(tuple(verdict), tuple(rows), (), ())


# --------------------------------------------------------------------------- bound uninformed


def _bound_uninformed(d: dict[str, Any]) -> Summary:
    """``bound uninformed``: its JSON read back as the :class:`~rerokit.report.results.UninformedOutput` it printed
    (the command itself prints :func:`rerokit.cli.bound_uninformed.summary`, which adds the prior-free attacks)."""
    o = UninformedOutput.from_dict(d)
    thr = f"PSNR \u2265 {fmt(o.psnr_threshold_db)} dB" if o.metric == "psnr" else f"MSE \u2264 {fmt(o.mse_threshold)}"
    gt = _gamma_str(o.gamma, o.log10_gamma)
    # Riess et al. 2024's laws are those of the optimal UNBIASED analytic attack (kind "attack law"), not
    # bounds on every attacker: a constant guess or a shrunk estimate can do better (bounds.uninformed_scope)
    text = (f"the optimal unbiased analytic gradient inversion (no prior; smallest record norm r = "
            f"{fmt(o.min_norm)}, \u03c3 = {fmt(o.noise_multiplier)}, N = {o.dim}) reaches {thr} "
            f"with probability "
            f"{gt} from {'one release' if o.releases == 1 else str(o.releases) + ' averaged releases'}")
    if o.gamma_over_steps is not None:
        text += f", {fmt(o.gamma_over_steps)} averaging every release over {o.steps} steps"
    verdict = [(Lead("Uninformed adversary: "), text + f"; expected MSE \u2265 {fmt(o.expected_mse)}, "
                f"NCC \u2264 {fmt(o.ncc_bound)} (the law of that attack, not a bound on every attacker).")]
    rows = [Row(f"P({thr})", "= " + gt, "", "Riess et al. 2024 Prop. 3" if o.metric != "psnr" else "Riess et al. 2024 Props. 4-5",
                "attack law", section="Reconstruction success")]
    if o.gamma_over_steps is not None:
        rows.append(Row(f"P({thr}) over {o.steps} steps (q = {fmt(o.sample_rate)})",
                        _le(o.gamma_over_steps), "", "Riess et al. 2024 Sec. 4.3 + Prop. 7", "attack law"))
    if o.gamma_data_independent is not None:
        rows.append(Row("data-independent version (C \u2264 r)", _le(o.gamma_data_independent), "",
                        "Riess et al. 2024 Prop. 3 with r = C", "attack law"))
    rows.append(Row("expected MSE", _ge(o.expected_mse), "", "Riess et al. 2024 Prop. 2: \u03c3\u00b2 r\u00b2 / K", "exact",
                    section="Error"))
    if o.expected_mse_one_row is not None:
        rows.append(Row("expected MSE with one row (not optimal)", "= " + fmt(o.expected_mse_one_row), "",
                        "Riess et al. 2024 Eq. 17", "exact"))
    rows.append(Row("NCC", _le(o.ncc_bound), "", "Riess et al. 2024 Prop. 6", "attack law"))
    if o.optimal_rows is not None:
        rows.append(Row("attacker's optimal rows M", fmt(o.optimal_rows), "", "\u2308(C / r)\u00b2\u2309", "exact",
                        section="Attack"))
    rows.append(Row("smallest record norm r", fmt(o.min_norm), "", str(o.min_norm_source), "input", section="Inputs"))
    if o.metric == "psnr":
        rows.append(Row("MSE threshold of the PSNR threshold", fmt(o.mse_threshold), "", "10^(\u2212PSNR/10) R\u00b2",
                        "exact"))
    return Summary(tuple(verdict), tuple(rows), (), (o.note,) if o.note else ())


# --------------------------------------------------------------------------- bound mse-rdp / fil


def _bound_mse_rdp(d: dict[str, Any]) -> Summary:
    """``bound mse-rdp``: its JSON read back as the :class:`~rerokit.report.results.MseRdpBound` it printed."""
    r = MseRdpBound.from_dict(d)
    # the relation is stated before the guarantee ("replace-one (2, eps)-RDP"): Thm 1 needs replace-one
    rel = f"{r.neighbouring_relation} " if r.neighbouring_relation else ""
    verdict = [(Lead("Released model, error view: "), f"an unbiased attacker's mean squared error per coordinate is "
                f"at least {fmt(r.mse_lower_bound)} (Guo et al. 2022, Thm 1, unbiased attacker; "
                f"{rel}(2, {fmt(r.epsilon_rdp2)})-RDP).")]
    order = r.details.get("order_used")
    rows = [Row("MSE of an unbiased attacker", _ge(r.mse_lower_bound), "", str(r.reference), "certified"),
            Row("(2, \u03b5)-RDP \u03b5", "= " + fmt(r.epsilon_rdp2), "",
                str(r.source) + (f", order {fmt(order)}" if order else ""), "input"),
            # one diameter per coordinate, or one for all (a list made fmt raise before)
            Row("diameter per coordinate", ", ".join(map(fmt, r.diameter)) if isinstance(r.diameter, tuple)
                else fmt(r.diameter), "", "input", ""),
            Row("data dimension d", fmt(r.dim), "", "input", "")]
    if r.details.get("gdp_mu") is not None:
        rows.append(Row("\u03bc of the output perturbation (GDP)", fmt(r.details["gdp_mu"]), "", "\u0394 / \u03c3", "exact"))
    return Summary(tuple(verdict), tuple(rows), (), (r.note,) if r.note else ())


# --------------------------------------------------------------------------- kappa


def _kappa_summary(r: KappaResult) -> Summary:
    kappa = _kappa_str(r.kappa, r.log10_kappa)
    verdict = [(Lead("Baseline: "), f"without the model, the best guess from this prior ({r.prior}) succeeds "
                f"with probability \u03ba = {kappa}; every reconstruction bound starts from it.")]
    rows = [Row("\u03ba: success of a blind guess", "= " + kappa, "", str(r.prior),
                "upper confidence bound" if "confidence" in r.params else "exact")]
    rows += [_dict_row(k, v, _KAPPA_HELP) for k, v in {**r.params, **r.extras}.items()
             if k not in HIDDEN_FIELDS and not isinstance(v, (dict, list))]
    return Summary(tuple(verdict), tuple(rows), (), ())


def _kappa_verdict(command: str) -> Callable[[dict[str, Any]], Summary]:
    """The verdict of ``kappa <command>``: its JSON read back as the
    :class:`~rerokit.report.results.KappaResult` it printed."""

    def verdict(d: dict[str, Any]) -> Summary:
        return _kappa_summary(KappaResult.from_dict(command, d))

    return verdict


_KAPPA = {c: _kappa_verdict(c) for c in KappaResult.PARAMS}


_KAPPA_HELP = {
    "delta": "per-pixel tolerance \u03b4", "rho": "fraction \u03c1 of pixels that must match",
    "levels": "grey levels per pixel", "strict": "strict |z \u2212 \u1e91| < \u03b4",
    "per_coordinate_p": "per-pixel success of the best guess", "required_coordinates": "pixels that must match",
    "eta": "error threshold \u03b7", "sigma": "prior standard deviation", "dim": "dimension d",
    "prior_size": "candidates n", "n_samples": "samples N", "kappa_hat": "empirical \u03ba (covering bound)",
    "kappa_hat_plugin": "empirical \u03ba (plug-in, a lower bound)", "confidence": "confidence",
    "method": "confidence bound", "metric": "distance",
}


def _dict_row(k: str, v: Any, help: dict[str, str] | None = None) -> Row:
    """A plain row ``label: value`` for field ``k`` (label from ``help``, else FIELD_HELP, else the key)."""
    from rerokit.report.terminal import FIELD_HELP

    label = (help or {}).get(k) or FIELD_HELP.get(k, k.replace("_", " "))
    return Row(label, fmt(v) if not isinstance(v, str) else v)


# --------------------------------------------------------------------------- calibrate


def _calibrate(d: dict[str, Any]) -> Summary:
    """``calibrate dpsgd``: its JSON read back as the :class:`~rerokit.report.results.CalibrateOutput` it printed."""
    o = CalibrateOutput.from_dict(d)
    c = o.calibration
    kappa = _kappa_str(c.kappa, o.log10_kappa)
    if o.solved == "steps":
        solved = f"at most {c.steps} steps (\u03c3 = {fmt(c.noise_multiplier)}, q = {fmt(c.sample_rate)})"
    else:
        solved = f"a noise multiplier \u03c3 \u2265 {fmt(c.noise_multiplier)} (q = {fmt(c.sample_rate)}, T = {c.steps})"
    verdict = [(Lead("Calibration: "), f"to keep every reconstruction attack below {fmt(c.target_gamma)} "
                f"(prior with blind guess \u03ba = {kappa}), use {solved}; there \u03b3 \u2264 {fmt(c.gamma)}"
                + (f" and \u03b5 = {fmt(c.epsilon)} at \u03b4 = {fmt(c.delta)}." if c.epsilon is not None else "."))]
    if o.solved == "steps":
        rows = [Row("steps T allowed", "\u2264 " + str(c.steps), "", "largest T with \u03b3 \u2264 target", "certified")]
    else:
        rows = [Row("noise multiplier \u03c3 needed", "\u2265 " + fmt(c.noise_multiplier), "",
                    "smallest \u03c3 with \u03b3 \u2264 target (rtol 1e-4)", "certified")]
    g, err = c.gamma, c.gamma_error
    rows.append(Row("\u03b3 there", _le(g), fmt_bracket([g - err, g]) if isinstance(g, float) and
                    isinstance(err, float) else "", "Hayes et al. 2023 Thm 2, PLD", "certified"))
    rows.append(Row("target \u03b3", fmt(c.target_gamma), "", "input", ""))
    rows.append(Row("\u03ba: success of a blind guess", "= " + kappa, "", "prior", "exact"))
    if c.epsilon is not None:
        rows.append(Row(f"\u03b5 at \u03b4 = {fmt(c.delta)}", _le(c.epsilon), "", "PLD, add-or-remove", "certified"))
    rows.append(Row("search", f"{c.evaluations} evaluations", f"bracket {fmt_bracket(c.bracket)}", "one monotone solver", ""))
    return Summary(tuple(verdict), tuple(rows), (), (o.note,) if o.note else ())


# --------------------------------------------------------------------------- audits


def _audit(d: dict[str, Any]) -> Summary:
    """The verdict of ``rerokit audit prior-aware|gradient``: its JSON read back as the
    :class:`~rerokit.experiments.audit_outcome.AuditOutcome` the audit wrote (attributes, no string keys)."""
    from rerokit.experiments.audit_outcome import AuditOutcome

    o = AuditOutcome.from_dict(d)
    if o.out:  # the result is read by `rerokit report --audit FILE`: print each number once, there
        n = o.trials or 0
        return Summary((f"Audit: {n} trial{'s' if n != 1 else ''} written to {o.out} (seed {o.seed}). "
                        f"Its result against the certified bound, with every other risk of the run: "
                        f"rerokit report --audit {o.out} (or add --json here for the numbers alone).",), (), (), _notes(d))
    grad = o.kind == "gradient"
    succ, lo, hi = o.result.value, o.result.ci_low, o.result.ci_high
    attack = "gradient" if grad else o.attack
    n = o.trials or 0
    judged = not grad or n >= 2  # a mean of one per-trial probability has no interval
    above = judged and isinstance(lo, (int, float)) and isinstance(o.gamma, (int, float)) and lo > o.gamma
    eps = o.epsilon
    run = _settings_text(o.settings) + (f"; calibrated for \u03b5 = {fmt(eps)} at \u03b4 = {fmt(o.delta)}" if eps else "")
    did = ("picked the target among the prior's candidates with mean probability" if grad else
           "reconstructed the target with rate")
    ci = f"95% CI [{fmt(lo)}, {fmt(hi)}]" if judged else "one trial: no interval"
    e = o.empirical
    verdict = [(Lead("Audit: "), f"the {attack} attack on {n} DP-SGD model{'s' if n != 1 else ''} ({run}) "
                f"{did} {fmt(succ)} ({ci}); the certified bound at the prior's blind guess "
                f"\u03ba = {fmt(o.kappa)} is {fmt(o.gamma)}"
                + (" \u2014 the attack is ABOVE the bound: check the settings." if above else
                   " \u2014 consistent." if judged else ".")
                + (f" It proves \u03b5 \u2265 {fmt(e.epsilon_lower)} and \u03bc \u2265 "
                   f"{fmt(e.mu_gdp_lower)} ({fmt(100 * e.confidence)}% confidence)."
                   if e is not None and e.mu_gdp_lower is not None else ""))]
    rows = [Row(f"attack success ({attack})", fmt(succ), f"95% CI {fmt_bracket([lo, hi], 4)}" if judged else ci,
                "Student-t on the mean" if grad else "Clopper-Pearson", "estimate", section="Attack"),
            Row("\u03b3: certified bound at \u03ba", _le(o.gamma), "", "Hayes et al. 2023 Thm 2, PLD", "certified"),
            Row("\u03ba: success of a blind guess", "= " + fmt(o.kappa), "", "prior", "exact")]
    if o.mse is not None:
        rows.append(Row("reconstruction MSE", fmt(o.mse.value), f"95% CI {fmt_bracket([o.mse.ci_low, o.mse.ci_high], 4)}",
                        "Student-t on the mean", "estimate"))
    for k, v in o.attacks.items():
        if k not in (attack, "mse") and not k.startswith("prior_success"):
            rows.append(Row(f"attack success ({k})", fmt(v.value), f"95% CI {fmt_bracket([v.ci_low, v.ci_high], 4)}",
                            "Clopper-Pearson", "estimate"))
    if e is not None and e.mu_gdp_lower is not None:
        conf = fmt(100 * e.confidence)
        rows.append(Row("\u03b5 proven by the audit", _ge(e.epsilon_lower), "",
                        "log((s_lo \u2212 \u03b4)/\u03ba)", f"empirical ({conf}%)", section="What the attack proves"))
        rows.append(Row("\u03bc proven by the audit", _ge(e.mu_gdp_lower), "",
                        "\u03a6\u207b\u00b9(s_lo) \u2212 \u03a6\u207b\u00b9(\u03ba)", f"empirical ({conf}%)"))
        rows.append(Row("success, one-sided lower end s_lo", fmt(e.success_lower), "", "Clopper-Pearson", "estimate"))
    if o.mean_target_clipped_fraction is not None:
        rows.append(Row("steps where the target's gradient was clipped", f"{o.mean_target_clipped_fraction * 100:.3g}%",
                        "", "mean over trials", "measured"))
    rows.append(Row("noise multiplier \u03c3", fmt(o.noise_multiplier), "",
                    "calibrated for \u03b5" if eps else "given", "input", section="Run"))
    rows.append(Row("trials (seed)", f"{o.trials} ({o.seed})", "", "", ""))
    return Summary(tuple(verdict), tuple(rows), (), _notes(d))


# --------------------------------------------------------------------------- attacks


def _ci(v: Any) -> str:
    return f"95% CI {fmt_bracket(v, 4)}" if isinstance(v, (list, tuple)) and len(v) == 2 else ""


def _attack_analytic(d: dict[str, Any]) -> Summary:
    """``attack analytic``: its JSON read back as the :class:`~rerokit.report.results.AnalyticAttackOutput` it printed."""
    o = AnalyticAttackOutput.from_dict(d)
    s, mean = o.settings, o.means
    eta = s.get("mse_threshold")
    ci = _ci(o.empirical_success_ci)
    verdict = [(Lead("Uninformed gradient inversion, measured: "),
                f"the optimal analytic attack (Riess et al. 2024 Cor. 1; \u03c3 = {fmt(s.get('noise_multiplier'))}, C = "
                f"{fmt(s.get('clip'))}, M = {s.get('rows')} rows) on {s.get('targets')} {s.get('dataset', '')} targets "
                f"reached MSE \u2264 {fmt(eta)} in a fraction {fmt(o.empirical_success)} of them "
                f"({ci}); Thm 2 predicts {fmt(o.predicted_success)}, and no "
                f"analytic attack exceeds {fmt(o.predicted_gamma)} (Prop. 3). Mean MSE {fmt(mean['mse'])}, "
                f"predicted {fmt(o.predicted_expected_mse)}.")]
    rows = [
        Row(f"P(MSE \u2264 {fmt(eta)}), measured", fmt(o.empirical_success), ci, "Clopper-Pearson", "estimate",
            section="Success"),
        Row(f"P(MSE \u2264 {fmt(eta)}), predicted", "= " + fmt(o.predicted_success), "",
            "Riess et al. 2024 Thm 2 at these targets' norms", "exact"),
        Row("bound over the dataset", _le(o.predicted_gamma), "", "Riess et al. 2024 Prop. 3 with r = min norm", "certified"),
        Row("mean MSE, measured", fmt(mean["mse"]), "", "mean over targets", "estimate", section="Error"),
        Row("expected MSE, predicted (these rows)", "= " + fmt(o.predicted_expected_mse), "",
            "Riess et al. 2024 Eq. 17", "exact"),
        Row("expected MSE, optimal rows", "= " + fmt(o.predicted_expected_mse_optimal), "",
            "Riess et al. 2024 Prop. 1-2: \u03c3\u00b2\u2016X\u2016\u00b2", "exact"),
        Row("mean PSNR (dB)", fmt(mean.get("psnr")), "", "mean over targets", "estimate"),
        Row("mean NCC", fmt(mean["ncc"]), "", "mean over targets", "estimate"),
        Row("NCC bound", _le(o.ncc_bound), "", "Riess et al. 2024 Prop. 6", "certified"),
        Row("mean SSIM", fmt(mean.get("ssim")), "", "mean over targets", "estimate"),
        Row("targets whose gradient was clipped", f"{fmt(100 * o.clipped_fraction)}%"
            if isinstance(o.clipped_fraction, (int, float)) else "n/a", "", "", "measured"),
    ]
    notes = []
    if o.ncc_undefined:
        notes.append(f"NCC undefined for {o.ncc_undefined} constant targets (left out of mean_ncc)")
    notes.append("per-target values (index, mse, psnr, ncc, ssim, variance, clip factor): --json")
    return Summary(tuple(verdict), tuple(rows), (), tuple(notes))


def _attack_glm(d: dict[str, Any]) -> Summary:
    """``attack glm``: its JSON read back as the :class:`~rerokit.report.results.GlmAttackOutput` it printed."""
    o = GlmAttackOutput.from_dict(d)
    s, r = o.settings, o.result
    lo, hi = r.interval
    verdict = [(Lead("GLM attack (Balle et al. 2022, Thm 1): "),
                f"from a {s.model} model fitted on {s.dataset} with output noise "
                f"{fmt(s.noise)}, the closed-form attack reconstructs the missing record with mean MSE "
                f"{fmt(r.value)} (95% CI [{fmt(lo)}, {fmt(hi)}], {o.targets} "
                "trials)" + (" - exactly, as without noise." if o.exact else "."))]
    rows = [Row("mean MSE", fmt(r.value), f"95% CI {fmt_bracket([lo, hi], 4)}", "Student-t on the mean", "estimate"),
            Row("median / largest MSE", f"{fmt(o.mse_median)} / {fmt(o.mse_max)}", "", "over trials", "estimate"),
            Row("targets (not identifiable)", f"{o.targets} ({o.non_identifiable})", "", "", "")]
    if o.label_accuracy is not None:
        rows.append(Row("label recovered", f"{fmt(100 * o.label_accuracy)}%", "", "", "estimate"))
    return Summary(tuple(verdict), tuple(rows), (), ())


def _attack_reconn(d: dict[str, Any]) -> Summary:
    """``attack reconn``: its JSON read back as the :class:`~rerokit.report.results.ReconnOutput` it printed."""
    o = ReconnOutput.from_dict(d)
    verdict = [(Lead("Reconstructor network (Balle et al. 2022, Sec. IV-V): "),
                f"on {o.targets} released models (\u03c3 = {fmt(o.noise_multiplier)}) it reconstructs "
                f"targets with mean MSE {fmt(o.mse)} against {fmt(o.nn_oracle_mse)} for the nearest-"
                f"neighbour oracle, beating the oracle on {fmt(o.success_rate)} of them "
                f"({_ci(o.success_rate_ci)}).")]
    rows = [Row("mean MSE", fmt(o.mse), _ci(o.mse_ci), "Student-t on the mean", "estimate", section="Reconstruction"),
            Row("nearest-neighbour oracle MSE", fmt(o.nn_oracle_mse), "", "Balle et al. 2022 Table II", "estimate"),
            Row("targets beaten the oracle on", fmt(o.success_rate), _ci(o.success_rate_ci), "Clopper-Pearson", "estimate"),
            Row("KL (attack / oracle)", f"{fmt(o.kl)} / {fmt(o.nn_oracle_kl)}", "", "Sec. V-B", "estimate"),
            Row("shadow-model MSE (training)", fmt(o.shadow_train_mse), "", "", "estimate", section="Models"),
            Row("released models' test accuracy", fmt(o.released_model_accuracy), "", "", "measured"),
            Row("noise multiplier \u03c3", fmt(o.noise_multiplier), "", "for (--epsilon, --delta)", "input")]
    notes = [f"{k}: {v}" for k, v in (("png", o.png), ("jsonl", o.jsonl)) if v]
    return Summary(tuple(verdict), tuple(rows), (), tuple(notes))


# --------------------------------------------------------------------------- generic


def generic_summary(command: str, d: dict[str, Any]) -> Summary:
    """Verdict from recognised fields and the rest as a table (commands without their own function).

    Args:
      command: the command ("attack glm", ...).
      d: its JSON-ready result.

    Returns:
      The :class:`~rerokit.report.terminal.Summary`.
    """
    parts = []
    if isinstance(d.get("gamma"), (int, float)):
        parts.append(f"reconstruction success at most {fmt(d['gamma'])}"
                     + (f" (blind guess {fmt(d['kappa'])})" if isinstance(d.get("kappa"), (int, float)) else ""))
    for key, lab in (("success", "measured success"), ("success_rate", "measured success"),
                     ("empirical_success", "measured success"), ("mse", "mean MSE"), ("mean_mse", "mean MSE")):
        v = d.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            lo = d.get("ci_low") if key in ("success", "mse") else None
            hi = d.get("ci_high") if key in ("success", "mse") else None
            ci = d.get(f"{key}_ci")
            if isinstance(ci, list) and len(ci) == 2:
                lo, hi = ci
            parts.append(f"{lab} {fmt(v)}" + (f" (95% CI [{fmt(lo)}, {fmt(hi)}])" if lo is not None else ""))
            break
    if isinstance(d.get("mse_lower_bound_min"), (int, float)):
        parts.append(f"MSE lower bound {fmt(d['mse_lower_bound_min'])} to {fmt(d.get('mse_lower_bound_max'))} over "
                     "samples")
    files = [v for k, v in d.items() if k in ("png", "csv", "jsonl", "out", "files") and v]
    if files:
        parts.append("files written: " + ", ".join(str(f) if not isinstance(f, (list, dict)) else
                                                   f"{len(f)} files" for f in files))
    text = "; ".join(parts) + "." if parts else "done; the results follow."
    verdict = [(Lead(f"rerokit {command}: "), text)]
    return Summary(tuple(verdict), generic_rows(d), (), _notes(d))


VERDICTS: dict[str, Callable[[dict[str, Any]], Summary]] = {
    "bound dpsgd": _bound_dpsgd,
    "bound dp": _bound_conversion,
    "bound rdp": _bound_conversion,
    "bound zcdp": _bound_conversion,
    "bound gdp": _bound_conversion,
    "bound fano": _bound_fano,
    "bound tradeoff": _bound_tradeoff,
    "bound uninformed": _bound_uninformed,
    "bound mse-rdp": _bound_mse_rdp,
    "kappa discrete": _KAPPA["discrete"],
    "kappa ball": _KAPPA["ball"],
    "kappa gaussian": _KAPPA["gaussian"],
    "kappa samples": _KAPPA["samples"],
    "kappa pixels": _KAPPA["pixels"],
    "calibrate dpsgd": _calibrate,
    "audit prior-aware": _audit,
    "audit gradient": _audit,
    "attack analytic": _attack_analytic,
    "attack glm": _attack_glm,
    "attack reconn": _attack_reconn,
}
"""command -> verdict function (others: :func:`generic_summary`)."""

def _num(v: Any) -> bool:
    """A number as the commands' JSON writes it (a float, an int, or "inf" / "-inf" / "nan" for a non-finite one)."""
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) or v in ("inf", "-inf", "nan")


def _opt_num(d: dict[str, Any], key: str) -> bool:
    return d.get(key) is None or _num(d[key])


def _readable_dpsgd(d: dict[str, Any]) -> bool:
    """The typed result reads back, and its membership object is the report's
    :class:`~rerokit.report.model.MembershipFacts` (every field), with numbers where computed with."""
    try:
        m = MembershipFacts.from_dict(_read_dpsgd(d).membership)
    except (TypeError, ValueError):
        return False
    return all(_num(p.fpr) and _num(p.tpr) for p in m.tpr_at_fpr) and _num(m.advantage) and _num(m.bayes_accuracy)


def _readable_audit(d: dict[str, Any]) -> bool:
    """The audit's JSON reads back as the :class:`~rerokit.experiments.audit_outcome.AuditOutcome` the
    audit writes (every key it always writes, each attack with its interval), with numbers where the
    verdict computes with them."""
    from rerokit.experiments.audit_outcome import AuditOutcome

    try:
        AuditOutcome.from_dict(d)
    except (ValueError, TypeError):  # not the command's output: the generic summary shows what it holds
        return False
    return (_opt_num(d, "empirical_confidence") and _opt_num(d, "mean_target_clipped_fraction")
            and isinstance(d.get("trials") or 0, int))


_REQUIRES: dict[Callable[[dict[str, Any]], Summary], tuple[str, ...]] = {
    _audit: ("gamma", "kappa", "trials"),
}
"""Fields a verdict function reads; a result without them gets the generic summary."""

_READABLE: dict[Callable[[dict[str, Any]], Summary], Callable[[dict[str, Any]], bool]] = {
    _bound_dpsgd: _readable_dpsgd,
    _audit: _readable_audit,
}
"""Explicit checks of the nested fields a verdict function indexes (lists of points, optional numbers); a
result that fails them gets the generic summary. Nothing else is caught: a verdict function that raises on
a result that passes these checks is a bug, and it shows."""

_TYPED: dict[Callable[[dict[str, Any]], Summary], Callable[[dict[str, Any]], Any]] = {
    _bound_conversion: ConversionBound.from_dict,
    _bound_fano: FanoBound.from_dict,
    _bound_tradeoff: TradeoffOutput.from_dict,
    _calibrate: CalibrateOutput.from_dict,
    _bound_mse_rdp: MseRdpBound.from_dict,
    _attack_glm: GlmAttackOutput.from_dict,
    _attack_reconn: ReconnOutput.from_dict,
    _attack_analytic: AnalyticAttackOutput.from_dict,
    _bound_uninformed: UninformedOutput.from_dict,
    **{v: functools.partial(KappaResult.from_dict, c) for c, v in _KAPPA.items()},
}
"""Verdict functions that read their command's typed result (:mod:`rerokit.report.results`): a result
its ``from_dict`` refuses (a missing key, a number that is not one) gets the generic summary."""


def _typed_readable(fn: Callable[[dict[str, Any]], Summary], result: dict[str, Any]) -> bool:
    try:
        _TYPED[fn](result)
    except (ValueError, TypeError):  # not the command's output: the generic summary shows what it holds
        return False
    return True


def summary_for(command: str, result: dict[str, Any]) -> Summary:
    """The :class:`~rerokit.report.terminal.Summary` of ``command``'s result.

    Args:
      command: "group subcommand", e.g. "bound dpsgd".
      result: the JSON-ready dict the command returned.

    Returns:
      Its verdict and rows: the registered function's when the result reads back as its typed result
      (:data:`_TYPED`) or has the fields it reads (:data:`_REQUIRES`, :data:`_READABLE`), else
      :func:`generic_summary`.
    """
    fn = VERDICTS.get(command)
    if fn is not None and (_typed_readable(fn, result) if fn in _TYPED else
                           all(k in result for k in _REQUIRES.get(fn, ())) and _READABLE.get(fn, lambda d: True)(result)):
        return fn(result)
    return generic_summary(command, result)
