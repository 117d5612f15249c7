"""Auditing DP-SGD with reconstruction attacks (Hayes, Mahloujifar & Balle 2023, Sec. 3-4, App. A).

One trial (App. A, Table 1):

1. draw a prior pi = {z_1..z_N} of N distinct points of the dataset, the target z* from pi
   (uniformly, or with the given prior weights p_i), and the known set D- of ``n_known`` further
   points from the rest of the dataset;
2. train the model with DP-SGD on D- + {z*} from a fresh initialisation, recording the
   transcript (theta_t, privatized sums, batches, g-bar_t);
3. run the attacks on the transcript and record whether each guessed z*.

Success rates come with exact Clopper-Pearson intervals and are compared with the ReRo bound
gamma of DP-SGD (Hayes et al. Thm 2, :func:`rerokit.bounds.dpsgd.rero_dpsgd`) at the prior's
baseline kappa = max_i p_i (1/N for a uniform prior).

Randomness: trial i uses ``s_i = trial_seeds(seed, trials_max)[i]`` - a seed that depends on
``(seed, i)`` only (:func:`rerokit.training.trial_seeds`); the data draw uses
``numpy.random.default_rng([s_i, 0])``, the initialisation ``init_flat(s_i)``, the DP-SGD
noise/batches ``train_dpsgd_many(seeds=[s_i])``, the gradient attack's restarts ``s_i mod 2^31``.
A trial's result therefore does not depend on how many trials run or in which chunk.

Vectorisation and resume: trials run in chunks of ``chunk_size`` through ``train_dpsgd_many``
(and vmapped candidate scoring); every trial of a finished chunk is appended to the JSON-lines
``TrialLog`` at once (the gradient audit appends each trial as soon as its attack is done). An
interruption loses at most the chunk in flight; ``resume=True`` skips
the trials already in the file. A resumed run equals a straight run with the same seed up to
floating-point rounding (~1e-6 relative, from batched kernels summing in another order), i.e.
the same decisions unless two candidates' scores tie to that precision.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np
import torch

from rerokit._validate import check_choice, check_int, check_nonnegative, check_positive, check_probability
from rerokit.attacks.result import AttackResult

__all__ = [
    "PRIOR_AWARE_ATTACKS",
    "AuditConfig",
    "Trial",
    "AuditReport",
    "make_trial",
    "build_model",
    "rero_gamma",
    "candidate_statistics_many",
    "run_prior_aware_audit",
    "run_gradient_audit",
]

PRIOR_AWARE_ATTACKS = ("alg2", "alg3", "loglik", "alg2_nosub")
"""Attacks the prior-aware audit can run: Alg. 2, Alg. 3, App. G log-likelihood, and Alg. 2
without known-gradient subtraction (App. E, Fig. 10)."""

_MAX_TRIAL_ID = 10**9


@dataclass(frozen=True)
class AuditConfig:
    """Settings of an audit (echoed into every result file header).

    Defaults follow Hayes et al. App. A scaled to the digits data: MLP 64-10-10 with ELU,
    |D-| = 999, full batch (q = 1), T = 100 steps, C = 0.1, prior size 10.
    ``noise_multiplier`` is sigma (noise std sigma C on the gradient sum); ``lr`` multiplies the
    averaged privatized gradient (sum / (q n)); App. A sweeps it per epsilon, the default 10 gives
    test accuracy ~0.8 at epsilon = 1 and ~0.9 at epsilon = 16 on the digits (measured, 4 runs). ``prior_weights`` (length N, summing to 1) makes
    the prior non-uniform; None = uniform.
    """

    noise_multiplier: float
    dataset: str = "digits"
    data_path: str | None = None
    prior_size: int = 10
    n_known: int = 999
    steps: int = 100
    sample_rate: float = 1.0
    clip: float = 0.1
    lr: float = 10.0
    model: str = "mlp"
    hidden: tuple[int, ...] = (10,)
    activation: str = "elu"
    prior_weights: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        check_nonnegative("noise_multiplier", self.noise_multiplier)
        check_int("prior_size", self.prior_size, minimum=2)
        check_int("n_known", self.n_known, minimum=0)
        check_int("steps", self.steps, minimum=1)
        check_probability("sample_rate", self.sample_rate)
        check_positive("clip", self.clip)
        check_positive("lr", self.lr)
        check_choice("model", self.model, ("mlp", "cnn"))
        check_choice("dataset", self.dataset, ("digits", "mnist", "cifar10"))
        object.__setattr__(self, "hidden", tuple(check_int("hidden", h, minimum=1) for h in self.hidden))
        if self.prior_weights is not None:
            w = np.asarray(self.prior_weights, dtype=float)
            if w.shape != (self.prior_size,) or not np.all(np.isfinite(w)) or np.any(w < 0):
                raise ValueError(f"prior_weights must be {self.prior_size} finite numbers >= 0 (one per prior point)")
            if abs(w.sum() - 1.0) > 1e-9:
                raise ValueError(f"prior_weights must sum to 1, got {float(w.sum())!r}")
            object.__setattr__(self, "prior_weights", tuple(float(v) for v in w))

    @property
    def kappa(self) -> float:
        """Baseline success of the best model-free guess: max_i p_i (1/N if uniform)."""
        if self.prior_weights is None:
            return 1.0 / self.prior_size
        return float(max(self.prior_weights))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["hidden"] = list(self.hidden)
        d["prior_weights"] = None if self.prior_weights is None else list(self.prior_weights)
        return d


@dataclass(frozen=True)
class Trial:
    """Indices into the dataset: ``prior`` (N,), the target's position ``target`` in the prior,
    ``known`` (n_known,) = D-; and the trial seed."""

    prior: np.ndarray
    target: int
    known: np.ndarray
    seed: int

    @property
    def target_index(self) -> int:
        """Dataset index of z*."""
        return int(self.prior[self.target])


def make_trial(n_data: int, prior_size: int, n_known: int, seed: int, prior_weights: Sequence[float] | None = None) -> Trial:
    """Trial construction (App. A): prior = N distinct random points, target ~ p (uniform by
    default) from the prior, D- = ``n_known`` random points outside the prior."""
    n_data = check_int("n_data", n_data, minimum=2)
    N = check_int("prior_size", prior_size, minimum=2)
    m = check_int("n_known", n_known, minimum=0)
    if N + m > n_data:
        raise ValueError(f"prior_size + n_known must be <= dataset size {n_data}, got {N} + {m}")
    rng = np.random.default_rng([int(seed), 0])
    perm = rng.permutation(n_data)
    p = None if prior_weights is None else np.asarray(prior_weights, dtype=float)
    target = int(rng.choice(N, p=p))
    return Trial(prior=perm[:N].copy(), target=target, known=perm[N : N + m].copy(), seed=int(seed))


def build_model(cfg: AuditConfig, sample_shape: tuple[int, ...], num_classes: int):
    """The audited model as a :class:`rerokit.training.FunctionalModel`."""
    from rerokit.training import FunctionalModel, SmallCNN, make_mlp

    if cfg.model == "mlp":
        return FunctionalModel(make_mlp(int(np.prod(sample_shape)), list(cfg.hidden), num_classes, cfg.activation))
    width = cfg.hidden[0] if cfg.hidden else 16
    return FunctionalModel(SmallCNN(sample_shape[0], num_classes, cfg.activation, width=width))


def rero_gamma(noise_multiplier: float, sample_rate: float, steps: int, kappa: float) -> float:
    """ReRo bound gamma of DP-SGD at baseline kappa (Hayes et al. Thm 2; 1 when sigma = 0)."""
    if noise_multiplier == 0:
        return 1.0
    from rerokit.bounds.dpsgd import rero_dpsgd

    return float(rero_dpsgd(noise_multiplier, sample_rate, steps, kappa, comparisons=False).value)


def candidate_statistics_many(
    fm,
    thetas: torch.Tensor,
    gbar: torch.Tensor,
    Xc: torch.Tensor,
    yc: torch.Tensor,
    clip: float,
    *,
    max_elements: int = 1 << 24,
    method: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(inner, sqnorm)`` (k, T, N) for k trials: s_{t,i} = <clip_C(g_{t,i}), g-bar_t> / C^2 and
    n_{t,i} = ||clip_C(g_{t,i})||^2 / C^2 of each trial's N candidates ``Xc`` (k, N, ...) at its
    parameters ``thetas`` (k, T, P). Clipped gradients come from
    :func:`rerokit.training.per_sample_clipped_grads`, vmapped over steps and trials; work is
    split so that at most ``max_elements`` gradient entries exist at once.

    ``method``: "vmap" (generic, above), "mlp" (the MLP engine for ``nn.Sequential`` MLPs,
    :meth:`rerokit.training.mlp.MLPPlan.candidate_statistics`: with z = W a + b per layer and
    delta = dl/dz, <g, g-bar> = sum_layers delta . (G-bar_W a + g-bar_b) and
    ||g||^2 = sum_layers ||delta||^2 (||a||^2 + 1), so no (T, N, P) gradient tensor is formed;
    clip factor min(1, C / (||g|| + CLIP_EPS)) as in the engine), or "auto" (mlp when the model
    and the candidates' shape allow it). Both paths agree to rounding (tested).
    """
    from rerokit.attacks.prior_aware import step_statistics_from_grads
    from rerokit.training import per_sample_clipped_grads
    from rerokit.training.mlp import mlp_plan

    if method not in ("auto", "vmap", "mlp"):
        raise ValueError(f"method must be one of auto, vmap, mlp; got {method!r}")
    plan = None if method == "vmap" else mlp_plan(fm)
    if plan is not None and (plan.has_flatten or Xc.dim() == 3):
        return plan.candidate_statistics(thetas, gbar, Xc, yc, check_positive("clip", clip), max_elements=max_elements)
    if method == "mlp":
        raise ValueError("method='mlp' needs an nn.Sequential of Flatten/Linear/activation layers")
    k, T, P = thetas.shape
    N = Xc.shape[1]
    per_trial = T * N * P
    step = max(1, max_elements // max(1, per_trial))

    def one(th, gb, x, y):
        G = torch.func.vmap(lambda t: per_sample_clipped_grads(fm, t, x, y, clip))(th)  # (T, N, P)
        return step_statistics_from_grads(G, gb, clip)

    inners, sqs = [], []
    with torch.no_grad():
        if step >= 1 and per_trial <= max_elements:
            f = torch.func.vmap(one)
            for a in range(0, k, step):
                i_, s_ = f(thetas[a : a + step], gbar[a : a + step], Xc[a : a + step], yc[a : a + step])
                inners.append(i_)
                sqs.append(s_)
        else:  # one trial is already large: split its steps
            tstep = max(1, max_elements // max(1, N * P))
            for a in range(k):
                ii, ss = [], []
                for t0 in range(0, T, tstep):
                    i_, s_ = one(thetas[a, t0 : t0 + tstep], gbar[a, t0 : t0 + tstep], Xc[a], yc[a])
                    ii.append(i_)
                    ss.append(s_)
                inners.append(torch.cat(ii)[None])
                sqs.append(torch.cat(ss)[None])
    return torch.cat(inners), torch.cat(sqs)


@dataclass
class AuditReport:
    """Outcome of an audit: one :class:`AttackResult` per attack (or metric), the bound gamma
    at ``kappa``, the per-trial records, and the settings."""

    results: dict[str, AttackResult]
    gamma: float
    kappa: float
    noise_multiplier: float
    records: list[dict[str, Any]] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    seed: int = 0

    def empirical_lower_bounds(self, attack: str, *, delta: float = 1e-5, confidence: float = 0.95) -> dict[str, Any]:
        """What the attack's successes prove about the mechanism (:func:`rerokit.bounds.empirical.audit_lower_bounds`).

        With k successes of ``attack`` in n trials at baseline kappa, the one-sided Clopper-Pearson
        lower end s_lo (at ``confidence``) refutes mu-GDP for every mu < Phi^-1(s_lo) - Phi^-1(kappa)
        and (eps, delta)-DP for every eps < log((s_lo - delta)/kappa) (Balle et al. 2022 Cor. 3 with
        delta; Hayes et al. 2023; Nasr et al. 2021 for the audit framing), at that confidence.

        Args:
          attack: a prior-aware attack name (its records hold one bool success per trial).
          delta: delta of the refuted (eps, delta)-DP guarantees.
          confidence: one-sided confidence.

        Returns:
          ``audit_lower_bounds``' dict (success_lower, mu_gdp_lower, epsilon_lower, ...).
        """
        from rerokit.bounds.empirical import audit_lower_bounds

        k = sum(bool(r["success"][attack]) for r in self.records)
        return audit_lower_bounds(k, len(self.records), self.kappa, confidence=confidence, delta=delta)

    def to_dict(self, primary: str | None = None, *, delta: float | None = None) -> dict[str, Any]:
        """JSON-ready summary; ``primary`` (an attack name) is flattened to the top level as
        success, ci_low, ci_high; for a success-rate attack with ``delta`` given, the empirical
        lower bounds it proves are added (``empirical_mu_lower``, ``empirical_epsilon_lower``,
        ``empirical_success_lower`` at ``empirical_confidence``)."""
        d: dict[str, Any] = {}
        if primary is not None:
            r = self.results[primary]
            d.update({r.metric: r.value, "ci_low": r.interval[0], "ci_high": r.interval[1]})
            if delta is not None and r.metric == "success" and self.records and isinstance(
                    self.records[0].get("success"), dict):
                e = self.empirical_lower_bounds(primary, delta=delta)
                d.update(empirical_success_lower=e["success_lower"], empirical_mu_lower=e["mu_gdp_lower"],
                         empirical_epsilon_lower=e["epsilon_lower"], empirical_confidence=e["confidence"])
        d.update(gamma=self.gamma, kappa=self.kappa, noise_multiplier=self.noise_multiplier,
                 trials=len(self.records), seed=self.seed)
        d["attacks"] = {
            k: {"metric": r.metric, "value": r.value, "ci_low": r.interval[0], "ci_high": r.interval[1]}
            for k, r in self.results.items()
        }
        d["settings"] = dict(self.settings)
        return d


def _load(cfg: AuditConfig):
    from rerokit.data import load_dataset

    if cfg.dataset in ("mnist", "cifar10") and cfg.data_path is None:
        raise ValueError(f"dataset {cfg.dataset} needs data_path (a local file or folder)")
    return load_dataset(cfg.dataset, cfg.data_path) if cfg.data_path else load_dataset(cfg.dataset)


def _chunks(ids: list[int], size: int) -> list[list[int]]:
    return [ids[a : a + size] for a in range(0, len(ids), size)]


def _train_chunk(cfg: AuditConfig, fm, ds, trials: list[Trial], record: str):
    from rerokit.training import train_dpsgd_many

    X = torch.as_tensor(ds.X)
    y = torch.as_tensor(ds.y)
    # training set D- + {z*}; the target sits last (position is irrelevant: i.i.d. sampling).
    idx = torch.as_tensor(np.stack([np.concatenate([t.known, [t.target_index]]) for t in trials]), dtype=torch.long)
    theta0 = fm.init_flat_many([t.seed for t in trials])
    res = train_dpsgd_many(
        fm, theta0, X[idx], y[idx],
        noise_multiplier=cfg.noise_multiplier, clip=cfg.clip, steps=cfg.steps, lr=cfg.lr,
        sample_rate=cfg.sample_rate, seeds=[t.seed for t in trials], target_index=len(trials[0].known),
        record=record,
    )
    return res


def _trials_setup(cfg: AuditConfig, trials: int, seed: int, out, resume: bool, extra: dict[str, Any],
                  schema: dict[str, Any]):
    from rerokit.experiments.records import TrialLog
    from rerokit.training import trial_seeds

    K = check_int("trials", trials, minimum=1, maximum=_MAX_TRIAL_ID)
    seed = check_int("seed", seed, minimum=0)
    settings = dict(cfg.to_dict(), seed=seed, **extra)
    # every record of the file must be a trial 0..K-1 of this run with the keys it writes
    log = TrialLog(out, settings, resume=resume, trials=K, schema=schema, name="out")
    seeds = trial_seeds(seed, K)
    todo = [i for i in range(K) if i not in log.done]
    return K, seed, settings, log, seeds, todo


def run_prior_aware_audit(
    cfg: AuditConfig,
    trials: int,
    seed: int,
    *,
    attacks: Sequence[str] = ("alg2", "alg3", "loglik"),
    out: str | None = None,
    resume: bool = False,
    chunk_size: int = 32,
    progress: bool = True,
) -> AuditReport:
    """Run ``trials`` prior-aware attack trials (see module docstring) and summarise.

    Each attack's success rate gets a 95% Clopper-Pearson interval; ``gamma`` is the ReRo bound
    at ``cfg.kappa``. ``loglik`` needs sigma > 0. Trials already in ``out`` (with ``resume``) are
    not repeated; the summary covers trials 0..trials-1 from the file and this run.
    """
    attacks = tuple(check_choice("attack", a, PRIOR_AWARE_ATTACKS) for a in attacks)
    if not attacks:
        raise ValueError("attacks must name at least one of " + ", ".join(PRIOR_AWARE_ATTACKS))
    if "loglik" in attacks and cfg.noise_multiplier == 0:
        raise ValueError("attack loglik needs noise_multiplier > 0")
    chunk_size = check_int("chunk_size", chunk_size, minimum=1)
    from rerokit.experiments.records import Bool, DictOf, Int, ListOf, Num

    schema = {"seed": Int(minimum=0), "prior": ListOf(Int(minimum=0), length=cfg.prior_size),
              "target": Int(minimum=0), "guess": DictOf(Int(minimum=0), keys=attacks),
              "success": DictOf(Bool, keys=attacks), "target_clipped_fraction": Num(minimum=0)}
    K, seed, settings, log, seeds, todo = _trials_setup(cfg, trials, seed, out, resume, {"attacks": list(attacks)},
                                                        schema)
    try:
        return _prior_aware_trials(cfg, attacks, K, seed, settings, log, seeds, todo, chunk_size, progress)
    finally:
        log.close()


def _prior_aware_trials(cfg: AuditConfig, attacks: tuple[str, ...], K: int, seed: int, settings: dict[str, Any],
                        log, seeds, todo: list[int], chunk_size: int, progress: bool) -> AuditReport:
    from rerokit.attacks import prior_aware as pa

    ds = _load(cfg)
    fm = build_model(cfg, ds.sample_shape, ds.num_classes)
    # validate the trial construction before any work
    make_trial(ds.n, cfg.prior_size, cfg.n_known, 0, cfg.prior_weights)
    record = "full" if "alg2_nosub" in attacks else "gbar_only"
    log_prior = None if cfg.prior_weights is None else torch.log(torch.as_tensor(cfg.prior_weights, dtype=torch.float64))
    X = torch.as_tensor(ds.X)
    y = torch.as_tensor(ds.y)
    bar = _bar(len(todo), "prior-aware trials", progress)
    for chunk in _chunks(todo, chunk_size):
        tri = [make_trial(ds.n, cfg.prior_size, cfg.n_known, seeds[i], cfg.prior_weights) for i in chunk]
        tr = _train_chunk(cfg, fm, ds, tri, record).transcript
        pidx = torch.as_tensor(np.stack([t.prior for t in tri]), dtype=torch.long)
        Xc, yc = X[pidx], y[pidx]
        stats = {"sub": candidate_statistics_many(fm, tr.thetas, tr.gbar, Xc, yc, cfg.clip)}
        if "alg2_nosub" in attacks:
            stats["nosub"] = candidate_statistics_many(fm, tr.thetas, tr.noisy_sums, Xc, yc, cfg.clip)
        inner, sq = (s.double() for s in stats["sub"])
        guesses: dict[str, np.ndarray] = {}
        for a in attacks:
            if a == "alg2_nosub":
                sc = pa.alg2_scores(stats["nosub"][0].double())
            else:
                sc = pa.scores(a, inner, sq, noise_multiplier=cfg.noise_multiplier or None,
                               sample_rate=cfg.sample_rate, log_prior=log_prior)
            guesses[a] = pa.guess(sc).numpy()
        tgt_sq = sq[torch.arange(len(tri)), :, torch.as_tensor([t.target for t in tri])]  # (k, T)
        for j, (i, t) in enumerate(zip(chunk, tri)):
            log.append(i, {
                "seed": t.seed,
                "prior": t.prior,
                "target": t.target,
                "guess": {a: int(guesses[a][j]) for a in attacks},
                "success": {a: bool(guesses[a][j] == t.target) for a in attacks},
                "target_clipped_fraction": float((tgt_sq[j] >= 0.999).double().mean()),
            })
        if bar is not None:
            bar.update(len(chunk))
    if bar is not None:
        bar.close()
    recs = [r for r in log if r["trial"] < K]
    gamma = rero_gamma(cfg.noise_multiplier, cfg.sample_rate, cfg.steps, cfg.kappa)
    results = {
        a: AttackResult.from_successes([r["success"][a] for r in recs], seed=seed, settings=settings,
                                       extras={"gamma": gamma, "kappa": cfg.kappa})
        for a in attacks
    }
    return AuditReport(results, gamma, cfg.kappa, cfg.noise_multiplier, recs, settings, seed)


def run_gradient_audit(
    cfg: AuditConfig,
    trials: int,
    seed: int,
    *,
    iterations: int = 200,
    restarts: int = 2,
    attack_lr: float = 0.05,
    prior_sizes: Sequence[int] | None = None,
    out: str | None = None,
    resume: bool = False,
    chunk_size: int = 8,
    progress: bool = True,
) -> AuditReport:
    """Run ``trials`` gradient-based attack trials (Eq. 1; full transcript, label known) and
    report the reconstruction MSE and, for each prior size n in ``prior_sizes`` (default
    ``cfg.prior_size``), the App. D prior-matching success: the exact probability that z* is
    the nearest to z-hat among z* and n - 1 random other dataset points, averaged over trials
    (interval: Student-t on the mean of the per-trial probabilities). The prior drawn by the
    trial is not used by this attack (only its target). Eq. (1) is stated for full batches; for
    q < 1 every step's g-bar_t enters the objective (steps without the target add only noise)."""
    sizes = tuple(check_int("prior_sizes", n, minimum=2) for n in (prior_sizes or (cfg.prior_size,)))
    chunk_size = check_int("chunk_size", chunk_size, minimum=1)
    extra = {"attack": "gradient", "iterations": iterations, "restarts": restarts, "attack_lr": attack_lr,
             "prior_sizes": list(sizes)}
    check_int("iterations", iterations, minimum=1)
    check_int("restarts", restarts, minimum=1)
    check_positive("attack_lr", attack_lr)
    from rerokit.experiments.records import DictOf, Int, Num

    schema = {"seed": Int(minimum=0), "target_index": Int(minimum=0), "mse": Num(minimum=0), "objective": Num(),
              "prior_success": DictOf(Num(minimum=0), keys=sizes)}
    K, seed, settings, log, seeds, todo = _trials_setup(cfg, trials, seed, out, resume, extra, schema)
    try:
        return _gradient_trials(cfg, sizes, K, seed, settings, log, seeds, todo, chunk_size, progress,
                                iterations, restarts, attack_lr)
    finally:
        log.close()


def _gradient_trials(cfg: AuditConfig, sizes: tuple[int, ...], K: int, seed: int, settings: dict[str, Any], log,
                     seeds, todo: list[int], chunk_size: int, progress: bool, iterations: int, restarts: int,
                     attack_lr: float) -> AuditReport:
    from rerokit.attacks.gradient import gradient_attack, mse, prior_match_success

    ds = _load(cfg)
    if max(sizes) > ds.n:
        raise ValueError(f"prior_sizes must be <= dataset size {ds.n}, got {max(sizes)}")
    fm = build_model(cfg, ds.sample_shape, ds.num_classes)
    make_trial(ds.n, cfg.prior_size, cfg.n_known, 0, cfg.prior_weights)
    bar = _bar(len(todo), "gradient-attack trials", progress)
    for chunk in _chunks(todo, chunk_size):
        tri = [make_trial(ds.n, cfg.prior_size, cfg.n_known, seeds[i], cfg.prior_weights) for i in chunk]
        tr = _train_chunk(cfg, fm, ds, tri, "gbar_only").transcript
        for j, (i, t) in enumerate(zip(chunk, tri)):
            ti = t.target_index
            x = ds.X[ti]
            o = gradient_attack(fm, tr.thetas[j], tr.gbar[j], int(ds.y[ti]), cfg.clip, ds.sample_shape,
                                data_range=ds.data_range, iterations=iterations, lr=attack_lr,
                                restarts=restarts, seed=t.seed % (2**31))
            pool = np.delete(ds.X, ti, axis=0)
            # appended as soon as its attack is done (the attack, not the training, dominates)
            log.append(i, {
                "seed": t.seed,
                "target_index": ti,
                "mse": mse(o.z_hat, x),
                "objective": o.loss,
                "prior_success": {str(n): prior_match_success(o.z_hat.numpy(), x, pool, n) for n in sizes},
            })
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    recs = [r for r in log if r["trial"] < K]
    results = {"mse": AttackResult.from_values([r["mse"] for r in recs], seed=seed, metric="mse", settings=settings,
                                              support=(0.0, float("inf")))}
    gammas = {}
    for n in sizes:
        gammas[n] = rero_gamma(cfg.noise_multiplier, cfg.sample_rate, cfg.steps, 1.0 / n)
        results[f"prior_success_{n}"] = AttackResult.from_values(
            [r["prior_success"][str(n)] for r in recs], seed=seed, metric="success", settings=settings,
            extras={"gamma": gammas[n], "kappa": 1.0 / n, "prior_size": n}, support=(0.0, 1.0),
        )
    n0 = sizes[0]
    return AuditReport(results, gammas[n0], 1.0 / n0, cfg.noise_multiplier, recs, settings, seed)


def _bar(total: int, desc: str, progress: bool):
    if not progress or total == 0:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="trial", file=sys.stderr)

