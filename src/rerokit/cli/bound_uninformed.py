"""``rerokit bound uninformed``: the exact laws (MSE, PSNR, NCC) of the optimal *unbiased* analytic
gradient-inversion attack of an adversary without data prior (Riess et al. 2024, Props. 2-7) - kind
"attack law", not bounds on every attacker -, what a prior-free attacker gets for free (the
constant guess, shrinkage of X_hat; exact laws) and, with a data prior (--prior), the certified
informed ReRo bound at the MSE threshold (:mod:`rerokit.bounds.uninformed_scope`).

The dataset enters through its smallest non-zero norm r (``--min-norm`` or ``--dataset``, which
computes it). ``--clip C`` adds the attacker's optimal number of rows and, when C <= r, the
data-independent gamma' of Prop. 3 / Prop. 5. ``--releases K`` averages K matched releases
(Prop. 7); ``--steps T --sample-rate q`` adds the worst case over T Poisson-sampled steps.
Only the standard library is imported at module level; numpy/scipy inside the handler.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from rerokit.cli._common import NOISE_MULTIPLIER_HELP, add_clip_arg, add_command, add_data_path_arg, add_dataset_arg
from rerokit.cli._common import add_deprecated_spelling, add_json_flag, add_noise_multiplier_arg, add_sample_rate_arg
from rerokit.cli._common import add_steps_arg


DESCRIPTION = """
The exact law of the optimal UNBIASED analytic gradient-inversion attack under DP-SGD (Riess et al. 2024,
"From Mean to Extreme", Props. 2-7): P(MSE <= eta), the PSNR reading, the expected MSE and the NCC
of its estimate X_hat = X + N(0, sigma^2 ||X||^2 I) on a record of the smallest norm. These are of
kind "attack law": what that attack achieves, not a bound on every attacker (Riess et al. 2024: its optimality
holds among unbiased estimators only). Beside them, what an attacker without a prior gets for
free: the constant guess 0 (the data mean with --dataset) and the shrinkage c X_hat (exact
non-central chi-square law; the best factor c and the MSE-optimal c* = 1/(1 + N sigma^2/K)).

Certified (every attacker): with a data prior --prior ball|gaussian|cube (with --prior-scale: the
ball's radius, the Gaussian's std, the cube's range) or samples (--dataset's records, Hayes et
al. App. J upper confidence bound), the informed ReRo bound gamma = Phi(Phi^-1(kappa) +
sqrt(K)/sigma) for K releases (or the DP-SGD curve with --steps and --sample-rate), kappa =
sup_y P_{X~prior}(MSE(X, y) <= eta), for a target drawn from the prior. Without a prior no bound
below 1 holds against every attacker (a fixed guess equal to the record succeeds).

The dataset enters through its smallest non-zero record norm r: give --min-norm r (with --dim),
or --dataset to compute it. --clip C adds the attacker's optimal number of rows and, when C <= r,
the data-independent bound of Prop. 3 / Prop. 5. --releases K: the attacker averages K matched
releases (Prop. 7). --steps T with --sample-rate q adds the worst case over T Poisson-sampled
steps (Sec. 4.3).
"""

FIELDS = [
    ("bound", "which bound this is"),
    ("noise_multiplier", "the noise multiplier sigma"),
    ("dim", "data dimension N"),
    ("min_norm", "smallest non-zero record norm r used"),
    ("min_norm_source", "where r comes from (--min-norm or the dataset)"),
    ("clip", "the clipping norm C (null without --clip)"),
    ("releases", "matched releases K averaged by the attacker"),
    ("metric", "mse or psnr: the success criterion"),
    ("mse_threshold", "MSE threshold eta: success means MSE <= eta (for psnr: the MSE of the PSNR "
                      "threshold, 10^(-psnr/10) R^2; may be inf for an extreme --data-range, see note)"),
    ("psnr_threshold_db", "the --psnr-threshold (psnr metric)"),
    ("data_range", "data range R of the PSNR (psnr metric)"),
    ("gamma", "P(success) of the optimal unbiased analytic attack on a record of norm r (Prop. 3 / Prop. 5; kind "
              "attack law, not a bound on every attacker); the smallest positive double when it underflows (then "
              "see log10_gamma)"),
    ("kind", "attack law: gamma, gamma_over_steps, expected_mse and ncc_bound are the exact law of that one attack"),
    ("attack", "the attack whose law gamma is"),
    ("no_prior_attacks", "what an attacker without a prior achieves on a record of norm r (exact laws, kind attack "
                         "law): zero_guess, mse_optimal_shrinkage, best_shrinkage (factor, success), best_known; with "
                         "--dataset also data_mean_guess and zero_guess_on_data (fractions of the records)"),
    ("no_prior_attacks.kind", "attack law: each success is the exact law of that one attack"),
    ("no_prior_attacks.record", "which record the laws are for (the smallest norm r)"),
    ("no_prior_attacks.unbiased_attack", "P(success) of the optimal unbiased attack X_hat (central chi^2)"),
    ("no_prior_attacks.zero_guess", "P(success) of guessing 0: 1 if r^2 / N <= eta, else 0"),
    ("no_prior_attacks.mse_optimal_shrinkage", "factor c* = 1/(1 + N sigma^2 / K) and P(success) of c* X_hat "
                                               "(non-central chi^2)"),
    ("no_prior_attacks.best_shrinkage", "the factor c in [0, 1] with the largest P(success) of c X_hat, and that "
                                        "success"),
    ("no_prior_attacks.best_known", "the largest of these successes"),
    ("no_prior_attacks.best_known_attack", "the attack that achieves it"),
    ("no_prior_attacks.data_mean_guess", "with --dataset: fraction of the records within eta of the data mean"),
    ("no_prior_attacks.zero_guess_on_data", "with --dataset: fraction of the records within eta of 0"),
    ("certified", "the certified informed ReRo bound at the MSE threshold for a target drawn from --prior (kind "
                  "certified); without a prior gamma 1 and a note"),
    ("certified.kind", "certified: holds against every attacker, for a target drawn from the prior"),
    ("certified.prior", "the data prior"),
    ("certified.kappa", "upper bound on sup_y P_prior(MSE(X, y) <= eta), the best guess without the model"),
    ("certified.log10_kappa", "log10 of kappa (exact where kappa underflows)"),
    ("certified.gamma", "upper bound on the success of any attacker (Hayes et al. 2023 Thm 2); the smallest positive "
                        "double where it underflows"),
    ("certified.log10_gamma", "log10 of gamma"),
    ("certified.mechanism", "the releases certified (K Gaussian releases, or the DP-SGD run of --steps)"),
    ("certified.population", "whom the bound is about: a target drawn from the prior"),
    ("certified.note", "without a prior: why no bound below 1 is certified"),
    ("gamma_error", "safety margin added to gamma for floating-point error"),
    ("log10_gamma", "log10 of gamma, exact also where gamma underflows"),
    ("expected_mse", "expected MSE of the optimal analytic attack on a record of the smallest norm r, "
                     "sigma^2 r^2 / K (Prop. 2; larger for larger norms; see note when it exceeds the largest "
                     "double)"),
    ("ncc_bound", "upper bound on the normalised cross-correlation of the attack's estimate (Prop. 6; attack law)"),
    ("optimal_rows", "rows M of the attacker's layer that minimise its MSE, ceil((C / r)^2) (with --clip)"),
    ("expected_mse_one_row", "expected MSE of the attack with a single row, sigma^2 max(r, C)^2 / K: what "
                             "choosing M gains (with --clip)"),
    ("gamma_data_independent", "Prop. 3's bound with C in place of r, valid without knowing the data when "
                               "C <= r (null when C > r)"),
    ("expected_mse_data_independent", "sigma^2 C^2 / K, the data-independent expected MSE (when C <= r)"),
    ("steps", "the --steps T"),
    ("sample_rate", "the --sample-rate q"),
    ("sampling_rate", "the same (the key before rerokit 0.2; kept until 0.3)"),
    ("gamma_over_steps", "success of the unbiased attack when it matches and averages every release of the "
                         "record over T Poisson-sampled steps (Sec. 4.3; attack law)"),
    ("log10_expected_mse", "exact log10 of expected_mse when it exceeds the largest double"),
    ("log10_expected_mse_one_row", "exact log10 of expected_mse_one_row when it exceeds the largest double"),
    ("log10_expected_mse_data_independent", "exact log10 of expected_mse_data_independent when it exceeds the "
                                            "largest double"),
    ("note", "why a value was replaced by the largest double or is inf"),
]


def handle(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit._validate import check_int, check_positive
    from rerokit.bounds import uninformed as U

    sigma = check_positive("noise_multiplier", args.noise_multiplier)
    if args.data_range is not None and args.psnr_threshold is None:
        raise ValueError("--data-range is the data range R of the PSNR and needs --psnr-threshold")
    data_range = args.data_range
    if args.dataset is not None:
        from rerokit.data import load_dataset

        from rerokit._files import check_data_args

        check_data_args(args.dataset, args.data_path)
        ds = load_dataset(args.dataset, args.data_path)
        r = U.min_nonzero_norm(ds.flat)
        if args.dim is not None and check_int("dim", args.dim, minimum=1) != ds.dim:
            raise ValueError(f"dim must equal the dimension {ds.dim} of dataset {args.dataset}, got {args.dim}")
        n = ds.dim
        if data_range is None:
            data_range = float(ds.data_range)
        source = f"dataset {args.dataset} (n={ds.n})"
    else:
        r = check_positive("min_norm", args.min_norm)
        if args.dim is None:
            raise ValueError("dim must be given (an integer >= 1) with --min-norm")
        n = check_int("dim", args.dim, minimum=1)
        source = "--min-norm"
    k = check_int("releases", args.releases, minimum=1)
    if args.prior is not None:
        from rerokit._validate import check_choice

        check_choice("prior", args.prior, ("ball", "gaussian", "cube", "samples"))
    if args.prior_scale is not None:
        check_positive("prior_scale", args.prior_scale)
        if args.prior is None or args.prior == "samples":
            raise ValueError("--prior-scale is the scale of a --prior ball, gaussian or cube (a --prior samples is "
                             "the records themselves): give it with one of those")
    clip = None if args.clip is None else check_positive("clip", args.clip)

    if args.mse_threshold is not None:
        from rerokit._validate import check_nonnegative

        b = U.mse_rero(check_nonnegative("mse_threshold", args.mse_threshold), sigma, n, min_norm=r, clip=clip, releases=k)
        eta = b.inputs["eta"]
        psnr: tuple[float, float] | None = None
    else:
        if data_range is None:
            raise ValueError("data_range must be given (a number > 0) with --psnr-threshold")
        b = U.psnr_rero(args.psnr_threshold, data_range, sigma, n, min_norm=r, clip=clip, releases=k)
        eta = b.extras["mse_threshold"]
        psnr = (float(args.psnr_threshold), float(data_range))
    expected_mse, ncc = U.expected_mse(sigma, r, k), U.ncc_bound(sigma, n, k)
    optimal_rows = one_row = gamma_di = mse_di = None
    if clip is not None:
        if clip / r > 1e150:
            raise ValueError(f"clip / min_norm must be <= 1e150, got {clip / r:.3g}: the attacker's optimal number of "
                             "rows (clip / min_norm)^2 would exceed the largest double")
        optimal_rows = U.optimal_rows(clip, r)
        # what choosing M gains the attacker: E[MSE] of the smallest-norm record with one row
        # (Eq. 17: sigma^2 max(r^2, C^2)) versus expected_mse at optimal_rows (Prop. 1)
        try:
            one_row = U.estimator_variance(r, sigma, clip, 1) / k
        except OverflowError:  # beyond the largest double: explained by _explain_overflow below
            one_row = math.inf
        if clip <= r:  # else None: Prop. 3's gamma' needs C <= min ||X||
            gamma_di = b.extras["gamma_data_independent"]
            mse_di = U.expected_mse(sigma, clip, k)
    t = q = over_steps = None
    if args.steps is not None or args.sample_rate is not None:
        if args.steps is None or args.sample_rate is None:
            raise ValueError("steps and sample_rate must be given together (steps >= 1, sample_rate in (0, 1])")
        from rerokit._resources import check_memory, release_mixture_bytes
        from rerokit._validate import check_probability

        t = check_int("steps", args.steps, minimum=1)
        q = check_probability("sample_rate", args.sample_rate)
        check_memory("--steps", release_mixture_bytes(t, q),
                     f"the mixture over the likely release counts of Binomial({t}, {q:g})")
        # an MSE threshold beyond the largest double: every reconstruction succeeds, gamma 1
        over_steps = U.mse_rero_over_steps(eta, sigma, n, t, q, min_norm=r).value if math.isfinite(eta) else 1.0
    npa, certified = _scope(args, eta, sigma, r, n, k, ds if args.dataset is not None else None)
    expected = {"expected_mse": expected_mse, "expected_mse_one_row": one_row,
                "expected_mse_data_independent": mse_di}
    logs, note = _explain_overflow(expected, sigma, r, clip, k)
    if not math.isfinite(eta):
        note = (note + "; " if note is not None else "") + (
            "mse_threshold = 10^(-psnr_threshold/10) x data_range^2 exceeds the largest double (shown as inf); "
            "gamma is computed from its logarithm" + (" and gamma_over_steps is 1" if t is not None else ""))
    from rerokit.report.results import UninformedOutput

    return UninformedOutput(
        bound="uninformed analytic attack (Riess et al. 2024 Props. 3-6)", kind="attack law",
        attack="optimal unbiased analytic gradient inversion X_hat (Riess et al. 2024 Cor. 1, Thm 2)",
        noise_multiplier=sigma, dim=n, min_norm=r, min_norm_source=source, clip=clip, releases=k,
        metric="mse" if psnr is None else "psnr", psnr_threshold_db=None if psnr is None else psnr[0],
        data_range=None if psnr is None else psnr[1], mse_threshold=eta, gamma=b.value, gamma_error=b.error,
        log10_gamma=b.extras["log_value"] / math.log(10.0) if "log_value" in b.extras else None,
        expected_mse=expected["expected_mse"], ncc_bound=ncc, optimal_rows=optimal_rows,
        expected_mse_one_row=expected["expected_mse_one_row"], gamma_data_independent=gamma_di,
        expected_mse_data_independent=expected["expected_mse_data_independent"], steps=t, sample_rate=q,
        gamma_over_steps=over_steps, no_prior_attacks=npa, certified=certified, log10_overflow=logs, note=note,
    ).to_dict()


def _scope(args: argparse.Namespace, eta: float, sigma: float, r: float, n: int, k: int,
           ds: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the laws are not: the prior-free attacks beside them and the certified bound for a prior."""
    from rerokit.bounds import uninformed_scope as S

    if math.isfinite(eta):
        npa = S.no_prior_attacks(eta, sigma, r, n, k).to_dict()
        if ds is not None:
            npa["data_mean_guess"] = S.fixed_guess_success(ds.flat, eta)
            npa["zero_guess_on_data"] = S.fixed_guess_success(ds.flat, eta, guess=0.0 * ds.flat[0])
            npa["best_known"], npa["best_known_attack"] = max(
                (npa["best_known"], npa["best_known_attack"]), (npa["data_mean_guess"], "data mean as the guess"),
                (npa["zero_guess_on_data"], "constant guess 0 on the data"), key=lambda t: t[0])
    else:
        npa = {"kind": "attack law", "best_known": 1.0, "best_known_attack": "any guess (MSE threshold beyond floats)"}
    return npa, _certified(args, eta, sigma, n, k, ds)


def _certified(args: argparse.Namespace, eta: float, sigma: float, n: int, k: int, ds: Any) -> dict[str, Any]:
    from rerokit.bounds import uninformed_scope as S

    prior = args.prior if args.prior is not None else ("samples" if ds is not None else None)
    if prior is None:
        return {"gamma": 1.0, "kind": "certified",
                "note": "no data prior given (--prior): without one no bound below 1 holds against every attacker "
                        "(a fixed guess equal to the record succeeds)"}
    if not (math.isfinite(eta) and eta > 0):
        return {"gamma": 1.0, "kind": "certified", "note": "MSE threshold 0 or beyond floats: no informed bound"}
    if prior == "samples" and ds is None:
        raise ValueError("prior 'samples' needs --dataset (the records whose upper-confidence kappa is used)")
    samples = None
    if ds is not None and prior == "samples":
        import numpy as np

        x = ds.flat
        if len(x) > 2000:  # i.i.d. draws of the empirical prior keep App. J's bound valid and the pairs cheap
            x = x[np.random.default_rng(0).integers(0, len(x), 2000)]
        samples = x
    if prior != "samples" and args.prior_scale is None:
        raise ValueError(f"prior_scale must be given (a number > 0) with --prior {prior}")
    lk, name = S.mse_prior_log_kappa(prior, n, eta, scale=args.prior_scale, samples=samples)
    from rerokit.bounds.conversions import log_rero_from_gdp

    if args.steps is not None:
        import rerokit

        risk = rerokit.reconstruction_risk(noise_multiplier=sigma, sample_rate=args.sample_rate, steps=args.steps,
                                           log_kappa=lk)
        lg, mech = math.log(risk.gamma) if risk.gamma > 0 else -math.inf, (
            f"DP-SGD sigma = {sigma:g}, q = {args.sample_rate:g}, T = {args.steps} (Poisson; Hayes et al. Thm 2)")
    else:
        lg = log_rero_from_gdp(math.sqrt(k) / sigma, lk)
        mech = f"{k} Gaussian release{'s' if k > 1 else ''} of the clipped gradient, mu = sqrt({k})/sigma"
    ln10 = math.log(10.0)
    return {"kind": "certified", "prior": name, "kappa": _up(lk), "log10_kappa": lk / ln10,
            "gamma": _up(lg), "log10_gamma": lg / ln10, "mechanism": mech,
            "population": "a target drawn from the prior"}


def _up(log_value: float) -> float:
    """e^log_value for an upper bound: the smallest positive double where it underflows (never 0 below the truth)."""
    return max(math.exp(log_value), 5e-324) if log_value > -math.inf else 0.0


def summary(d: dict[str, Any]):
    """Verdict and rows: the attack laws as such, the prior-free attacks, the certified bound (the JSON read
    back as the :class:`~rerokit.report.results.UninformedOutput` the command printed)."""
    from rerokit.report.format import Lead, fmt, fmt_log10
    from rerokit.report.results import UninformedOutput
    from rerokit.report.terminal import Row, Summary

    o = UninformedOutput.from_dict(d)
    thr = f"PSNR \u2265 {fmt(o.psnr_threshold_db)} dB" if o.metric == "psnr" else f"MSE \u2264 {fmt(o.mse_threshold)}"
    g = o.gamma
    gt = fmt_log10(o.log10_gamma) if isinstance(g, float) and g < 1e-300 and o.log10_gamma is not None else fmt(g)
    rel = "one release" if o.releases == 1 else f"{o.releases} averaged releases"
    npa, c = o.no_prior_attacks, o.certified
    text = (f"the optimal unbiased analytic gradient inversion (\u03c3 = {fmt(o.noise_multiplier)}, N = "
            f"{o.dim}, a record of norm r = {fmt(o.min_norm)}) reaches {thr} with probability {gt} from "
            f"{rel}" + (f", {fmt(o.gamma_over_steps)} averaging every release over {o.steps} steps"
                        if o.gamma_over_steps is not None else "") + " (the law of that attack, not a bound)")
    if npa.get("best_known") is not None and npa["best_known"] > (g or 0):
        text += f"; without any prior, the {npa['best_known_attack']} does better: {fmt(npa['best_known'])}"
    if c.get("prior"):
        text += (f". Certified against every attacker, for a target drawn from the prior ({c['prior']}): "
                 f"probability at most {fmt(c['gamma']) if c['gamma'] > 1e-300 else fmt_log10(c['log10_gamma'])}.")
    else:
        text += ". No bound below 1 holds against every attacker without a data prior (--prior)."
    law = "attack law"
    rows = [Row(f"P({thr}), unbiased attack X\u0302", "= " + gt, "", "Riess et al. 2024 Prop. 3 / Thm 2" if o.metric != "psnr"
                else "Riess et al. 2024 Props. 4-5", law, section="What the unbiased analytic attack achieves (record of norm r)")]
    if o.gamma_over_steps is not None:
        rows.append(Row(f"P({thr}) over {o.steps} steps (q = {fmt(o.sample_rate)})",
                        "= " + fmt(o.gamma_over_steps), "", "Riess et al. 2024 Sec. 4.3 + Prop. 7", law))
    if o.gamma_data_independent is not None:
        rows.append(Row("the same at norm C (C \u2264 r)", "= " + fmt(o.gamma_data_independent), "",
                        "Riess et al. 2024 Prop. 3 with r = C", law))
    rows.append(Row("expected MSE", "= " + fmt(o.expected_mse), "", "Riess et al. 2024 Prop. 2: \u03c3\u00b2 r\u00b2 / K", law))
    rows.append(Row("NCC of X\u0302", "\u2264 " + fmt(o.ncc_bound), "", "Riess et al. 2024 Prop. 6", law))
    if "zero_guess" in npa:
        rows.append(Row(f"P({thr}), constant guess 0", "= " + fmt(npa["zero_guess"]), "", "||X||\u00b2/N \u2264 \u03b7",
                        law, section="What a prior-free attacker gets for free"))
        ms, bs = npa["mse_optimal_shrinkage"], npa["best_shrinkage"]
        rows.append(Row(f"P({thr}), shrinkage {fmt(ms['factor'])} X\u0302 (MSE-optimal)", "= " + fmt(ms["success"]), "",
                        "non-central \u03c7\u00b2", law))
        rows.append(Row(f"P({thr}), shrinkage {fmt(bs['factor'])} X\u0302 (best factor)", "= " + fmt(bs["success"]), "",
                        "non-central \u03c7\u00b2", law))
    if "data_mean_guess" in npa:
        rows.append(Row(f"P({thr}), data mean as the guess", "= " + fmt(npa["data_mean_guess"]), "",
                        "fraction of the records", "exact on the data"))
    if c.get("prior"):
        rows.append(Row(f"\u03b3: P({thr}), any attacker, target from the prior",
                        "\u2264 " + (fmt(c["gamma"]) if c["gamma"] > 1e-300 else fmt_log10(c["log10_gamma"])), "",
                        "Hayes et al. Thm 2, " + c["mechanism"], "certified",
                        section=f"Informed ReRo, prior: {c['prior']}"))
        rows.append(Row("\u03ba: best guess from the prior", "\u2264 " + fmt_log10(c["log10_kappa"]), "",
                        "sup_y P(MSE(X, y) \u2264 \u03b7)", "certified"))
    if o.optimal_rows is not None:
        rows.append(Row("attacker's optimal rows M", fmt(o.optimal_rows), "", "\u2308(C / r)\u00b2\u2309", "exact",
                        section="Attack"))
    rows.append(Row("smallest record norm r", fmt(o.min_norm), "", str(o.min_norm_source), "input", section="Inputs"))
    notes = [n for n in (o.note, c.get("note")) if n]
    return Summary(((Lead("Uninformed adversary: "), text),), tuple(rows), (), tuple(notes))


def _explain_overflow(expected: dict[str, float | None], sigma: float, r: float, clip: float | None,
                      k: int) -> tuple[dict[str, float], str | None]:
    """An expected MSE sigma^2 x^2 / K beyond the largest double is shown as that largest double
    (a valid lower bound: the true value is larger) with its exact log10 and a note, not as inf:
    ``expected`` (by key; None where not computed) is changed in place; returns the log10 of each
    one changed and the note (None when none overflowed)."""
    import sys

    l10 = math.log10
    logs = {"expected_mse": 2 * l10(sigma) + 2 * l10(r) - l10(k)}
    if clip is not None:
        logs["expected_mse_one_row"] = 2 * l10(sigma) + 2 * l10(max(r, clip)) - l10(k)
        if expected.get("expected_mse_data_independent") is not None:
            logs["expected_mse_data_independent"] = 2 * l10(sigma) + 2 * l10(clip) - l10(k)
    over = [key for key in logs if expected.get(key) is not None and not math.isfinite(expected[key])]
    for key in over:
        expected[key] = sys.float_info.max
    if not over:
        return {}, None
    return {key: logs[key] for key in over}, (
        f"{', '.join(over)} = sigma^2 x norm^2 / releases exceeds the largest double (1.8e308): shown "
        "as that largest double, a lower bound on the true value; log10_" + over[0]
        + " holds the exact order of magnitude")


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "uninformed", handle, description=DESCRIPTION, fields=FIELDS, summary=summary,
                    help="laws of the optimal unbiased gradient-inversion attack, prior-free attacks, and the "
                         "certified bound for a data prior (Riess et al. 2024; Hayes et al. 2023)")
    add_noise_multiplier_arg(p, f"DP-SGD {NOISE_MULTIPLIER_HELP}", required=True)
    p.add_argument("--dim", type=int, default=None, help="data dimension N >= 1 (taken from --dataset if omitted)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--min-norm", type=float, help="smallest non-zero L2 norm r > 0 of a record")
    add_dataset_arg(src, "dataset name (digits, mnist, cifar10, synthetic) to compute r from", default=None)
    add_data_path_arg(p)
    add_clip_arg(p, "clipping norm C > 0 (optional)")
    thr = p.add_mutually_exclusive_group(required=True)
    thr.add_argument("--mse-threshold", type=float, help="MSE threshold eta >= 0")
    thr.add_argument("--psnr-threshold", type=float, help="PSNR threshold in dB (needs --data-range)")
    p.add_argument("--data-range", type=float, default=None, help="data range R > 0 for PSNR (default: the dataset's)")
    p.add_argument("--releases", type=int, default=1, help="matched releases averaged by the attacker, K >= 1")
    add_steps_arg(p, "DP-SGD steps T >= 1 (worst case over all steps)")
    add_sample_rate_arg(p, "Poisson sampling rate q in (0, 1] (with --steps)")
    add_deprecated_spelling(p, "--sampling-rate", "--sample-rate", type=float)
    p.add_argument("--prior", default=None, help="data prior for the certified bound: ball, gaussian, cube (with "
                   "--prior-scale) or samples (--dataset's records; the default with --dataset)")
    p.add_argument("--prior-scale", type=float, default=None,
                   help="the ball's radius, the Gaussian's std per coordinate or the cube's range R (data in [0, R])")
    add_json_flag(p)
