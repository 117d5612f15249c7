"""``rerokit bound mse-rdp`` and ``rerokit bound fil``: MSE lower bounds of Guo et al. 2022.

* ``mse-rdp``: Thm 1 (unbiased attacks) from a (2, eps)-RDP guarantee given as ``--epsilon``,
  as an RDP curve (``--orders``/``--rdp``: the value at the smallest order >= 2 is used), as
  DP-SGD (``--noise-multiplier --sample-rate --steps``: the certified *replace-one* RDP at order 2
  of :func:`rerokit.accounting.events.replace_one_rdp_order2`: Thm 1 compares a dataset with the
  record against one with the record replaced), or as
  output perturbation of L2-regularised logistic regression (``--n --lam --noise-std``:
  eps_2 = 4 L^2/(n lam sigma)^2).
* ``fil``: per-sample dFIL and the Cramer-Rao bound 1/dFIL (Thm 2) of a model trained on a
  dataset: output perturbation of a GLM fitted to optimality (default), or DP-SGD on an MLP with
  FIL accounting (``--dpsgd``, Alg. 1). Summaries over samples (min/median/max).

Library imports (numpy, scipy, torch) live inside the handlers.
"""

from __future__ import annotations

import argparse
from typing import Any

from rerokit.cli._common import add_clip_arg, add_command, add_data_args, add_device_arg, add_glm_args
from rerokit.cli._common import add_json_flag, add_sampling_args, add_schedule_args, glm_problem, parse_classes
from rerokit.cli._common import sampling_from_args

MSE_RDP_DESCRIPTION = """
Lower bound on the mean squared error of any unbiased reconstruction attack on a learner that is
(2, epsilon)-RDP (Guo et al. 2022, Thm 1): MSE >= sum_i diam_i^2 / (4 d) / (e^epsilon - 1). The
guarantee is given as --epsilon, as an RDP curve (--orders with --rdp: the value at the smallest
order >= 2 is used), as DP-SGD (--noise-multiplier, --sample-rate, --steps; optionally --sampler
and --examples-per-user) or as output perturbation of L2-regularised logistic regression (--n,
--lam, --noise-std). Thm 1 compares the dataset with the record against the dataset with the record
replaced: the guarantee must hold for REPLACE-ONE neighbours. For DP-SGD rerokit certifies it
itself (sensitivity 2C: at q = 1, 4 T / sigma^2, four times the add/remove value); a guarantee you
give with --epsilon or --rdp must be a replace-one guarantee too.
"""

ASSUMED_RELATION = "replace-one (assumed)"
"""The relation of a guarantee given as --epsilon / --rdp: Thm 1 needs replace-one, rerokit cannot check it."""

MSE_RDP_FIELDS = [
    ("mse_lower_bound", "the lower bound on the MSE of any unbiased attack (inf when epsilon_rdp2 is 0: see note)"),
    ("error", "floating-point margin subtracted from the bound"),
    ("epsilon_rdp2", "the RDP epsilon at order 2 used"),
    ("source", "where epsilon_rdp2 comes from"),
    ("neighbouring_relation", "the neighbouring relation epsilon_rdp2 holds for (Thm 1 needs replace-one)"),
    ("note", "why mse_lower_bound is inf, when it is"),
    ("noise_multiplier", "DP-SGD: the --noise-multiplier"),
    ("sample_rate", "DP-SGD: the --sample-rate"),
    ("steps", "DP-SGD: the --steps"),
    ("sampler", "DP-SGD: how batches were formed (--sampler; poisson when not given)"),
    ("examples_per_user", "DP-SGD: the unit of privacy (--examples-per-user)"),
    ("order_used", "the RDP order whose epsilon was used (the smallest listed order >= 2)"),
    ("n", "output perturbation: the --n"),
    ("lam", "output perturbation: the --lam"),
    ("noise_std", "output perturbation: the --noise-std"),
    ("lipschitz", "output perturbation: the --lipschitz"),
    ("adjacency", "output perturbation: the --adjacency"),
    ("gdp_mu", "output perturbation: mu of its mu-Gaussian-DP guarantee (sensitivity / noise_std)"),
    ("dim", "data dimension d"),
    ("diameter", "the --diameter"),
    ("attack", "the attack class bounded (unbiased)"),
    ("reference", "the paper and result"),
]

FIL_DESCRIPTION = """
Per-sample diagonal Fisher information leakage (dFIL) and the Cramer-Rao lower bound 1 / dFIL on
the MSE of any unbiased attack (Guo et al. 2022, Thm 2), for a model trained on the records of
--dataset with the labels --classes: output perturbation of a GLM fitted to optimality (default,
needs --noise-std), or DP-SGD on an MLP with FIL accounting (--dpsgd, Alg. 1). Reports the
minimum, median and maximum over the records.
"""

FIL_FIELDS = [
    ("mechanism", "output perturbation or DP-SGD"),
    ("model", "the model trained"),
    ("n", "records (output perturbation)"),
    ("dim", "data dimension (output perturbation)"),
    ("dfil_min", "smallest per-record dFIL (output perturbation)"),
    ("dfil_median", "median per-record dFIL"),
    ("dfil_max", "largest per-record dFIL"),
    ("mse_lower_bound_min", "smallest per-record MSE lower bound 1 / dFIL"),
    ("mse_lower_bound_median", "median of the bound"),
    ("mse_lower_bound_max", "largest bound (inf when a record was never sampled: see note)"),
    ("epsilon_rdp2", "RDP epsilon at order 2 of the output perturbation (logistic)"),
    ("rdp_mse_lower_bound", "the RDP-based bound of Thm 1 for comparison (logistic)"),
    ("lipschitz", "Lipschitz constant used for epsilon_rdp2 (max ||[1, x]||)"),
    ("samples_never_sampled", "DP-SGD: records never in a batch (dFIL 0, no finite bound)"),
    ("kappa", "DP-SGD: the subsampling factor of the FIL accounting (1: convexity bound)"),
    ("epsilon_step", "DP-SGD: per-step epsilon used by --subsampling amplified"),
    ("note", "per-record FIL can itself leak information about the record (Guo et al. 2022, footnote 2); and why a "
     "bound is inf, when one is"),
    ("settings", "the inputs as used"),
    ("reference", "the paper and result"),
]


def _floats(name: str, text: str) -> list[float]:
    try:
        return [float(t) for t in text.split(",")]
    except ValueError:
        raise ValueError(f"{name} must be a comma-separated list of numbers, got {text!r}") from None


def _mse_rdp(args: argparse.Namespace) -> dict[str, Any]:
    from rerokit.bounds import mse

    diam: Any = _floats("diameter", args.diameter)
    if len(diam) == 1:
        diam = diam[0]
    dpsgd = args.noise_multiplier is not None or args.sample_rate is not None or args.steps is not None
    sources = [args.epsilon is not None, args.orders is not None or args.rdp is not None, args.n is not None, dpsgd]
    if args.n is None and (args.lam is not None or args.noise_std is not None or args.lipschitz != 1.0):
        raise ValueError("--lam, --noise-std and --lipschitz describe output perturbation and need --n")
    if sum(sources) != 1:
        raise ValueError(
            "give exactly one of --epsilon, --orders with --rdp, --n with --lam and --noise-std, "
            "or --noise-multiplier with --sample-rate and --steps"
        )
    sampling = sampling_from_args(args)  # checked whatever the source: a bad value is refused, never ignored
    if not dpsgd and (sampling["sampler"] is not None or sampling["examples_per_user"] != 1):
        raise ValueError("--sampler and --examples-per-user describe a DP-SGD run: give them with --noise-multiplier, "
                         "--sample-rate and --steps")
    extra: dict[str, Any] = {}
    note = None
    if args.epsilon is not None:
        eps = args.epsilon
        source = "epsilon"
        extra = {"neighbouring_relation": ASSUMED_RELATION}
    elif dpsgd:
        from rerokit.accounting.events import replace_one_rdp_order2
        from rerokit.bounds.schedule import Schedule

        if args.noise_multiplier is None or args.sample_rate is None or args.steps is None:
            raise ValueError("DP-SGD needs --noise-multiplier, --sample-rate and --steps")
        sched = Schedule.from_settings(args.noise_multiplier, args.sample_rate, args.steps, **sampling)
        r = replace_one_rdp_order2(sched)
        eps, source = r.epsilon, f"DP-SGD, replace-one: {r.method}"
        extra = {"neighbouring_relation": r.relation, "noise_multiplier": args.noise_multiplier,
                 "sample_rate": args.sample_rate, "steps": args.steps, "sampler": sched.sampler,
                 "examples_per_user": sched.examples_per_user, "order_used": r.order}
    elif args.n is not None:
        if args.lam is None or args.noise_std is None:
            raise ValueError("--n needs --lam and --noise-std (output perturbation)")
        eps = mse.output_perturbation_rdp(args.n, args.lam, args.noise_std, 2.0, lipschitz=args.lipschitz, adjacency=args.adjacency)
        source = "output perturbation (Gaussian, sensitivity 2L/(n lam) replace-one or L/(n lam) add/remove)"
        extra = {"neighbouring_relation": "replace-one" if args.adjacency == "replace" else "add/remove",
            "n": args.n, "lam": args.lam, "noise_std": args.noise_std, "lipschitz": args.lipschitz, "adjacency": args.adjacency,
            "gdp_mu": mse.output_perturbation_sensitivity(args.n, args.lam, args.lipschitz, args.adjacency) / args.noise_std,
        }
    else:
        if args.orders is None or args.rdp is None:
            raise ValueError("--orders and --rdp must be given together")
        eps, order = mse.rdp_epsilon_at_order(_floats("orders", args.orders), _floats("rdp", args.rdp), 2.0)
        source = "rdp curve"
        extra = {"neighbouring_relation": ASSUMED_RELATION, "order_used": order}
    b = mse.rdp_mse_lower_bound(eps, diam, args.dim)
    if b.value == float("inf"):
        note = ("mse_lower_bound is inf: epsilon_rdp2 is 0 (to double precision), so the mechanism reveals "
                "nothing measurable at order 2 and no unbiased attack has a finite MSE (Thm 1: "
                "diameter^2 / 4 / (e^epsilon - 1))")
    from rerokit.report.results import MseRdpBound

    rel = extra.pop("neighbouring_relation")
    return MseRdpBound(mse_lower_bound=b.value, error=b.error, epsilon_rdp2=eps, source=source, neighbouring_relation=rel,
                       details=extra, note=note, dim=b.inputs["dim"], diameter=tuple(diam) if isinstance(diam, list)
                       else diam, attack="unbiased", reference="Guo et al. 2022, Thm 1").to_dict()


def _summary(prefix: str, arr) -> dict[str, float]:
    import numpy as np

    a = np.asarray(arr, dtype=float)
    return {f"{prefix}_min": float(a.min()), f"{prefix}_median": float(np.median(a)), f"{prefix}_max": float(a.max())}


# options of one branch of `bound fil` (with their defaults): given to the other, they would be ignored
_FIL_DPSGD_ONLY = {"noise_multiplier": None, "sample_rate": None, "steps": None, "clip": 1.0, "lr": 0.5, "hidden": "10",
                   "coords": None, "subsampling": "convexity", "delta": None, "repeats": 1, "seed": 0}
_FIL_OUTPUT_ONLY = {"noise_std": None, "model": "logistic", "classes": "0,1", "lam": 0.01}


def _fil(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    other = _FIL_OUTPUT_ONLY if args.dpsgd else _FIL_DPSGD_ONLY
    given = [k for k, default in other.items() if getattr(args, k) != default]  # nan != default: refused too
    if given:
        opts = ", ".join("--" + k.replace("_", "-") for k in given)
        raise ValueError(f"{opts}: " + ("output-perturbation options, which have no effect with --dpsgd" if args.dpsgd
                                        else "DP-SGD options, which need --dpsgd (without it the GLM's output "
                                        "perturbation is bounded)"))

    from rerokit.data import load_dataset

    if args.dpsgd:
        for name in ("noise_multiplier", "sample_rate", "steps"):
            if getattr(args, name) is None:
                raise ValueError(f"--dpsgd needs --{name.replace('_', '-')}")
    from rerokit._files import check_data_args
    from rerokit.training.devices import resolve_device

    check_data_args(args.dataset, args.data_path)
    resolve_device(args.device)
    ds = load_dataset(args.dataset, args.data_path) if args.data_path else load_dataset(args.dataset)
    if args.dpsgd:
        import torch

        from rerokit.training.fil import FILOptions, dpsgd_fil
        from rerokit.training.settings import DPSGDSettings
        from rerokit.training.models import global_rng, make_mlp

        X = torch.as_tensor(np.asarray(ds.flat), dtype=torch.float32)
        Y = torch.as_tensor(np.asarray(ds.y))
        try:
            hidden = [int(h) for h in args.hidden.split(",")] if args.hidden else []
        except ValueError:
            raise ValueError(f"hidden must be comma-separated integers >= 1, got {args.hidden!r}") from None
        if any(h < 1 for h in hidden):
            raise ValueError(f"hidden must be comma-separated integers >= 1, got {args.hidden!r}")
        from rerokit._resources import check_memory, dpsgd_fil_bytes, mlp_num_params

        P = mlp_num_params([X.shape[1], *hidden, int(ds.num_classes)])
        check_memory("--hidden", dpsgd_fil_bytes(X.shape[0], P), f"an MLP of {P} parameters and per-sample gradients")
        with global_rng(args.seed):  # seeded initialisation, the global generator restored after
            module = make_mlp(X.shape[1], hidden, int(ds.num_classes), activation="tanh")
        settings = DPSGDSettings(noise_multiplier=args.noise_multiplier, clip=args.clip, steps=args.steps, lr=args.lr,
                                 sample_rate=args.sample_rate)
        fil = FILOptions(coords=args.coords, subsampling=args.subsampling, delta=args.delta, repeats=args.repeats)
        res = dpsgd_fil(module, X, Y, settings, seed=args.seed, fil=fil, progress=not args.json, device=args.device)
        from rerokit.experiments.guo_dfil import FIL_LEAK_NOTE

        extra_note = {"note": FIL_LEAK_NOTE}
        if res.summary()["samples_never_sampled"] > 0:
            extra_note["note"] = (FIL_LEAK_NOTE + "; records never in a batch have dFIL 0 and an infinite MSE lower "
                                  "bound (nothing about them is released), so mse_lower_bound_max is inf")
        return {
            "mechanism": "DP-SGD, GELU clipping (Guo et al. 2022, Alg. 1)",
            "model": f"mlp {X.shape[1]}-{'-'.join(map(str, hidden))}-{int(ds.num_classes)} tanh".replace("--", "-"),
            **res.summary(),
            **_summary("mse_lower_bound", res.mse_lower_bound),
            **extra_note,
            "settings": res.settings,
            "reference": "Guo et al. 2022, Thm 2-4, Alg. 1, Eq. 5",
        }
    from rerokit.attacks.glm import fit_glm
    from rerokit.bounds.mse import output_perturbation_rdp, rdp_mse_lower_bound
    from rerokit.training.fil import output_perturbation_dfil

    from rerokit._validate import check_nonnegative, check_positive

    if args.noise_std is None:
        raise ValueError("--noise-std is required for output perturbation (or pass --dpsgd)")
    check_positive("noise_std", args.noise_std)
    check_nonnegative("lam", args.lam)
    X = np.asarray(ds.flat, dtype=float)
    y = np.asarray(ds.y)
    cls = parse_classes(args.classes, np.unique(y), args.dataset)
    keep = np.isin(y, cls)
    X, y = X[keep], y[keep]
    n = len(y)
    kind, yy, lam = glm_problem(args.model, cls, y, args.lam)
    if kind == "logistic" and lam > 0:
        # checked before the fit: an infinite eps_2 means lam and noise_std are too small to compute with
        eps2 = output_perturbation_rdp(n, lam, args.noise_std, lipschitz=float(np.sqrt(1.0 + (X**2).sum(1)).max()))
        if not np.isfinite(eps2):
            raise ValueError(f"lam and noise_std are too small: the (2, eps)-RDP of output perturbation is infinite "
                             f"(lam={lam:g}, noise_std={args.noise_std:g}); use lam * noise_std >= 1e-150")
    model = fit_glm(X, yy, kind, n * lam)
    dfil = output_perturbation_dfil(model, X, yy, args.noise_std, device=args.device)
    out: dict[str, Any] = {
        "mechanism": "output perturbation theta* + N(0, noise_std^2 I)",
        "model": kind,
        "n": n,
        "dim": X.shape[1],
        **_summary("dfil", dfil),
        **_summary("mse_lower_bound", 1.0 / dfil),
    }
    if kind == "logistic" and lam > 0:
        lip = float(np.sqrt(1.0 + (X**2).sum(1)).max())
        eps2 = output_perturbation_rdp(n, lam, args.noise_std, lipschitz=lip)
        out["epsilon_rdp2"] = eps2
        out["rdp_mse_lower_bound"] = rdp_mse_lower_bound(eps2, 1.0).value
        out["lipschitz"] = lip
    out["settings"] = {"dataset": args.dataset, "classes": list(cls), "lam": lam, "noise_std": args.noise_std}
    from rerokit.experiments.guo_dfil import FIL_LEAK_NOTE

    out["note"] = FIL_LEAK_NOTE
    out["reference"] = "Guo et al. 2022, Thm 2, Sec. 7.1"
    return out


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "mse-rdp", _mse_rdp, description=MSE_RDP_DESCRIPTION, fields=MSE_RDP_FIELDS,
                    help="MSE lower bound of unbiased attacks on a (2, eps)-RDP learner (Guo et al. 2022 Thm 1)")
    p.add_argument("--epsilon", type=float, help="RDP epsilon at order 2")
    p.add_argument("--orders", help="comma-separated RDP orders (with --rdp)")
    p.add_argument("--rdp", help="comma-separated RDP epsilons at --orders")
    add_schedule_args(p, required=False, what="DP-SGD (all three together): ")
    add_sampling_args(p)
    p.add_argument("--n", type=int, help="output perturbation: training set size")
    p.add_argument("--lam", type=float, help="output perturbation: L2 coefficient of (1/n) sum l + lam/2 ||w||^2")
    p.add_argument("--noise-std", type=float, help="output perturbation: Gaussian noise standard deviation")
    p.add_argument("--lipschitz", type=float, default=1.0, help="Lipschitz constant of the loss (max ||x||), default 1")
    p.add_argument("--adjacency", default="replace", choices=("replace", "add_remove"),
                   help="neighbouring datasets: replace one record (default) or add/remove one")
    p.add_argument("--diameter", default="1", help="diameter of the data space per coordinate (number or comma list)")
    p.add_argument("--dim", type=int, help="data dimension d (with a scalar diameter)")
    add_json_flag(p)

    p = add_command(sub, "fil", _fil, description=FIL_DESCRIPTION, fields=FIL_FIELDS,
                    help="per-sample FIL and Cramer-Rao MSE bound of a trained model (Guo et al. 2022 Thm 2)")
    add_data_args(p)
    add_glm_args(p, classes="labels of the dataset kept, comma-separated (output perturbation); 2 = binary, "
                 "more = multinomial")
    p.add_argument("--noise-std", type=float, help="output perturbation noise standard deviation")
    p.add_argument("--dpsgd", action="store_true", help="DP-SGD with FIL accounting (Alg. 1) instead")
    add_schedule_args(p, required=False, what="DP-SGD: ")
    add_clip_arg(p, "DP-SGD: clipping norm C > 0 (default 1)", default=1.0)
    p.add_argument("--lr", type=float, default=0.5, help="DP-SGD: learning rate (default 0.5)")
    p.add_argument("--hidden", default="10", help="MLP hidden widths, comma-separated (digits: 64-10-10)")
    p.add_argument("--coords", type=int, default=None, help="coordinates sampled per step for the trace (Eq. 5); default all")
    p.add_argument("--subsampling", default="convexity", choices=("convexity", "amplified"),
                   help="FIL accounting of subsampling: convexity bound (default) or amplified (Thm 4)")
    p.add_argument("--delta", type=float, default=None, help="per-step delta of the amplified subsampling factor")
    p.add_argument("--repeats", type=int, default=1, help="DP-SGD runs averaged (Monte Carlo of Eq. 4; paper: 10)")
    p.add_argument("--seed", type=int, default=0, help="seed >= 0 (DP-SGD; default 0)")
    add_device_arg(p, "the Jacobians (and DP-SGD) are computed")
    add_json_flag(p)
