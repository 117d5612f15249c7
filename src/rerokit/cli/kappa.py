"""``rerokit kappa discrete|ball|gaussian|samples|pixels``: baseline kappa of a prior.

Every command prints ``kappa`` and ``log10_kappa``; kappa itself may underflow to 0.0 (e.g.
9.66e-473), log10_kappa is always exact. Balle et al. 2022, Sec. VII-B/D; Hayes et al. 2023,
App. I and J. Library imports live inside the handlers.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from rerokit.cli._common import add_command, add_json_flag

_K = [("kappa", "baseline success: the probability that the best guess made without the model is a "
                "successful reconstruction (may underflow to 0; then see log10_kappa)"),
      ("log10_kappa", "log10 of kappa, exact also where kappa underflows")]


def _fields(params: list[tuple[str, str]], extra: list[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    """The output fields of a kappa command: the prior, its ``params``, kappa and log10_kappa, then ``extra``."""
    return [("prior", "the prior and the paper it comes from"), *params, *_K, *extra]


def _add_dim(p: argparse.ArgumentParser, help: str = "dimension d >= 1") -> None:
    p.add_argument("--dim", type=int, required=True, help=help)


def _add_eta(p: argparse.ArgumentParser) -> None:
    p.add_argument("--eta", type=float, required=True, help="l2 error threshold > 0")


_LN10 = math.log(10.0)


def _out(command: str, prior: str, params: dict[str, Any], log_kappa: float, **extra: Any) -> dict[str, Any]:
    """The JSON of ``rerokit kappa <command>`` (:class:`rerokit.report.results.KappaResult`)."""
    from rerokit.report.results import KappaResult

    return KappaResult(command=command, prior=prior, params=params, kappa=math.exp(log_kappa),
                       log10_kappa=log_kappa / _LN10, extras=extra).to_dict()


def _parse_weights(text: str) -> list[float]:
    parts = [t.strip() for t in text.split(",")]
    try:
        return [float(t) for t in parts]
    except ValueError:
        raise ValueError(
            f"weights must be a comma-separated list of finite numbers >= 0 (not all zero), got {text!r}"
        ) from None


def _discrete(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.bounds.priors import DiscretePrior, UniformDiscretePrior

    if args.prior_size is not None:
        pr = UniformDiscretePrior(args.prior_size)
        return _out("discrete", "uniform discrete (exact match)", {"prior_size": pr.n}, pr.log_kappa())
    dp = DiscretePrior(_parse_weights(args.weights))
    return _out("discrete", "discrete (exact match)", {"prior_size": dp.n}, dp.log_kappa())


def _ball(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.bounds.priors import UniformBallPrior

    pr = UniformBallPrior(args.dim)
    return _out("ball", "uniform l2 unit ball (Balle et al. 2022, Prop. 6)", {"dim": pr.d, "eta": args.eta},
                pr.log_kappa(args.eta))


def _gaussian(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.bounds.priors import GaussianPrior

    pr = GaussianPrior(args.dim, args.sigma)
    return _out("gaussian", "isotropic Gaussian, l2 (Balle et al. 2022, Prop. 7)",
                {"dim": pr.d, "sigma": pr.sigma, "eta": args.eta}, pr.log_kappa(args.eta))


def _samples(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    from rerokit._files import load_array
    from rerokit._resources import check_memory, kappa_samples_bytes
    from rerokit._validate import check_choice
    from rerokit.bounds.priors import kappa_from_samples

    metric = check_choice("metric", args.metric, ("exact", "l2", "linf", "l1"))
    if metric == "exact" and args.eta != 0.0:
        raise ValueError("--eta is the error threshold of --metric l2, linf or l1; --metric exact (the default) "
                         "counts equal samples and has none")
    x = load_array("samples", args.samples)
    if x.ndim == 0 or x.shape[0] < 1:
        raise ValueError(f"samples: {args.samples} must hold an array of shape (N, ...) with N >= 1 samples, "
                         f"got shape {x.shape}")
    if metric in ("l2", "linf", "l1") and not (np.issubdtype(x.dtype, np.number) or x.dtype == bool):
        raise ValueError(f"samples must hold numbers for metric {metric}, got an array of dtype {x.dtype}")
    n = int(x.shape[0])
    d = max(1, int(np.prod(x.shape[1:])))
    check_memory("--samples", kappa_samples_bytes(n, d, metric, x.dtype.itemsize),
                 f"kappa from {n} samples of dimension {d} (metric {metric})",
                 hint="use fewer samples (a random subset of the file)")
    b = kappa_from_samples(x, args.eta, metric=metric, confidence=args.confidence, method=args.method)
    return _out(
        "samples", "samples (Hayes et al. 2023, App. J, Prop. 5): upper confidence bound",
        {"n_samples": b.inputs["n_samples"], "eta": b.inputs["eta"], "metric": args.metric,
         "confidence": args.confidence, "method": args.method},
        math.log(b.value),
        kappa_hat=b.extras["kappa_hat"],
        kappa_hat_plugin=b.extras["kappa_hat_plugin"],
        direction="upper",
    )


def _pixels(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.bounds.priors import PixelTolerancePrior

    pr = PixelTolerancePrior(args.dim, args.delta, args.rho, levels=args.levels, strict=not args.non_strict)
    return _out(
        "pixels", "uniform pixels, fraction rho within delta (Hayes et al. 2023, App. I)",
        {"dim": pr.d, "delta": pr.delta, "rho": pr.rho, "levels": pr.levels, "strict": pr.strict},
        pr.log_kappa(),
        per_coordinate_p=pr.p,
        required_coordinates=pr.required,
    )


def register(sub: Any) -> None:
    p = add_command(sub, "discrete", _discrete, help="discrete prior, exact matching: kappa = max_i p_i",
                    description="Baseline kappa of a discrete prior with exact matching (0/1 error): the largest "
                    "prior probability, 1/N for a uniform prior (Balle et al. 2022, Sec. VII-B).",
                    fields=_fields([("prior_size", "number of candidates N")]))
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--prior-size", type=int, help="uniform prior on N >= 1 candidates (kappa = 1/N)")
    g.add_argument("--weights", type=str, help="comma-separated non-negative weights w1,w2,...")
    add_json_flag(p)

    p = add_command(sub, "ball", _ball, help="uniform prior on the l2 unit ball: kappa = min(1, eta)^d",
                    description="Baseline kappa of the uniform prior on the unit ball in d dimensions with l2 "
                    "error: kappa = min(1, eta)^d (Balle et al. 2022, Prop. 6).",
                    fields=_fields([("dim", "dimension d"), ("eta", "l2 error threshold")]))
    _add_dim(p)
    _add_eta(p)
    add_json_flag(p)

    p = add_command(sub, "gaussian", _gaussian, help="N(w, sigma^2 I_d), l2: kappa = P(chi2_d <= (eta/sigma)^2)",
                    description="Baseline kappa of an isotropic Gaussian prior N(w, sigma^2 I_d) with l2 error: "
                    "kappa = P(chi2_d <= (eta / sigma)^2) (Balle et al. 2022, Prop. 7).",
                    fields=_fields([("dim", "dimension d"), ("sigma", "prior standard deviation"),
                                    ("eta", "l2 error threshold")]))
    _add_dim(p)
    p.add_argument("--sigma", type=float, required=True, help="prior standard deviation > 0")
    _add_eta(p)
    add_json_flag(p)

    p = add_command(
        sub, "samples", _samples, help="upper confidence bound on kappa from prior samples (.npy)",
        description="Upper confidence bound on the baseline kappa of a prior known only through N samples (Hayes "
        "et al. 2023, App. J, Prop. 5). The samples are an array of shape (N, ...) saved with numpy.save (.npy), "
        "or the single array of an .npz file; each sample is flattened to a vector. Success means an exact match "
        "(--metric exact) or an error within --eta (l2, linf, l1).",
        fields=_fields([("n_samples", "number of samples N"), ("eta", "error threshold"), ("metric", "the --metric"),
                        ("confidence", "confidence level of the bound"), ("method", "chernoff or clopper_pearson")],
                       [("kappa_hat", "empirical estimate the bound starts from (an upper estimate for l2/linf/l1)"),
                        ("kappa_hat_plugin", "plug-in estimate with centres at the samples (a lower estimate)"),
                        ("direction", "upper: kappa is an upper confidence bound")]))
    p.add_argument("--samples", type=str, required=True,
                   help=".npy file with an array of shape (N, ...), or an .npz file holding one such array")
    p.add_argument("--eta", type=float, default=0.0, help="error threshold >= 0 (ignored for exact)")
    p.add_argument("--metric", type=str, default="exact", help="exact (0/1 error), l2, linf or l1")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence level in (0, 1)")
    p.add_argument("--method", type=str, default="chernoff", help="chernoff (Prop. 5) or clopper_pearson")
    add_json_flag(p)

    p = add_command(
        sub, "pixels", _pixels, help="uniform pixels; success if a fraction rho is within delta",
        description="Baseline kappa of independent uniform pixels when success means that at least a fraction rho "
        "of the d coordinates lies within delta of the target (Hayes et al. 2023, App. I): "
        "kappa = P(Binomial(d, p) >= ceil(rho d)), p the per-coordinate success of the best guess.",
        fields=_fields([("dim", "number of coordinates d"), ("delta", "per-coordinate tolerance"),
                        ("rho", "required fraction of coordinates"),
                        ("levels", "grid levels L (null: continuous [0, 1])"),
                        ("strict", "true: |z_i - zhat_i| < delta; false: <=")],
                       [("per_coordinate_p", "per-coordinate success probability p of the best guess"),
                        ("required_coordinates", "coordinates that must match, ceil(rho d)")]))
    _add_dim(p, "number of coordinates d >= 1")
    p.add_argument("--delta", type=float, required=True, help="per-coordinate tolerance > 0")
    p.add_argument("--rho", type=float, default=1.0, help="required fraction in [0, 1] (default 1)")
    p.add_argument("--levels", type=int, default=None,
                   help="pixels uniform on L >= 2 grid levels (default: continuous [0, 1])")
    p.add_argument("--non-strict", action="store_true", help="count |z_i - zhat_i| <= delta (default <)")
    add_json_flag(p)
