"""``rerokit kappa discrete|ball|gaussian|samples|pixels``: baseline kappa of a prior.

Every command prints ``kappa`` and ``log10_kappa``; kappa itself may underflow to 0.0 (e.g.
9.66e-473), log10_kappa is always exact. Balle et al. 2022, Sec. VII-B/D; Hayes et al. 2023,
App. I and J. Library imports live inside the handlers.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from rerokit.cli._common import add_json_flag

_LN10 = math.log(10.0)


def _out(prior: str, params: dict[str, Any], log_kappa: float, **extra: Any) -> dict[str, Any]:
    return {
        "prior": prior,
        **params,
        "kappa": math.exp(log_kappa),
        "log10_kappa": log_kappa / _LN10,
        **extra,
    }


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
        return _out("uniform discrete (exact match)", {"prior_size": pr.n}, pr.log_kappa())
    dp = DiscretePrior(_parse_weights(args.weights))
    return _out("discrete (exact match)", {"prior_size": dp.n}, dp.log_kappa())


def _ball(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.bounds.priors import UniformBallPrior

    pr = UniformBallPrior(args.dim)
    return _out("uniform l2 unit ball (Balle et al. 2022, Prop. 6)", {"dim": pr.d, "eta": args.eta},
                pr.log_kappa(args.eta))


def _gaussian(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.bounds.priors import GaussianPrior

    pr = GaussianPrior(args.dim, args.sigma)
    return _out("isotropic Gaussian, l2 (Balle et al. 2022, Prop. 7)",
                {"dim": pr.d, "sigma": pr.sigma, "eta": args.eta}, pr.log_kappa(args.eta))


def _samples(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    from rerokit.bounds.priors import kappa_from_samples

    try:
        x = np.load(args.samples, allow_pickle=False)
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as exc:
        raise ValueError(f"samples must be a readable .npy file of shape (N, ...): {args.samples}: "
                         f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    if args.metric in ("l2", "linf", "l1") and not (np.issubdtype(x.dtype, np.number) or x.dtype == bool):
        raise ValueError(f"samples must hold numbers for metric {args.metric}, got an array of dtype {x.dtype}")
    b = kappa_from_samples(x, args.eta, metric=args.metric, confidence=args.confidence, method=args.method)
    return _out(
        "samples (Hayes et al. 2023, App. J, Prop. 5): upper confidence bound",
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
        "uniform pixels, fraction rho within delta (Hayes et al. 2023, App. I)",
        {"dim": pr.d, "delta": pr.delta, "rho": pr.rho, "levels": pr.levels, "strict": pr.strict},
        pr.log_kappa(),
        per_coordinate_p=pr.p,
        required_coordinates=pr.required,
    )


def register(sub: Any) -> None:
    p = sub.add_parser("discrete", help="discrete prior, exact matching: kappa = max_i p_i")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--prior-size", type=int, help="uniform prior on N >= 1 candidates (kappa = 1/N)")
    g.add_argument("--weights", type=str, help="comma-separated non-negative weights w1,w2,...")
    add_json_flag(p)
    p.set_defaults(func=_discrete)

    p = sub.add_parser("ball", help="uniform prior on the l2 unit ball: kappa = min(1, eta)^d")
    p.add_argument("--dim", type=int, required=True, help="dimension d >= 1")
    p.add_argument("--eta", type=float, required=True, help="l2 error threshold > 0")
    add_json_flag(p)
    p.set_defaults(func=_ball)

    p = sub.add_parser("gaussian", help="N(w, sigma^2 I_d), l2: kappa = P(chi2_d <= (eta/sigma)^2)")
    p.add_argument("--dim", type=int, required=True, help="dimension d >= 1")
    p.add_argument("--sigma", type=float, required=True, help="prior standard deviation > 0")
    p.add_argument("--eta", type=float, required=True, help="l2 error threshold > 0")
    add_json_flag(p)
    p.set_defaults(func=_gaussian)

    p = sub.add_parser("samples", help="upper confidence bound on kappa from prior samples (.npy)")
    p.add_argument("--samples", type=str, required=True, help=".npy file, array of shape (N, ...)")
    p.add_argument("--eta", type=float, default=0.0, help="error threshold >= 0 (ignored for exact)")
    p.add_argument("--metric", type=str, default="exact", help="exact (0/1 error), l2, linf or l1")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence level in (0, 1)")
    p.add_argument("--method", type=str, default="chernoff", help="chernoff (Prop. 5) or clopper_pearson")
    add_json_flag(p)
    p.set_defaults(func=_samples)

    p = sub.add_parser("pixels", help="uniform pixels; success if a fraction rho is within delta")
    p.add_argument("--dim", type=int, required=True, help="number of coordinates d >= 1")
    p.add_argument("--delta", type=float, required=True, help="per-coordinate tolerance > 0")
    p.add_argument("--rho", type=float, default=1.0, help="required fraction in [0, 1] (default 1)")
    p.add_argument("--levels", type=int, default=None,
                   help="pixels uniform on L >= 2 grid levels (default: continuous [0, 1])")
    p.add_argument("--non-strict", action="store_true", help="count |z_i - zhat_i| <= delta (default <)")
    add_json_flag(p)
    p.set_defaults(func=_pixels)
