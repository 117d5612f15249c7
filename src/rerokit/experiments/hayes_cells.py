"""Audit cells for the Hayes, Mahloujifar & Balle (2023) appendix figures that the plain audit
(:mod:`rerokit.experiments.audit`) does not cover: a prior of noise images (Fig. 9), the average
gradient norm over training (Fig. 13) and the pixel-tolerance success of the gradient attack
(App. I, Fig. 12).

Each cell is a resumable run of trials in fixed blocks, exactly as the audits of
:mod:`rerokit.experiments.audit` (same trial seeds, same ``TrialLog`` files, same executors):

* :func:`run_prior_cell` - one prior-aware audit whose prior is ``"data"`` (N distinct digits, as
  in the plain audit: trial i draws the same prior, target and D- as there) or ``"noise"``: N
  images of i.i.d. uniform pixels on [0, R], R = sqrt(12 tr Cov(X) / d), so that the expected
  squared distance between two candidates, d R^2 / 6, equals that of two random data points,
  2 tr Cov(X) (Hayes et al. App. E: "uniform noise that has the same intra-sample distance
  statistics as the MNIST prior"); labels uniform over the classes; D- from the data. With
  ``grad_norms`` each trial also records the average over all training points (D- and z*) and all
  T steps of the per-sample gradient norm ||grad_theta l(theta_t, z)|| and of its clipped norm
  min(||.||, C) (Fig. 13 (a)).
* :func:`run_tolerance_cell` - the gradient-based attack (Eq. 1) and, for each fraction rho,
  whether (1/d) sum_i 1[|z_i - zhat_i| < tau] >= rho (App. I; tau = 32/255 in the paper).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
import torch

from rerokit.executors import RunOptions
from rerokit._validate import check_choice, check_instance, check_int, check_positive, check_probability
from rerokit.attacks.gradient import GradientAttack
from rerokit.attacks.result import AttackResult
from rerokit.experiments.audit import PRIOR_AWARE_ATTACKS, AuditConfig, AuditReport, block_trials, resolve_audit_device
from rerokit.experiments.audit import TrialBlocks, run_trial_blocks, initial_state, train_chunk, candidate_statistics_many, make_trial
from rerokit.experiments.audit import rero_gamma

__all__ = ["PRIORS", "CellOptions", "TOLERANCE", "noise_range", "run_prior_cell", "run_tolerance_cell",
           "tolerance_gamma"]

PRIORS = ("data", "noise")
TOLERANCE = 32.0 / 255.0
"""tau of Hayes et al. App. I."""


@dataclass(frozen=True)
class CellOptions:
    """What a cell computes besides training.

    Attributes:
        prior: ``"data"`` or ``"noise"`` (see the module docstring).
        attacks: prior-aware attacks (:data:`rerokit.experiments.audit.PRIOR_AWARE_ATTACKS`, not
            ``alg2_nosub``).
        grad_norms: record the average (clipped) gradient norm over training points and steps.
        chunk_size: trials trained together (a block; recorded in the file's settings).
        rhos: pixel-fraction thresholds rho in [0, 1] of the tolerance cell.
        tolerance: tau > 0 of the tolerance cell.
        iterations, restarts, attack_lr: the gradient attack's Adam steps, restarts, step size.
    """

    prior: str = "data"
    attacks: tuple[str, ...] = ("alg2",)
    grad_norms: bool = False
    chunk_size: int = 32
    rhos: tuple[float, ...] = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    tolerance: float = TOLERANCE
    iterations: int = 200
    restarts: int = 2
    attack_lr: float = 0.05

    def __post_init__(self) -> None:
        check_choice("prior", self.prior, PRIORS)
        object.__setattr__(self, "attacks", tuple(self.attacks))
        if not self.attacks:
            raise ValueError("attacks must name at least one of alg2, alg3, loglik")
        for a in self.attacks:
            check_choice("attacks", a, tuple(x for x in PRIOR_AWARE_ATTACKS if x != "alg2_nosub"))
        if not isinstance(self.grad_norms, bool):
            raise TypeError("grad_norms must be a bool")
        check_int("chunk_size", self.chunk_size, minimum=1)
        object.__setattr__(self, "rhos", tuple(check_probability("rhos", r, low_open=False) for r in self.rhos))
        if not self.rhos:
            raise ValueError("rhos must hold at least one fraction in [0, 1]")
        check_positive("tolerance", self.tolerance)
        check_int("iterations", self.iterations, minimum=1)
        check_int("restarts", self.restarts, minimum=1)
        check_positive("attack_lr", self.attack_lr)

    def gradient_attack(self) -> GradientAttack:
        """The gradient attack of the tolerance cell (``iterations``, ``restarts``, ``attack_lr``)."""
        return GradientAttack(self.iterations, self.restarts, self.attack_lr)


@dataclass(frozen=True)
class _CellJob:
    """What every block of a cell needs (``cfg`` and ``device`` as the audit's job)."""

    cfg: AuditConfig
    options: CellOptions
    device: str = "cpu"


def noise_range(X: np.ndarray) -> float:
    """R such that uniform pixels on [0, R]^d have the data's expected squared pairwise distance.

    E||u - v||^2 = d R^2 / 6 for u, v uniform on [0, R]^d and E||x - x'||^2 = 2 tr Cov(X) for two
    independent data points, so R = sqrt(12 tr Cov(X) / d).

    Args:
        X: the data, shape (n, ...) with n >= 2.

    Returns:
        R > 0 as a float.
    """
    flat = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
    if flat.shape[0] < 2:
        raise ValueError("X must hold at least 2 points")
    return float(math.sqrt(12.0 * flat.var(axis=0, ddof=1).sum() / flat.shape[1]))


def _noise_trial(ds, cfg: AuditConfig, seed: int, R: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(D- indices, candidates (N, ...), their labels, target position) of a noise-prior trial."""
    rng = np.random.default_rng([int(seed), 0])
    known = rng.permutation(ds.n)[: cfg.n_known]
    cand = rng.uniform(0.0, R, size=(cfg.prior_size, *ds.sample_shape)).astype(np.float32)
    labels = rng.integers(0, ds.num_classes, size=cfg.prior_size)
    return known, cand, labels, int(rng.integers(cfg.prior_size))


def _trial_tensors(job: _CellJob, ds, X: torch.Tensor, y: torch.Tensor, seeds):
    """Training sets (k, n, ...) with z* last, the candidates (k, N, ...), labels, targets (k,)."""
    cfg, dev = job.cfg, job.device
    if job.options.prior == "data":
        tri = [make_trial(ds.n, cfg.prior_size, cfg.n_known, s, cfg.prior_weights) for s in seeds]
        idx = torch.as_tensor(np.stack([np.concatenate([t.known, [t.target_index]]) for t in tri]), dtype=torch.long)
        pidx = torch.as_tensor(np.stack([t.prior for t in tri]), dtype=torch.long)
        idx, pidx = idx.to(dev), pidx.to(dev)
        return X[idx], y[idx], X[pidx], y[pidx], [t.target for t in tri]
    R = noise_range(ds.X)
    parts = [_noise_trial(ds, cfg, s, R) for s in seeds]
    Xc = torch.as_tensor(np.stack([p[1] for p in parts])).to(dev)
    yc = torch.as_tensor(np.stack([p[2] for p in parts]), dtype=y.dtype).to(dev)
    tgt = [p[3] for p in parts]
    kidx = torch.as_tensor(np.stack([p[0] for p in parts]), dtype=torch.long).to(dev)
    ar = torch.arange(len(parts), device=dev)
    Xtr = torch.cat([X[kidx], Xc[ar, tgt][:, None]], dim=1)
    ytr = torch.cat([y[kidx], yc[ar, tgt][:, None]], dim=1)
    return Xtr, ytr, Xc, yc, tgt


_NORM_CLIP = 1e4  # a clipping norm no per-sample gradient here reaches: the engine's statistics are then unclipped


def _mean_grad_norms(fm, thetas: torch.Tensor, Xtr: torch.Tensor, ytr: torch.Tensor, clip: float) -> np.ndarray:
    """(k, 2): per trial the average over steps and points of ||grad|| and of min(||grad||, C).

    The squared norms come from :func:`candidate_statistics_many` (the MLP engine's ghost norms for
    MLPs: no per-sample gradient is formed) with the training points as "candidates" and a clipping
    norm of 1e4, so n_{t,i} C'^2 = ||grad||^2 exactly; a norm that reaches 1e4 is refused.
    """
    zeros = torch.zeros_like(thetas)
    _, sq = candidate_statistics_many(fm, thetas, zeros, Xtr, ytr, _NORM_CLIP)
    nrm = (sq.double() * _NORM_CLIP**2).sqrt()  # (k, T, n)
    if float(nrm.max()) >= 0.99 * _NORM_CLIP:
        raise ValueError(f"a per-sample gradient norm reached {float(nrm.max()):.3g}: too large to average here")
    return torch.stack([nrm.mean((1, 2)), nrm.clamp(max=clip).mean((1, 2))], dim=1).cpu().numpy()


def _prior_block(job: _CellJob, block) -> Iterator[tuple[int, dict[str, Any]]]:
    """The records of the missing trials of one block of a prior-aware cell."""
    from rerokit.attacks import prior_aware as pa
    from rerokit.training import train_dpsgd_many

    cfg, opt = job.cfg, job.options
    ds, fm, X, y = initial_state(cfg, job.device)
    seeds = list(block.payload)
    Xtr, ytr, Xc, yc, tgt = _trial_tensors(job, ds, X, y, seeds)
    theta0 = fm.init_flat_many(seeds).to(job.device)
    tr = train_dpsgd_many(fm, theta0, Xtr, ytr, cfg.dpsgd_settings(), seed=seeds, target_index=cfg.n_known,
                          record="gbar_only").transcript
    inner, sq = (s.double() for s in candidate_statistics_many(fm, tr.thetas, tr.gbar, Xc, yc, cfg.clip))
    guesses = {a: pa.guess(pa.scores(a, inner, sq, noise_multiplier=cfg.noise_multiplier or None,
                                     sample_rate=cfg.sample_rate)).cpu().numpy() for a in opt.attacks}
    tgt_sq = sq[torch.arange(len(seeds), device=sq.device), :, torch.as_tensor(tgt, device=sq.device)].cpu()
    norms = _mean_grad_norms(fm, tr.thetas, Xtr, ytr, cfg.clip) if opt.grad_norms else None
    todo = set(block.todo)
    for j, s in enumerate(seeds):
        i = block.lo + j
        if i not in todo:
            continue
        rec = {"seed": s, "target": int(tgt[j]), "guess": {a: int(guesses[a][j]) for a in opt.attacks},
               "success": {a: bool(guesses[a][j] == tgt[j]) for a in opt.attacks},
               "target_clipped_fraction": float((tgt_sq[j] >= 0.999).double().mean())}
        if opt.grad_norms:
            rec["grad_norm"], rec["clipped_grad_norm"] = float(norms[j, 0]), float(norms[j, 1])
        yield i, rec


def _tolerance_block(job: _CellJob, block) -> Iterator[tuple[int, dict[str, Any]]]:
    """The records of the missing trials of one block of a tolerance cell (gradient attack)."""
    from rerokit.attacks.gradient import gradient_attack, mse

    cfg, opt = job.cfg, job.options
    ds, fm, _, _ = initial_state(cfg, job.device)
    tri = block_trials(cfg, ds.n, block)
    tr = train_chunk(cfg, fm, ds, tri, "gbar_only", device=job.device).transcript
    todo = set(block.todo)
    for j, t in enumerate(tri):
        i = block.lo + j
        if i not in todo:
            continue
        x = ds.X[t.target_index]
        o = gradient_attack(fm, tr.thetas[j], tr.gbar[j], int(ds.y[t.target_index]), cfg.clip, ds.sample_shape,
                            data_range=ds.data_range, attack=opt.gradient_attack(), seed=t.seed % (2**31))
        z_hat = o.z_hat.cpu().numpy()
        within = int(np.sum(np.abs(z_hat.reshape(-1) - x.reshape(-1)) < opt.tolerance))
        yield i, {"seed": t.seed, "target_index": t.target_index, "mse": mse(o.z_hat.cpu(), x), "within": within}


_prior_block.thread_safe = True  # type: ignore[attr-defined]
_tolerance_block.thread_safe = True  # type: ignore[attr-defined]


def check_prior_fits(cfg: AuditConfig, prior: str) -> None:
    from rerokit.data import load_dataset

    n = load_dataset("digits").n if cfg.dataset == "digits" else None
    if n is None:
        return
    if prior == "data":
        make_trial(n, cfg.prior_size, cfg.n_known, 0, cfg.prior_weights)
    elif cfg.n_known > n:
        raise ValueError(f"n_known must be <= the dataset size {n}, got {cfg.n_known}")


def run_prior_cell(cfg: AuditConfig, trials: int, seed: int, *, options: CellOptions = CellOptions(),
                   out: str | None = None, resume: bool = False, progress: bool = True, executor: Any = "local",
                   device: str = "cpu") -> AuditReport:
    """A prior-aware audit (Hayes et al. 2023, Alg. 2/3, App. G) with a data or noise prior and,
    optionally, the average gradient norms of Fig. 13 (see the module docstring).

    Args:
        cfg: the audit settings (uniform prior: ``prior_weights`` must be None).
        trials: trials K >= 1.
        seed: the run's seed >= 0 (trial i depends on (seed, i) only).
        options: the :class:`CellOptions` (prior, attacks, grad_norms, chunk_size).
        out: JSON-lines file of the trials (None: kept in memory only); resume: continue it.
        progress: a progress bar on stderr.
        executor: ``"local"``, ``"ray"`` or a :class:`rerokit.executors.Executor`.
        device: ``"cpu"``, ``"cuda"`` or ``"auto"``.

    Returns:
        The :class:`rerokit.experiments.audit.AuditReport`: one success result per attack, plus
        ``grad_norm`` and ``clipped_grad_norm`` (means over trials, Student-t intervals) with
        ``grad_norms``; gamma is the ReRo bound (Thm 2) at kappa = 1/N.

    Raises:
        ValueError: if a setting is out of range (before any training).
    """
    from rerokit.experiments.records import Bool, DictOf, Int, Num

    check_instance("options", options, CellOptions)
    if cfg.prior_weights is not None:  # the scores here assume a uniform prior (kappa = 1/N)
        raise ValueError("prior_weights must be None here (uniform prior); weighted priors: "
                         "rerokit.experiments.audit.run_prior_aware_audit")
    if "loglik" in options.attacks and cfg.noise_multiplier == 0:
        raise ValueError("attack loglik needs noise_multiplier > 0")
    check_prior_fits(cfg, options.prior)
    job = _CellJob(cfg, options, resolve_audit_device(device))
    schema = {"seed": Int(minimum=0), "target": Int(minimum=0), "guess": DictOf(Int(minimum=0), keys=options.attacks),
              "success": DictOf(Bool, keys=options.attacks), "target_clipped_fraction": Num(minimum=0)}
    if options.grad_norms:
        schema.update(grad_norm=Num(minimum=0), clipped_grad_norm=Num(minimum=0))
    extra = {"prior": options.prior, "attacks": list(options.attacks), "grad_norms": options.grad_norms}
    opts = RunOptions(out=out, resume=resume, chunk_size=options.chunk_size, progress=progress, executor=executor)
    spec = TrialBlocks(schema, extra, f"prior-aware trials ({options.prior} prior)")
    _, seed, settings, recs = run_trial_blocks(job, _prior_block, trials, seed, opts, spec)
    gamma = rero_gamma(cfg.noise_multiplier, cfg.sample_rate, cfg.steps, cfg.kappa)
    results = {a: AttackResult.from_successes([r["success"][a] for r in recs], seed=seed, settings=settings,
                                              extras={"gamma": gamma, "kappa": cfg.kappa}) for a in options.attacks}
    if options.grad_norms:
        for k in ("grad_norm", "clipped_grad_norm"):
            results[k] = AttackResult.from_values([r[k] for r in recs], seed=seed, metric=k, settings=settings,
                                                  support=(0.0, float("inf")))
    return AuditReport(results, gamma, cfg.kappa, cfg.noise_multiplier, recs, settings, seed, kind="prior-aware",
                       primary=options.attacks[0], out=None if out is None else str(out))


def tolerance_gamma(cfg: AuditConfig, rho: float, tolerance: float = TOLERANCE, levels: int | None = 17,
                    dim: int = 64) -> tuple[float, float]:
    """(log kappa, gamma) of the pixel-tolerance criterion (Hayes et al. 2023, App. I) for DP-SGD.

    kappa is the best oblivious success against a uniform-pixel prior
    (:class:`rerokit.bounds.priors.PixelTolerancePrior`; the digits' pixels take 17 levels), and
    gamma the ReRo bound of Thm 2 at that kappa (:func:`rerokit.bounds.dpsgd.rero_dpsgd` with
    ``log_kappa``; 1 without noise). The bound holds for a target drawn from that prior, the
    setting of the paper's Fig. 12; a digit is not drawn from it.

    Args:
        cfg: the DP-SGD settings (sigma, q, T).
        rho: the fraction of pixels in [0, 1] that must be within ``tolerance``.
        tolerance: tau > 0.
        levels: pixel levels of the prior (None: continuous on [0, 1]).
        dim: pixels d.

    Returns:
        ``(log_kappa, gamma)``.
    """
    from rerokit.bounds.dpsgd import rero_dpsgd
    from rerokit.bounds.priors import PixelTolerancePrior

    lk = float(PixelTolerancePrior(d=dim, delta=tolerance, rho=rho, levels=levels).log_kappa())
    if cfg.noise_multiplier == 0 or lk >= 0:
        return lk, 1.0
    return lk, float(rero_dpsgd(cfg.noise_multiplier, cfg.sample_rate, cfg.steps, log_kappa=lk,
                                comparisons=False).value)


def run_tolerance_cell(cfg: AuditConfig, trials: int, seed: int, *, options: CellOptions = CellOptions(),
                       out: str | None = None, resume: bool = False, progress: bool = True, executor: Any = "local",
                       device: str = "cpu") -> AuditReport:
    """The gradient-based attack (Hayes et al. 2023, Eq. 1) judged by the pixel-tolerance criterion of App. I.

    Args:
        cfg, trials, seed, out, resume, progress, executor, device: as in :func:`run_prior_cell`.
        options: the :class:`CellOptions` (rhos, tolerance, iterations, restarts, attack_lr,
            chunk_size).

    Returns:
        An :class:`AuditReport` (kind ``"gradient"``): ``mse`` (mean), and per rho a result
        ``rho<rho>`` (success rate, Clopper-Pearson interval) whose extras hold ``gamma`` and
        ``log_kappa`` (:func:`tolerance_gamma`); the report's gamma is that of the first rho.
    """
    from rerokit.bounds.priors import PixelTolerancePrior
    from rerokit.data import load_dataset
    from rerokit.experiments.records import Int, Num

    check_instance("options", options, CellOptions)
    check_prior_fits(cfg, "data")
    job = _CellJob(cfg, options, resolve_audit_device(device))
    schema = {"seed": Int(minimum=0), "target_index": Int(minimum=0), "mse": Num(minimum=0),
              "within": Int(minimum=0)}
    extra = {"attack": "gradient", "tolerance": options.tolerance, "iterations": options.iterations,
             "restarts": options.restarts, "attack_lr": options.attack_lr}
    opts = RunOptions(out=out, resume=resume, chunk_size=options.chunk_size, progress=progress, executor=executor)
    spec = TrialBlocks(schema, extra, "gradient-attack trials")
    _, seed, settings, recs = run_trial_blocks(job, _tolerance_block, trials, seed, opts, spec)
    dim = int(np.prod(load_dataset(cfg.dataset).sample_shape)) if cfg.dataset == "digits" else 64
    results = {"mse": AttackResult.from_values([r["mse"] for r in recs], seed=seed, metric="mse", settings=settings,
                                              support=(0.0, float("inf")))}
    first = None
    for rho in options.rhos:
        lk, g = tolerance_gamma(cfg, rho, options.tolerance, dim=dim)
        need = PixelTolerancePrior(d=dim, delta=options.tolerance, rho=rho).required  # ceil(rho d) pixels
        first = first or (g, math.exp(lk))
        results[f"rho{rho:g}"] = AttackResult.from_successes(
            [r["within"] >= need for r in recs], seed=seed, settings=settings,
            extras={"gamma": g, "log_kappa": lk, "rho": rho})
    return AuditReport(results, first[0], first[1], cfg.noise_multiplier, recs, settings, seed, kind="gradient", primary=f"rho{options.rhos[0]:g}",
                       out=None if out is None else str(out))
