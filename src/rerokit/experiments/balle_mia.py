"""The informed membership-inference game of Balle, Cherubin & Hayes (2022), "Reconstructing
Training Data with Informed Adversaries", Sec. II-D, Algorithm 2, and its Fig. 11 (digits).

Algorithm 2 (INFORMED-MIA(A, M, D-, z_0, z_1)): b ~ Unif{0, 1}; theta = A(D- u {z_b});
b-hat = M(theta, D-, A, z_0, z_1); the adversary wins when b-hat = b. Here A is the RecoNN
release (:func:`rerokit.attacks.reconn.train_models`: full-batch GD with momentum, MLP 64-10-10,
optionally DP-GD), D- and the pair (z_0, z_1) come from a seeded split of the digits, and two
adversaries M are run on every released model:

* ``loss`` - the loss statistic s(theta) = l(theta, z_1) - l(theta, z_0) (cross-entropy; the
  paper's Fig. 11 plots the distributions of such losses; large when z_0 was trained on): guess
  b-hat = 0 when s(theta) exceeds the midpoint of the mean statistics of the adversary's shadow
  models below;
* ``shadow`` - the paper's "trivial strategy": train ``shadow_pairs`` copies of A(D- u {z_0})
  and A(D- u {z_1}) itself (same algorithm; its own initialisations and noise, except a known
  theta_0) and guess the bit of the shadow model nearest to theta in parameter space.

With a known initialisation and no noise the training is deterministic and ``shadow`` always wins;
with a random initialisation the paper finds membership hard to infer (Fig. 11).

With ``epsilon`` the release is DP-GD (clip C, noise multiplier for (epsilon, delta)-DP over T
full-batch steps, :func:`rerokit.bounds.gaussian.noise_multiplier_full_batch`). Replacing z_0 by
z_1 moves each step's clipped sum by at most 2C under noise of standard deviation sigma C, so the
T adaptive steps are mu-GDP with mu = 2 sqrt(T) / sigma for this pair, and no adversary wins
Algorithm 2 with probability above Phi(mu / 2) = Phi(sqrt(T) / sigma) (the Bayes accuracy of the
two-point Gaussian test; Dong, Roth & Su 2022). That bound is certified for this game; without
noise there is none (the ``bound`` column is empty).

Trials run in fixed blocks on the executors and are appended to a resumable ``TrialLog``, as the
audits do; trial i's bit b and the released model's randomness depend on (seed, i) only.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import torch

from rerokit._validate import check_choice, check_instance, check_int, check_nonnegative, check_positive, check_probability
from rerokit.attacks.result import AttackResult
from rerokit.experiments._outputs import output_dir, pyplot, write_csv

__all__ = ["MIAConfig", "MIA_ATTACKS", "run_informed_mia", "informed_mia_figure", "CSV_FIELDS"]

MIA_ATTACKS = ("loss", "shadow")
CSV_FIELDS = ("init", "attack", "success", "ci_low", "ci_high", "bound", "epsilon", "noise_multiplier", "trials",
              "seed", "fixed_size", "epochs")


@dataclass(frozen=True)
class MIAConfig:
    """Settings of one informed-MIA run (echoed into the result file's header).

    Attributes:
        init: ``"known"`` (the adversary knows theta_0) or ``"random"`` (fresh per model).
        fixed_size: |D-| (digits; default 500 as RecoNN's default scale).
        epochs: full-batch steps T; lr, momentum: the GD schedule; hidden: the MLP's hidden widths.
        epsilon: DP-GD at (epsilon, delta)-DP with clipping norm ``clip``; None: no noise.
        delta, clip: see ``epsilon``.
        seed: the run's seed (split, pair, bits, initialisations, noise).
        shadow_pairs: the adversary's own models per candidate (>= 1).
    """

    init: str = "known"
    fixed_size: int = 500
    epochs: int = 100
    lr: float = 0.2
    momentum: float = 0.9
    hidden: tuple[int, ...] = (10,)
    epsilon: float | None = None
    delta: float = 1e-5
    clip: float = 1.0
    seed: int = 0
    shadow_pairs: int = 8

    def __post_init__(self) -> None:
        check_choice("init", self.init, ("known", "random"))
        check_int("fixed_size", self.fixed_size, minimum=1, maximum=1794)
        check_int("epochs", self.epochs, minimum=1)
        check_positive("lr", self.lr)
        if not 0 <= check_nonnegative("momentum", self.momentum) < 1:
            raise ValueError(f"momentum must be a number in [0, 1), got {self.momentum!r}")
        object.__setattr__(self, "hidden", tuple(check_int("hidden", h, minimum=1) for h in self.hidden))
        if self.epsilon is not None:
            check_positive("epsilon", self.epsilon)
        check_probability("delta", self.delta, high_open=True)
        check_positive("clip", self.clip)
        check_int("seed", self.seed, minimum=0)
        check_int("shadow_pairs", self.shadow_pairs, minimum=1)

    @property
    def noise_multiplier(self) -> float:
        """sigma of DP-GD for (epsilon, delta) over ``epochs`` full-batch steps (0 without epsilon)."""
        if self.epsilon is None:
            return 0.0
        from rerokit.bounds.gaussian import noise_multiplier_full_batch

        return float(noise_multiplier_full_batch(self.epsilon, self.delta, self.epochs))

    def bound(self) -> float | None:
        """Phi(sqrt(T) / sigma): the certified ceiling on Algorithm 2's success (None without noise)."""
        if self.epsilon is None:
            return None
        from scipy.stats import norm

        return float(norm.cdf(math.sqrt(self.epochs) / self.noise_multiplier))

    def to_dict(self) -> dict[str, Any]:
        """The settings as JSON-ready values."""
        d = asdict(self)
        d["hidden"] = list(self.hidden)
        d["noise_multiplier"] = self.noise_multiplier
        return d


@dataclass(frozen=True)
class _MIAJob:
    cfg: MIAConfig
    trials: int
    device: str = "cpu"


def _split(cfg: MIAConfig):
    from rerokit.attacks.reconn import split_dataset
    from rerokit.data import load_dataset

    return split_dataset(load_dataset("digits"), cfg.fixed_size, 2, cfg.seed)


def _train(cfg: MIAConfig, split, X_t: np.ndarray, y_t: np.ndarray, seed: int, models=None) -> torch.Tensor:
    from rerokit.attacks.reconn import ReconData, train_models
    from rerokit.training.settings import DPSGDSettings, MLPSpec

    sigma = cfg.noise_multiplier
    settings = DPSGDSettings(noise_multiplier=sigma, clip=cfg.clip if sigma > 0 else None, steps=cfg.epochs, lr=cfg.lr,
                             momentum=cfg.momentum)
    return train_models(ReconData(split.X_fixed, split.y_fixed, X_t, y_t),
                        model=MLPSpec(cfg.hidden, num_classes=split.num_classes), settings=settings, init=cfg.init,
                        init_seed=cfg.seed, seed=seed, models=models)


def _bits(seeds: Sequence[int]) -> np.ndarray:
    return np.array([int(np.random.default_rng([int(s), 5]).integers(2)) for s in seeds])


def _losses(cfg: MIAConfig, split, thetas: torch.Tensor) -> np.ndarray:
    """(K, 2): the cross-entropy of z_0 and z_1 under each model."""
    from rerokit.attacks.reconn import functional_mlp

    fm = functional_mlp(split.X_fixed.shape[1], cfg.hidden, split.num_classes, "elu")
    X = torch.as_tensor(split.X_eval[:2])
    y = torch.as_tensor(split.y_eval[:2])
    with torch.no_grad():
        return np.stack([torch.nn.functional.cross_entropy(fm.logits(t, X), y, reduction="none").double().numpy()
                         for t in thetas])


def _mia_block(job: _MIAJob, block) -> Iterator[tuple[int, dict[str, Any]]]:
    """The records of the missing trials of one block: released models lo..hi-1 and both attacks."""
    cfg = job.cfg
    split = _split(cfg)
    seeds = list(block.payload)
    b = _bits(seeds)
    # released models: rows lo..hi-1 of a K-row target list (model k's randomness depends on (seed, k))
    X_t = np.repeat(split.X_eval[:1], job.trials, axis=0)
    y_t = np.repeat(split.y_eval[:1], job.trials)
    X_t[block.lo : block.hi] = split.X_eval[b]
    y_t[block.lo : block.hi] = split.y_eval[b]
    theta = _train(cfg, split, X_t, y_t, cfg.seed, models=(block.lo, block.hi))
    # the adversary's own pair A(D- u {z_0}), A(D- u {z_1}): its own randomness (known theta_0 if init known)
    adv_seed = int(np.random.SeedSequence([cfg.seed, 6]).generate_state(1, np.uint64)[0] >> np.uint64(1))
    lab = np.tile([0, 1], cfg.shadow_pairs)
    shadow = _train(cfg, split, split.X_eval[lab], split.y_eval[lab], adv_seed)
    loss = _losses(cfg, split, theta)
    stat = loss[:, 1] - loss[:, 0]
    ref = _losses(cfg, split, shadow)
    ref_stat = ref[:, 1] - ref[:, 0]
    cut = 0.5 * (ref_stat[lab == 0].mean() + ref_stat[lab == 1].mean())
    dist = torch.cdist(theta.double(), shadow.double()).numpy()
    todo = set(block.todo)
    for j, s in enumerate(seeds):
        i = block.lo + j
        if i in todo:
            g_loss, g_shadow = int(stat[j] <= cut), int(lab[np.argmin(dist[j])])
            yield i, {"seed": s, "b": int(b[j]), "loss0": float(loss[j, 0]), "loss1": float(loss[j, 1]),
                      "dist0": float(dist[j, lab == 0].min()), "dist1": float(dist[j, lab == 1].min()),
                      "success": {"loss": g_loss == b[j], "shadow": g_shadow == b[j]}}


# Blocks may run concurrently on threads (rerokit.executors.LocalExecutor): a block draws from torch's
# global generator only through rerokit.training.models (init_flat, make_mlp), which hold
# GLOBAL_RNG_LOCK for every draw, seeded or not, and sets no process-wide state. (Before that lock
# covered module construction too, a concurrent block's nn.Linear(...) could draw between another
# block's manual_seed(seed) and its reset_parameters: a different known theta_0, so the released
# model and the adversary's identical-by-construction one ended up apart.)
_mia_block.thread_safe = True  # type: ignore[attr-defined]


def run_informed_mia(cfg: MIAConfig, trials: int, *, out: str | None = None, resume: bool = False,
                     progress: bool = True, executor: Any = "local", chunk_size: int = 100) -> dict[str, Any]:
    """Algorithm 2 of Balle et al. (2022) played ``trials`` times (see the module docstring).

    Args:
        cfg: the :class:`MIAConfig`.
        trials: released models K >= 1.
        out: JSON-lines file of the trials (None: in memory); resume: continue it.
        progress: a progress bar on stderr.
        executor: ``"local"``, ``"ray"`` or a :class:`rerokit.executors.Executor`.
        chunk_size: released models trained together (a block; recorded in the settings).

    Returns:
        ``{"results": {attack: AttackResult}, "bound": float | None, "records": [...],
        "settings": {...}}``.

    Raises:
        ValueError: if a setting is out of range (before any training).
    """
    from rerokit.executors import RunOptions
    from rerokit.experiments.audit import TrialBlocks, run_trial_blocks
    from rerokit.experiments.records import Bool, DictOf, Int, Num

    check_instance("cfg", cfg, MIAConfig)
    trials = check_int("trials", trials, minimum=1)
    schema = {"seed": Int(minimum=0), "b": Int(minimum=0), "loss0": Num(minimum=0), "loss1": Num(minimum=0),
              "dist0": Num(minimum=0), "dist1": Num(minimum=0), "success": DictOf(Bool, keys=MIA_ATTACKS)}
    job = _MIAJob(cfg, trials)
    opts = RunOptions(out=out, resume=resume, chunk_size=chunk_size, progress=progress, executor=executor)
    spec = TrialBlocks(schema, {"game": "informed MIA (Balle et al. 2022, Alg. 2)"},
                       f"informed-MIA trials (init {cfg.init})", lambda: _split(cfg))
    _, seed, settings, recs = run_trial_blocks(job, _mia_block, trials, cfg.seed, opts, spec)
    bound = cfg.bound()
    results = {a: AttackResult.from_successes([r["success"][a] for r in recs], seed=seed, settings=settings,
                                              extras={"bound": bound}) for a in MIA_ATTACKS}
    return {"results": results, "bound": bound, "records": recs, "settings": settings}


def informed_mia_figure(out_dir: str | Path, cfg: MIAConfig = MIAConfig(), *, trials: int = 500,
                        inits: Sequence[str] = ("known", "random"), resume: bool = False, progress: bool = True,
                        executor: Any = "local") -> dict[str, Any]:
    """Fig. 11 of Balle et al. (2022) and Algorithm 2's success, one run per initialisation setting.

    Args:
        out_dir: the output folder: ``informed_mia.csv``, ``informed_mia.png``,
            ``informed_mia_<init>.jsonl``.
        cfg: the settings (its ``init`` is replaced by each of ``inits``).
        trials: released models per setting.
        inits: ``"known"`` and/or ``"random"``.
        resume, progress, executor: as in :func:`run_informed_mia`.

    Returns:
        ``{"png", "csv", "rows"}``: one row per setting and attack (success, 95% Clopper-Pearson
        interval, the certified bound with ``epsilon``).
    """
    from rerokit.executors import using_executor

    inits = [check_choice("inits", i, ("known", "random")) for i in inits]
    if not inits:
        raise ValueError("inits must name known and/or random")
    out = output_dir(out_dir)
    rows, losses = [], {}
    with using_executor(executor) as ex:
        for init in inits:
            c = replace(cfg, init=init)
            res = run_informed_mia(c, trials, out=str(out / f"informed_mia_{init}.jsonl"), resume=resume,
                                   progress=progress, executor=ex)
            losses[init] = res["records"]
            for a, r in res["results"].items():
                rows.append(dict(init=init, attack=a, success=r.value, ci_low=r.interval[0], ci_high=r.interval[1],
                                 bound=res["bound"], epsilon=c.epsilon, noise_multiplier=c.noise_multiplier,
                                 trials=r.trials, seed=c.seed, fixed_size=c.fixed_size, epochs=c.epochs))
    write_csv(out / "informed_mia.csv", rows, CSV_FIELDS)
    _plot(out / "informed_mia.png", rows, losses)
    return {"png": str(out / "informed_mia.png"), "csv": str(out / "informed_mia.csv"), "rows": rows}


def _plot(path: Path, rows: list[dict[str, Any]], losses: dict[str, list[dict[str, Any]]]) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(losses) + 1, figsize=(4.2 * (len(losses) + 1), 3.4))
    for ax, (init, recs) in zip(axes, losses.items()):
        inn = np.log10([r["loss0"] + 1e-12 for r in recs if r["b"] == 0])
        outn = np.log10([r["loss0"] + 1e-12 for r in recs if r["b"] == 1])
        bins = np.histogram_bin_edges(np.concatenate([inn, outn]) if len(inn) + len(outn) else [0, 1], bins=30)
        ax.hist(inn, bins=bins, alpha=0.6, label="z0 in training (b = 0)")
        ax.hist(outn, bins=bins, alpha=0.6, label="z1 in training instead (b = 1)")
        ax.set_xlabel("log10 loss on z0")
        ax.set_title(f"init {init}")
        ax.legend(fontsize=7)
    ax = axes[-1]
    labels = [f"{r['init']}\n{r['attack']}" for r in rows]
    ax.bar(range(len(rows)), [r["success"] for r in rows],
           yerr=[[r["success"] - r["ci_low"] for r in rows], [r["ci_high"] - r["success"] for r in rows]], capsize=3)
    if rows and rows[0]["bound"] is not None:
        ax.axhline(rows[0]["bound"], color="k", ls="--", label="certified bound")
        ax.legend(fontsize=7)
    ax.axhline(0.5, color="grey", ls=":")
    ax.set_xticks(range(len(rows)), labels, fontsize=7)
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("Alg. 2 success")
    ax.set_title("informed MIA (digits)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
