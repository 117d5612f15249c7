"""Auditing one DP-SGD training run with many canaries (one run, not hundreds).

The game (Steinke, Nasr & Jagielski 2023; Mahloujifar, Melis & Chaudhuri 2025): m canary slots,
each holding one of k candidates drawn uniformly (membership: k = 2, absent/present); one
training run; the auditor scores every slot, guesses the secret of the most confident ones and
:mod:`rerokit.bounds.onerun` turns the counts into lower bounds (mu_lower, epsilon_lower) and
tests the run's own certified claim.

White-box (``threat="white-box"``): Dirac gradient canaries (Nasr et al., USENIX Security 2023,
"Tight auditing of differentially private machine learning"): slot i owns its own coordinates
of the parameter vector; its candidate a is the gradient C v_a placed on them (clipped like any
other record's gradient, norm C), included in each step's sum with Poisson probability q, the
run's rate (q = 1: at every step, as in Cebere, Bellet & Papernot, ICLR 2025). Geometry:
membership v = e_j (present/absent); k = 2 reconstruction: antipodal v = +-e_j, the pair at
the largest possible distance 2C (the replace-one sensitivity); k > 2: the k vertices of a
regular simplex on k - 1 coordinates, the k unit vectors with the largest minimal pairwise
distance sqrt(2k/(k-1)) C. The auditor sees every iterate theta_t and the privatized sum (the
informed adversary of Hayes et al. 2023), subtracts the known records' clipped gradients and
scores candidate a by the exact per-step log-likelihood ratio of the subsampled Gaussian,
sum_t log(1 - q + q exp((<x_t, v_a> - 1/2) / sigma^2)) with x_t the residual on the slot's
coordinates in units of C (q = 1: the inner product, shifted). The known records are trained
on as usual, and the canaries move the model (they are part of the run).

White-box input canaries (``canary="input"``): the candidates of the black-box game below, but
scored from every iterate by the log-likelihood statistic of Hayes et al. 2023 (App. G) against
g-bar_t (the privatized sum minus the known records' clipped gradients, which still holds the
other present canaries: cross-talk weakens, never invalidates, the guesses; Keinan, Shenfeld &
Ligett 2025, "How well can differential privacy be audited in one run?", show such interference
is what limits one-run audits, and Dirac gradient canaries avoid it). Keeps the iterates
and g-bar_t (T x P each).

Black-box (``threat="black-box"``): input canaries, records of the data pool that are not in
the known training set, with a wrong label (membership: each present with probability 1/2;
reconstruction: one of k distinct wrong labels of the same image is in the run), trained on with
the known records by :func:`rerokit.training.train_dpsgd`; scored by the final model only
(membership: minus the loss; reconstruction: the log-probability of each candidate label).

Claims tested: membership is add/remove adjacency (the symmetrised DP-SGD curve at the run's
(q, T)); reconstruction is replace-one (see :mod:`rerokit.bounds.onerun`). ``actual_noise_multiplier``
trains with a different sigma than the one claimed (a deliberate bug, to see the audit catch it).

Randomness: ``seed`` fixes everything (data split, canaries, secrets, initialisation, masks,
noise); the seed is recorded with the result. One training run: ``out`` gets a header line when
the run starts and the result when it ends; ``resume`` returns a finished result of the same
settings without training again (an interrupted run restarts, deterministically).
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from rerokit._validate import check_choice, check_int, check_positive, check_probability
from rerokit.experiments.audit import AuditConfig, load_audit_data, build_model
from rerokit.training.settings import DPSGDSettings

__all__ = ["GAMES", "THREATS", "CANARIES", "OneRunConfig", "OneRunAudit", "run_one_run_audit", "config_from_args",
           "report_fields"]

GAMES = ("membership", "reconstruction")
THREATS = ("white-box", "black-box")
CANARIES = ("gradient", "input")


@dataclass(frozen=True)
class OneRunConfig:
    """Settings of a one-run audit.

    Attributes:
      train: model, data and DP-SGD schedule (:class:`rerokit.experiments.audit.AuditConfig`;
        its noise multiplier is the CLAIMED one; ``n_known`` = the known training records).
      game: "membership" or "reconstruction".
      options: k >= 2 candidates per slot (membership: 2).
      canaries: m >= 1 slots.
      threat: "white-box" (every iterate and privatized sum seen) or "black-box" (final model only).
      canary: white-box canaries: "gradient" (Dirac, default) or "input" (records of the data with
        wrong labels, scored by Hayes et al.'s log-likelihood statistic); black-box: always "input".
      actual_noise_multiplier: sigma actually used in training (None: the claimed one).
      guess_counts: numbers of guesses tried (None: 0.5% ... 100% of m).
      selection: "bonferroni" or "split" (:mod:`rerokit.bounds.onerun_scores`).
      method: "fdp" or "steinke".
      confidence: of every reported bound (default 0.95).
    """

    train: AuditConfig
    game: str = "membership"
    options: int = 2
    canaries: int = 1000
    threat: str = "white-box"
    canary: str = "gradient"
    actual_noise_multiplier: float | None = None
    guess_counts: tuple[int, ...] | None = None
    selection: str = "bonferroni"
    method: str = "fdp"
    confidence: float = 0.95

    def __post_init__(self) -> None:
        check_choice("game", self.game, GAMES)
        check_choice("threat", self.threat, THREATS)
        check_choice("canary", self.canary, CANARIES)
        if self.threat == "black-box" and self.canary != "input":
            object.__setattr__(self, "canary", "input")
        k = check_int("options", self.options, minimum=2)
        if self.game == "membership" and k != 2:
            raise ValueError(f"options must be 2 for the membership game (present/absent), got {k}")
        check_int("canaries", self.canaries, minimum=1)
        if self.actual_noise_multiplier is not None:
            check_positive("actual_noise_multiplier", self.actual_noise_multiplier)
        if not self.train.noise_multiplier > 0:
            raise ValueError("the audited run needs noise: noise_multiplier must be > 0")
        check_probability("confidence", self.confidence, high_open=True)
        if self.guess_counts is not None:
            object.__setattr__(self, "guess_counts", tuple(check_int("guess_counts", g, minimum=1, maximum=self.canaries)
                                                           for g in self.guess_counts))
        if self.canary == "input" and self.game == "reconstruction" and k > 9:
            raise ValueError("input canaries use k distinct wrong labels of one image: options <= classes - 1")

    @property
    def adjacency(self) -> str:
        """add_remove for membership, replace_one for reconstruction."""
        return "add_remove" if self.game == "membership" else "replace_one"

    def to_dict(self) -> dict[str, Any]:
        """The settings, JSON-ready (training settings flattened in, as every audit's ``settings``)."""
        d = self.train.to_dict()
        d.pop("prior_size", None)
        d.pop("prior_weights", None)
        d.update(game=self.game, options=self.options, canaries=self.canaries, threat=self.threat, canary=self.canary,
                 actual_noise_multiplier=self.actual_noise_multiplier,
                 guess_counts=None if self.guess_counts is None else list(self.guess_counts),
                 selection=self.selection, method=self.method, confidence=self.confidence,
                 delta=self.train.delta, epsilon=self.train.epsilon)
        return d


@dataclass(frozen=True)
class OneRunAudit:
    """Outcome of :func:`run_one_run_audit`.

    Attributes:
      config: the settings.
      seed: the seed.
      audit: the :class:`rerokit.bounds.onerun_scores.ScoreAudit` (bound, counts tried, accuracy).
      certified_epsilon: the run's certified epsilon at delta in the family of ``epsilon_lower``
        (membership: add/remove, PLD; reconstruction at q = 1: replace-one, mu = 2 sqrt(T)/sigma;
        reconstruction at q < 1: add/remove, as the bound's boundary epsilon there).
      certified_mu: sqrt(T)/sigma (membership; 2 sqrt(T)/sigma for replace-one): exact at q = 1, an
        upper bound of the run's Gaussian-DP mu for q < 1 (subsampling never hurts privacy).
      rero_gamma: certified reconstruction success at kappa = 1/k (Hayes et al. 2023, Thm 2).
      accuracy_interval: 95% Clopper-Pearson interval of the accuracy over all m slots (slots are
        independent in the white-box game; an indication only in the black-box one).
      wall_seconds: time of the training run with canaries and scoring; ``train_seconds``: of the
        training loop alone.
    """

    config: OneRunConfig
    seed: int
    audit: Any
    certified_epsilon: float
    certified_mu: float
    rero_gamma: float
    accuracy_interval: tuple[float, float]
    wall_seconds: float
    train_seconds: float

    def summary(self) -> dict[str, Any]:
        """The command's JSON: epsilon_lower and mu_lower first, then the claim and the settings."""
        b = self.audit.bound
        claim = None if b.claim is None else dict(b.claim.__dict__)
        return {
            "kind": "one-run",
            "epsilon_lower": b.epsilon_lower,
            "mu_lower": b.mu_lower,
            "certified_epsilon": self.certified_epsilon,
            "certified_mu": self.certified_mu,
            "claim_rejected": None if claim is None else claim["rejected"],
            "guesses": b.guesses,
            "correct": b.correct,
            "correct_upper": None if claim is None else claim["correct_upper"],
            "canaries": b.canaries,
            "options": b.options,
            "accuracy_all": self.audit.accuracy_all,
            "accuracy_interval": list(self.accuracy_interval),
            "rero_gamma": self.rero_gamma,
            "kappa": 1.0 / b.options,
            "noise_multiplier_rejected": b.noise_multiplier_rejected,
            "bound": b.to_dict(),
            "tried": [dict(t.__dict__) for t in self.audit.tried],
            "wall_seconds": self.wall_seconds,
            "train_seconds": self.train_seconds,
            "seed": self.seed,
            "settings": {**self.config.to_dict(), "seed": self.seed},
        }


# --------------------------------------------------------------------------- white-box


def _clipped_sum_fn(fm, X: torch.Tensor, y: torch.Tensor, C: float):
    """theta, w -> sum_i w_i clip_C(grad l(theta, z_i)) over the known records (MLP engine when possible)."""
    from rerokit.training.mlp import mlp_plan

    if X.shape[0] == 0:  # no known records: the privatized sum holds the canaries and the noise only
        return lambda th, w: torch.zeros_like(th)
    plan = mlp_plan(fm)
    if plan is not None and (plan.has_flatten or X.dim() == 2):
        inp = plan.inputs(1, plan.block(X[None], y[None]))
        return lambda th, w: plan.clipped_sums(th[None], inp, C, None if w is None else w[None])[0][0]
    from rerokit.training import per_sample_clipped_grads

    def sums(th, w):
        G = per_sample_clipped_grads(fm, th, X, y, C)
        return G.sum(0) if w is None else (w[:, None] * G).sum(0)

    return sums


def _input_candidates(cfg: OneRunConfig, n_data: int, classes: int, labels: np.ndarray, rng: np.random.Generator):
    """Known records, canary slots from the data pool with wrong labels, the secrets.

    Returns (known idx, pool idx (m,), candidate labels (m, k'), secrets (m,), present slot/candidate
    pairs as (pool positions, labels) of the records that are in the run).
    """
    m, k = cfg.canaries, cfg.options
    if m >= n_data:
        raise ValueError(f"input canaries are records of the data: canaries must be < {n_data}")
    n = min(cfg.train.n_known, n_data - m)
    perm = rng.permutation(n_data)
    known, pool = perm[:n], perm[n: n + m]
    ncand = 1 if cfg.game == "membership" else k
    # k distinct wrong labels per slot (membership: one), in random order
    wrong = np.stack([rng.permutation([c for c in range(classes) if c != t])[:ncand] for t in labels[pool]])
    if cfg.game == "membership":
        secrets = rng.integers(0, 2, m)
        inc = np.nonzero(secrets == 1)[0]
        present = (inc, wrong[inc, 0])
    else:
        secrets = rng.integers(0, k, m)
        present = (np.arange(m), wrong[np.arange(m), secrets])
    return known, pool, wrong, secrets, present


def _whitebox(cfg: OneRunConfig, seed: int, progress: bool, dev: str = "cpu") -> tuple[np.ndarray, np.ndarray, float]:
    """Train once with white-box canaries on ``dev`` (random numbers drawn on the CPU, as the
    engine's); return (scores (m, k'), secrets (m,), train seconds).

    Gradient canaries: scored on their own coordinates at each step (O(m k) statistics).
    Input canaries (``canary="input"``): records in the run; the iterates and g-bar_t = privatized
    sum - known records' clipped sum are kept (T x P each) and every candidate is scored after
    training by the log-likelihood statistic of Hayes et al. 2023 App. G (with the MLP engine's
    candidate statistics: no (T, N, P) gradient tensor).
    """
    from rerokit.bounds.onerun_scores import canary_directions, gaussian_canary_llr

    tc = cfg.train
    ds = load_audit_data(tc)
    fm = build_model(tc, ds.sample_shape, ds.num_classes)
    rng = np.random.default_rng([seed, 1])
    n_data = len(ds.y)
    m, k = cfg.canaries, cfg.options
    member = cfg.game == "membership"
    P = fm.num_params
    C, q, T, lr = tc.clip, tc.sample_rate, tc.steps, tc.lr
    sig_claim = tc.noise_multiplier
    sig_real = cfg.actual_noise_multiplier or sig_claim
    Xall = torch.as_tensor(ds.X).to(torch.float32)
    yall = torch.as_tensor(ds.y).long()
    gradient = cfg.canary == "gradient"
    if gradient:
        d = 1 if member else k - 1
        if m * d > P:
            raise ValueError(f"{m} canaries need {m * d} coordinates but the model has {P} parameters; use fewer "
                             "canaries or a wider model (--hidden)")
        known = rng.permutation(n_data)[: min(tc.n_known, n_data)]
        coords = torch.as_tensor(rng.permutation(P)[: m * d].reshape(m, d))
        Vn = canary_directions(cfg.game, k)  # (k', d) unit directions
        V = torch.as_tensor(Vn, dtype=torch.float32)
        secrets = rng.integers(0, 2 if member else k, m)
        # the canary gradient of each slot, clipped like any record's (norm C: unchanged by clipping)
        vec = V[0].expand(m, d) if member else V[torch.as_tensor(secrets)]
        present = torch.as_tensor(secrets == 1) if member else torch.ones(m, dtype=torch.bool)
        canary_grad = ((C * vec) * present[:, None].to(vec.dtype)).to(dev)
        flat = coords.reshape(-1).to(dev)
        llr = np.zeros((m, Vn.shape[0]))
        xsum = torch.zeros((m, d), dtype=torch.float64, device=dev)
    else:
        known, pool, wrong, secrets, (slots, labs) = _input_candidates(cfg, n_data, int(ds.num_classes),
                                                                       yall.numpy(), rng)
        can_sums = _clipped_sum_fn(fm, Xall[pool[slots]].to(dev), torch.as_tensor(labs).long().to(dev), C)
        thetas = torch.empty((T, P), dtype=torch.float32, device=dev)
        gbars = torch.empty((T, P), dtype=torch.float32, device=dev)
    n = len(known)
    X, y = Xall[known].to(dev), yall[known].to(dev)
    n_total = n + (m / 2 if member else m)  # a public constant: the expected dataset size
    sums = _clipped_sum_fn(fm, X, y, C)
    theta = fm.init_flat(int(rng.integers(0, 2**62))).to(dev)
    g_mask = torch.Generator().manual_seed(int(rng.integers(0, 2**62)))
    g_noise = torch.Generator().manual_seed(int(rng.integers(0, 2**62)))
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=T, desc="one-run audit: DP-SGD steps", unit="step", leave=False)
    t0 = time.perf_counter()
    with torch.no_grad():
        for t in range(T):
            w = None if q >= 1 else (torch.rand(n, generator=g_mask, dtype=torch.float64) < q).to(dev, theta.dtype)
            cm = None if q >= 1 else (torch.rand(m, generator=g_mask, dtype=torch.float64) < q).to(dev)
            s_known = sums(theta, w)
            if gradient:
                canary = torch.zeros(P, dtype=theta.dtype, device=dev)
                cg = canary_grad if cm is None else canary_grad * cm[:, None].to(canary_grad.dtype)
                canary.index_add_(0, flat, cg.reshape(-1).to(theta.dtype))
            else:
                canary = can_sums(theta, None if cm is None else cm[torch.as_tensor(slots, device=dev)].to(theta.dtype))
            z = torch.randn(P, generator=g_noise, dtype=theta.dtype).to(dev)
            noisy = s_known + canary + (sig_real * C) * z
            # the white-box auditor: residual = privatized sum - known records' clipped gradients
            if gradient:
                x = (noisy - s_known)[flat].reshape(m, -1) / C
                if q >= 1:  # the log-likelihood ratio is linear in x: sum x now, apply it once at the end
                    xsum += x.to(torch.float64)
                else:
                    llr += gaussian_canary_llr(x.to(torch.float64).cpu().numpy(), Vn, q, sig_claim)
            else:
                thetas[t], gbars[t] = theta, noisy - s_known
            theta = theta - lr * noisy / (q * n_total)
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    train_s = time.perf_counter() - t0
    if not bool(torch.isfinite(theta).all()):
        raise ValueError(f"lr={lr!r} made training diverge (non-finite parameters); use a smaller lr")
    if gradient and q >= 1:  # sum_t (<x_t, v> - 1/2) / sigma^2 = (<sum_t x_t, v> - T/2) / sigma^2
        llr = ((xsum.cpu().numpy() @ Vn.T) - 0.5 * T * (Vn**2).sum(1)) / sig_claim**2
    if not gradient:
        from rerokit.attacks.prior_aware import loglik_scores
        from rerokit.experiments.audit import candidate_statistics_many

        Xc = Xall[pool].to(dev).repeat_interleave(wrong.shape[1], 0)
        yc = torch.as_tensor(wrong.reshape(-1)).long().to(dev)
        inner, sq = candidate_statistics_many(fm, thetas[None], gbars[None], Xc[None], yc[None], C)
        llr = loglik_scores(inner[0].double(), sq[0].double(), sig_claim, q).cpu().numpy().reshape(m, -1)
    scores = np.concatenate([np.zeros((m, 1)), llr], axis=1) if member else llr
    return scores, secrets, train_s


# --------------------------------------------------------------------------- black-box


def _blackbox(cfg: OneRunConfig, seed: int, progress: bool, dev: str = "cpu") -> tuple[np.ndarray, np.ndarray, float]:
    """Train once with input canaries (engine), score with the final model."""
    from rerokit.training import train_dpsgd

    tc = cfg.train
    ds = load_audit_data(tc)
    fm = build_model(tc, ds.sample_shape, ds.num_classes)
    rng = np.random.default_rng([seed, 2])
    m, k = cfg.canaries, cfg.options
    Xall = torch.as_tensor(ds.X).to(torch.float32)
    yall = torch.as_tensor(ds.y).long()
    known, pool, wrong, secrets, (slots, labs) = _input_candidates(cfg, len(ds.y), int(ds.num_classes),
                                                                   yall.numpy(), rng)
    X = torch.cat([Xall[known], Xall[pool[slots]]])
    y = torch.cat([yall[known], torch.as_tensor(labs).long()])
    theta0 = fm.init_flat(int(rng.integers(0, 2**62))).to(dev)
    t0 = time.perf_counter()
    settings = DPSGDSettings(noise_multiplier=cfg.actual_noise_multiplier or tc.noise_multiplier, clip=tc.clip,
                             steps=tc.steps, lr=tc.lr, sample_rate=tc.sample_rate)
    res = train_dpsgd(fm, theta0, X.to(dev), y.to(dev), settings, seed=int(rng.integers(0, 2**62)))
    train_s = time.perf_counter() - t0
    with torch.no_grad():
        logp = torch.log_softmax(fm.logits(res.theta, Xall[pool].to(dev)), -1).to(torch.float64).cpu().numpy()
    if cfg.game == "membership":
        scores = logp[np.arange(m), wrong[:, 0]]  # minus the canary's loss; centred at the median
    else:
        scores = np.take_along_axis(logp, wrong[:, :k], axis=1)
    return scores, secrets, train_s


# --------------------------------------------------------------------------- driver


def _certified(cfg: OneRunConfig) -> tuple[float, float, float]:
    """(epsilon, mu, gamma) certified for this run, in the family ``epsilon_lower`` is read from.

    q = 1: the exact Gaussian-DP mu (membership sqrt(T)/sigma; reconstruction, replace-one,
    2 sqrt(T)/sigma) and its exact epsilon. q < 1: the certified add/remove epsilon (PLD; the
    one-run bound reports the add/remove epsilon of its boundary there too).
    gamma: Hayes et al. 2023 Thm 2 at kappa = 1/k.
    """
    from rerokit.bounds.dpsgd import epsilon_dpsgd
    from rerokit.bounds.gaussian import gaussian_epsilon
    from rerokit.experiments.audit import rero_gamma

    tc = cfg.train
    d = tc.delta if tc.delta is not None else 1e-5
    # mu of the same schedule at q = 1: exact at q = 1, an upper bound for q < 1 (Poisson
    # subsampling is a post-processing of the full-batch pair with an independent coin)
    mu = (1.0 if cfg.game == "membership" else 2.0) * math.sqrt(tc.steps) / tc.noise_multiplier
    if tc.sample_rate == 1.0:  # q = 1: the exact Gaussian-DP epsilon of the game's adjacency
        eps = gaussian_epsilon(d, mu)
    else:
        eps = epsilon_dpsgd(tc.noise_multiplier, tc.sample_rate, tc.steps, d)
    return eps, mu, rero_gamma(tc.noise_multiplier, tc.sample_rate, tc.steps, 1.0 / cfg.options)


def _write(path: str, obj: dict[str, Any]) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps(obj) + "\n")
    os.replace(tmp, path)


def run_one_run_audit(cfg: OneRunConfig, *, seed: int = 0, out: str | None = None, resume: bool = False,
                      progress: bool = False, device: str = "cpu") -> dict[str, Any]:
    """Train once with canaries and return the one-run audit's JSON (:meth:`OneRunAudit.summary`).

    Args:
      cfg: the settings.
      seed: seed >= 0 of everything random.
      out: JSON file: a header ({"kind": "header", "status": "running", ...}) at the start, the
        result ({"kind": "one-run", ...}) at the end.
      resume: return the finished result in ``out`` when its settings match (no training).
      progress: a progress bar on stderr.
      device: "cpu" (default), "cuda" or "auto": where the training runs (the same random numbers,
        drawn on the CPU; results agree across devices to rounding). Not part of the settings.

    Returns:
      The result dict (also written to ``out``).

    Raises:
      ValueError: invalid settings, too many canaries for the model or the data, a resumed file
        with other settings.
    """
    from rerokit.bounds.onerun import DpsgdHypothesis
    from rerokit.bounds.onerun_scores import audit_scores
    from rerokit.stats import clopper_pearson

    seed = check_int("seed", seed, minimum=0)
    from rerokit.experiments.audit import resolve_audit_device

    dev = resolve_audit_device(device)
    settings = {**cfg.to_dict(), "seed": seed}
    if out is not None and not resume and os.path.exists(out):
        raise ValueError(f"{out} exists; use resume (--resume) to return its result, or another out file")
    if out is not None and resume and os.path.exists(out):
        with open(out, encoding="utf-8") as f:
            prev = json.loads(f.read() or "null")
        if isinstance(prev, dict) and prev.get("kind") == "one-run":
            if prev.get("settings") != json.loads(json.dumps(settings)):
                raise ValueError(f"{out} holds a one-run audit with other settings; use another --out")
            return prev
    if out is not None:
        _write(out, {"kind": "header", "status": "running", "settings": settings})
    t0 = time.perf_counter()
    scores, secrets, train_s = (_whitebox if cfg.threat == "white-box" else _blackbox)(cfg, seed, progress, dev)
    tc = cfg.train
    delta = tc.delta if tc.delta is not None else 1e-5
    aud = audit_scores(scores, secrets, guess_counts=cfg.guess_counts, selection=cfg.selection, seed=seed,
                       options=cfg.options,
                       bound_kw=dict(method=cfg.method, delta=delta, confidence=cfg.confidence,
                                     adjacency=cfg.adjacency,
                                     dpsgd=DpsgdHypothesis(tc.sample_rate, tc.steps, tc.noise_multiplier)))
    eps, mu, gamma = _certified(cfg)
    correct_all = int(round(aud.accuracy_all * cfg.canaries))
    ci = clopper_pearson(correct_all, cfg.canaries, 0.95)
    res = OneRunAudit(cfg, seed, aud, eps, mu, gamma, (float(ci[0]), float(ci[1])),
                      time.perf_counter() - t0, train_s).summary()
    res["settings"] = settings
    if out is not None:
        _write(out, res)
    return res


def report_fields(one_run: dict[str, Any]) -> dict[str, Any]:
    """The report's audit fields from a one-run result (``rerokit report --audit``).

    Args:
      one_run: the dict :func:`run_one_run_audit` returns (or its ``--out`` file / ``--json`` output).

    Returns:
      ``lower_bounds`` (epsilon_lower, mu_gdp_lower and how they were obtained), ``consistent``
      (the run's own claim not rejected) and the certified epsilon / mu the audit compares with.
    """
    b = one_run.get("bound") or {}
    return {
        "lower_bounds": {"epsilon_lower": one_run["epsilon_lower"], "mu_gdp_lower": one_run["mu_lower"],
                         "method": b.get("method"), "family": b.get("family"), "confidence": b.get("confidence"),
                         "guesses": one_run.get("guesses"), "correct": one_run.get("correct"),
                         "correct_upper": one_run.get("correct_upper")},
        "consistent": None if one_run.get("claim_rejected") is None else not one_run["claim_rejected"],
        "certified_epsilon": one_run.get("certified_epsilon"),
        "certified_mu": one_run.get("certified_mu"),
    }


def config_from_args(*, epsilon: float | None, noise_multiplier: float | None, delta: float,
                     train: dict[str, Any], audit: dict[str, Any]) -> OneRunConfig:
    """:class:`OneRunConfig` with the training settings resolved as every audit does.

    Args:
      epsilon: target epsilon > 0 (sigma calibrated for (epsilon, delta) by
        :meth:`rerokit.experiments.audit.AuditConfig.resolve`), or None with ``noise_multiplier``.
      noise_multiplier: sigma > 0 given directly (the claimed one), or None.
      delta: delta in (0, 1) of the calibration and of ``epsilon_lower``.
      train: further :class:`AuditConfig` fields (dataset, steps, sample_rate, clip, lr, hidden, ...).
      audit: further :class:`OneRunConfig` fields (game, options, canaries, threat, canary, ...).

    Returns:
      The checked config.

    Raises:
      ValueError, TypeError: on invalid settings.
    """
    tc = AuditConfig.resolve(epsilon=epsilon, noise_multiplier=noise_multiplier, delta=delta, **train)
    return OneRunConfig(train=tc, **audit)
