"""Opacus integration: an accountant that reports reconstruction risk, and training *to* a target risk.

:class:`RiskAccountant` is an Opacus ``IAccountant`` (``step``, ``get_epsilon(delta)``, ``history``,
``mechanism``, ``state_dict``/``load_state_dict``), so it plugs into ``PrivacyEngine`` exactly like
Opacus' own accountants::

    from opacus import PrivacyEngine
    from rerokit.opacus import RiskAccountant, make_private_with_reconstruction_risk

    engine = PrivacyEngine(accountant="rerokit")          # works after `import rerokit`
    model, optimizer, loader = make_private_with_reconstruction_risk(
        engine, model, optimizer, loader, target_gamma=0.2, prior=10, epochs=5, max_grad_norm=1.0)
    for epoch in range(5):
        ...                                                # train as usual
        risk = engine.accountant.get_risk()               # rerokit.ReconstructionRisk
        print(epoch, risk.gamma, engine.accountant.get_epsilon(1e-5))

Besides epsilon it answers :meth:`RiskAccountant.get_gamma` / :meth:`RiskAccountant.get_risk` (the
result of :func:`rerokit.reconstruction_risk` on its history) at any point of training, in tens
of milliseconds, so it can be logged every epoch. Its epsilon is rerokit's certified PLD epsilon
(:func:`rerokit.bounds.dpsgd.epsilon_dpsgd`, add-or-remove adjacency): an upper bound, like the
``eps_upper`` of Opacus' PRV accountant.

:func:`make_private_with_reconstruction_risk` is the twin of Opacus'
``PrivacyEngine.make_private_with_epsilon``: it calibrates the noise multiplier so that the
certified gamma after ``epochs`` epochs is at most ``target_gamma`` (sampling rate 1/len(loader),
steps epochs x len(loader), the same accounting as Opacus' Poisson data loader), optionally also
meeting a ``target_epsilon`` (the larger sigma wins), attaches a :class:`RiskAccountant` and calls
``make_private``. Needs the ``torch`` extra (torch and opacus).

Sampling is part of the mechanism. With ``poisson_sampling=False`` Opacus keeps the loader's
fixed-size batches (each example at most once per epoch) and still records the sampling rate
1/len(loader) as if it were Poisson; Poisson accounting then does not hold (no amplification by
subsampling). :func:`detect_sampler` reads the sampler off Opacus' flag and the DataLoader's
sampler / batch sampler, the calibration calibrates under it (shuffled: E epochs are E Gaussian
releases of the target, gamma = Phi(Phi^-1(kappa) + sqrt(E)/sigma); see
:mod:`rerokit.bounds.schedule`), and the :class:`RiskAccountant` keeps it, so ``get_risk`` and
``get_epsilon`` certify the run that was actually trained.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

from opacus.accountants import IAccountant
from opacus.accountants.registry import register_accountant

from rerokit._validate import check_int, check_positive, check_probability
from rerokit.bounds.schedule import Sampling, Schedule
from rerokit.opacus_audit import GradientCanaryAudit, InputCanaries  # noqa: F401 - one-run audit hooks

__all__ = ["RiskAccountant", "make_private_with_reconstruction_risk", "EpsilonTarget", "MECHANISM",
           "detect_sampler", "DetectedSampler"]

MECHANISM = "rerokit"


@dataclass(frozen=True)
class DetectedSampler:
    """How a DataLoader forms its batches, as far as rerokit can see.

    Attributes:
      sampler: "poisson", "shuffle" or "full_batch" (see :mod:`rerokit.bounds.schedule`).
      source: "detected" (read off Opacus' flag / the loader), "declared" (given by the user where
        rerokit could not see it) or "assumed" (rerokit could not see it and nobody said).
      note: what was seen, or which assumption was made.
    """

    sampler: str
    source: str
    note: str


_NO_REPLACEMENT_SAMPLERS = ("SequentialSampler", "SubsetRandomSampler")


def detect_sampler(data_loader: Any, poisson_sampling: bool | None = None) -> DetectedSampler:
    """The sampler of a training run, read off Opacus' ``poisson_sampling`` flag and the DataLoader.

    Args:
      data_loader: the (torch or Opacus) DataLoader the model is trained on.
      poisson_sampling: the ``poisson_sampling`` argument given to Opacus' ``make_private`` (True:
        Opacus replaces the loader by a Poisson one); None when not known.

    Returns:
      A :class:`DetectedSampler`: an Opacus ``DPDataLoader`` or ``UniformWithReplacementSampler``
      (or ``poisson_sampling=True``) is Poisson; a single batch per epoch is full batch; a
      ``BatchSampler`` over a ``SequentialSampler``, ``SubsetRandomSampler`` or a ``RandomSampler``
      without replacement is "shuffle" (each example at most once per epoch); anything else is
      "shuffle", *assumed* (each example at most once per epoch), and says so.
    """
    if poisson_sampling:
        return DetectedSampler("poisson", "detected", "Opacus make_private(poisson_sampling=True): Poisson batches")
    bs = getattr(data_loader, "batch_sampler", None)
    smp = getattr(data_loader, "sampler", None)
    if type(data_loader).__name__ == "DPDataLoader" or type(bs).__name__ == "UniformWithReplacementSampler":
        return DetectedSampler("poisson", "detected", f"{type(data_loader).__name__} with Poisson batches")
    try:
        n_batches = len(data_loader)
    except TypeError:
        n_batches = None
    name = type(smp).__name__
    if n_batches == 1:
        return DetectedSampler("full_batch", "detected", "one batch per epoch: every step uses every example")
    if type(bs).__name__ == "BatchSampler" and (
            name in _NO_REPLACEMENT_SAMPLERS or (name == "RandomSampler" and not getattr(smp, "replacement", True))):
        return DetectedSampler("shuffle", "detected",
                               f"fixed-size batches from a {name}: each example at most once per epoch")
    return DetectedSampler("shuffle", "assumed",
                           f"batch sampler {type(bs).__name__} over {name}: rerokit cannot see how it forms batches "
                           "and assumes fixed-size batches with each example at most once per epoch")


class RiskAccountant(IAccountant):
    """Opacus accountant that also reports the certified reconstruction risk of the run so far.

    ``history`` is Opacus' list of ``(noise_multiplier, sample_rate, num_steps)`` (consecutive
    equal settings merged, as Opacus' PRV accountant does).

    Args:
      prior: default prior of :meth:`get_risk` / :meth:`get_gamma` (an int n = n equally likely
        candidates, or a rerokit prior); or give ``kappa`` / ``log_kappa``. May be left unset and
        passed to each call instead.
      kappa: the prior's baseline success in (0, 1], instead of ``prior``.
      log_kappa: natural log of the baseline (<= 0), instead of ``prior``.
      sampler: how the run forms batches, "poisson", "shuffle" or "full_batch"; None (default):
        Poisson, *assumed* (``PrivacyEngine(accountant="rerokit")`` does not tell the accountant;
        :func:`make_private_with_reconstruction_risk` detects it and sets it).
      examples_per_user: unit of privacy k >= 1 (default 1).

    Raises:
      ValueError: if more than one of ``prior`` / ``kappa`` / ``log_kappa`` is given, or the
        sampler / examples_per_user is out of range.
    """

    def __init__(self, prior: Any = None, *, kappa: float | None = None, log_kappa: float | None = None,
                 sampler: str | None = None, examples_per_user: int = 1):
        super().__init__()
        if sum(x is not None for x in (prior, kappa, log_kappa)) > 1:
            raise ValueError("give at most one of prior, kappa or log_kappa")
        self.prior, self.kappa, self.log_kappa = prior, kappa, log_kappa
        # validated here so that a typo fails at construction, not at the first get_risk
        Schedule(((1.0, 1.0, 1),), sampler or "poisson", examples_per_user)
        self.sampler = sampler or "poisson"
        self.sampler_source = "declared" if sampler is not None else "assumed"
        self.examples_per_user = examples_per_user
        self._cache: dict[Any, Any] = {}

    @classmethod
    def mechanism(cls) -> str:
        """The accountant's registry name, ``"rerokit"`` (``PrivacyEngine(accountant="rerokit")``)."""
        return MECHANISM

    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """Record one optimisation step (called by Opacus' DPOptimizer hook).

        Args:
          noise_multiplier: the step's noise multiplier sigma.
          sample_rate: the step's sampling rate q.
        """
        if self.history and self.history[-1][0] == noise_multiplier and self.history[-1][1] == sample_rate:
            s, q, n = self.history[-1]
            self.history[-1] = (s, q, n + 1)
        else:
            self.history.append((noise_multiplier, sample_rate, 1))

    def __len__(self) -> int:
        return sum(int(n) for _, _, n in self.history)

    def _schedule(self) -> Schedule:
        if not self.history:
            raise ValueError("no DP-SGD steps recorded yet: the accountant's history is empty")
        if any(float(s) == 0.0 for s, _, _ in self.history):
            raise ValueError("the history has steps with noise_multiplier 0 (no noise): those steps are not "
                             "differentially private and no finite risk bound holds")
        return Schedule.from_opacus_history(self.history).with_sampling(
            self.sampler, self.examples_per_user, self.sampler_source)

    def detect_sampler(self, data_loader: Any, poisson_sampling: bool | None = None) -> "DetectedSampler":
        """Set the accountant's sampler from the training loader (for ``PrivacyEngine(accountant="rerokit")``
        followed by a plain ``make_private``, which does not tell the accountant how batches are formed).

        Args:
          data_loader: the loader the model is trained on.
          poisson_sampling: the ``poisson_sampling`` given to ``make_private`` (None: not known).

        Returns:
          The :class:`DetectedSampler` now in use.
        """
        found = detect_sampler(data_loader, poisson_sampling)
        self.sampler, self.sampler_source = found.sampler, found.source
        self._cache.clear()
        return found

    def _key(self) -> tuple:
        return (tuple(self.history), self.sampler, self.examples_per_user)

    def get_epsilon(self, delta: float, **kwargs: Any) -> float:
        """Certified epsilon at ``delta`` of the steps so far (rerokit's PLD, add-or-remove adjacency),
        under the accountant's sampler and unit of privacy (finite below the PLD's floor:
        :func:`rerokit.bounds.certify.certified_epsilon`).

        Extra keyword arguments of other accountants (``eps_error``, ``alphas``, ...) are ignored.
        A history with non-private steps (noise multiplier 0) gives ``inf``. Results are cached per
        history and delta.

        Args:
          delta: delta in (0, 1).
          **kwargs: ignored (accepted for compatibility with Opacus' accountants).

        Returns:
          epsilon >= 0, an upper bound (:func:`rerokit.bounds.dpsgd.epsilon_dpsgd`).

        Raises:
          ValueError: if ``delta`` is not in (0, 1), or no step has been recorded yet.
        """
        from rerokit.bounds.certify import certified_epsilon

        d = check_probability("delta", delta, high_open=True)
        if self.history and any(float(s) == 0.0 for s, _, _ in self.history):
            return math.inf
        key = ("epsilon", self._key(), d)
        if key not in self._cache:
            self._cache[key] = certified_epsilon(self._schedule(), d)
        return self._cache[key]

    def get_risk(self, prior: Any = None, *, kappa: float | None = None, log_kappa: float | None = None,
                 delta: float = 1e-5, **kwargs: Any):
        """:func:`rerokit.reconstruction_risk` of the steps so far (a :class:`rerokit.ReconstructionRisk`).

        Results are cached per history and arguments.

        Args:
          prior: the prior (an int n or a rerokit prior); if none of ``prior`` / ``kappa`` /
            ``log_kappa`` is given, the accountant's.
          kappa: the baseline success in (0, 1], instead of ``prior``.
          log_kappa: natural log of the baseline (<= 0), instead of ``prior``.
          delta: delta of the reported epsilon (default 1e-5).
          **kwargs: further arguments of :func:`rerokit.reconstruction_risk` (``options=RiskOptions(...)``).

        Returns:
          The :class:`rerokit.ReconstructionRisk`.

        Raises:
          ValueError: if no prior is known, no step has been recorded, a step had noise multiplier 0, or
            :func:`rerokit.reconstruction_risk` rejects an argument.
        """
        from rerokit.risk import reconstruction_risk

        if prior is None and kappa is None and log_kappa is None:
            prior, kappa, log_kappa = self.prior, self.kappa, self.log_kappa
        if prior is None and kappa is None and log_kappa is None:
            raise ValueError("give a prior (an int n for n equally likely candidates) to RiskAccountant(...) or "
                             "to get_risk(...)")
        key = ("risk", self._key(), repr(prior), kappa, log_kappa, delta, tuple(sorted(kwargs.items())))
        if key not in self._cache:
            self._cache[key] = reconstruction_risk(self._schedule(), prior, kappa=kappa, log_kappa=log_kappa,
                                                   delta=delta, **kwargs)
        return self._cache[key]

    def get_gamma(self, prior: Any = None, *, kappa: float | None = None, log_kappa: float | None = None) -> float:
        """Certified upper bound gamma on the reconstruction success so far (Hayes et al. 2023 Thm 2).

        Args:
          prior: the prior (an int n or a rerokit prior); if none is given, the accountant's.
          kappa: the baseline success in (0, 1], instead of ``prior``.
          log_kappa: natural log of the baseline (<= 0), instead of ``prior``.

        Returns:
          gamma, the ``gamma`` of :meth:`get_risk`.

        Raises:
          ValueError: as :meth:`get_risk`.
        """
        return self.get_risk(prior, kappa=kappa, log_kappa=log_kappa).gamma

    def state_dict(self, destination: Any = None) -> Any:
        """Opacus' state dict (history, mechanism) plus the sampler and the unit of privacy.

        Args:
          destination: a mapping to fill (default a new ``OrderedDict``).

        Returns:
          The state dict.
        """
        d = super().state_dict(destination)
        d["sampler"], d["sampler_source"], d["examples_per_user"] = (self.sampler, self.sampler_source,
                                                                     self.examples_per_user)
        return d

    def load_state_dict(self, state_dict: Any) -> None:
        """Restore the history (and the sampler / unit of privacy, when saved) from a ``state_dict``
        (entries made tuples; the cache cleared).

        Args:
          state_dict: the dict saved by ``state_dict()``.
        """
        super().load_state_dict(state_dict)
        self.history = [tuple(h) for h in self.history]
        if "sampler" in state_dict:
            self.sampler = state_dict["sampler"]
            self.sampler_source = state_dict.get("sampler_source", "declared")
            self.examples_per_user = int(state_dict.get("examples_per_user", 1))
        self._cache.clear()


# PrivacyEngine(accountant="rerokit") through Opacus' public registry; force: replaces the lazy factory that
# `import rerokit` registers (rerokit._opacus_hook), and a re-import
register_accountant(MECHANISM, RiskAccountant, force=True)


@dataclass(frozen=True)
class EpsilonTarget:
    """An (epsilon, delta) guarantee to meet as well as the reconstruction target:
    ``make_private_with_reconstruction_risk(..., target_epsilon=EpsilonTarget(3.0, delta=1e-6))``.

    Attributes:
      epsilon: the epsilon not to exceed, a finite number > 0.
      delta: its delta, in (0, 1) (default 1e-5).

    Raises:
      ValueError: if a field is out of range or not finite.
      TypeError: if a field is not a real number.
    """

    epsilon: float
    delta: float = 1e-5

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_positive("target_epsilon", self.epsilon))
        object.__setattr__(self, "delta", check_probability("target_delta", self.delta, high_open=True))


# keywords of make_private_with_reconstruction_risk before its parameter objects, and what replaced them
_REPLACED = {
    "kappa": "prior=rerokit.bounds.priors.BaselinePrior(kappa=...)",
    "log_kappa": "prior=rerokit.bounds.priors.BaselinePrior(log_kappa=...)",
    "target_delta": "target_epsilon=rerokit.opacus.EpsilonTarget(epsilon, delta=...)",
    "examples_per_user": "sampler=rerokit.Sampling(examples_per_user=...)",
}


def make_private_with_reconstruction_risk(
    privacy_engine: Any,
    module: Any,
    optimizer: Any,
    data_loader: Any,
    *,
    target_gamma: float,
    prior: Any = None,
    epochs: int,
    max_grad_norm: float,
    target_epsilon: float | EpsilonTarget | None = None,
    sampler: str | Sampling | None = None,
    **make_private_kwargs: Any,
) -> Any:
    """Opacus ``make_private`` with the noise multiplier calibrated to a target reconstruction risk.

    sigma is the smallest noise multiplier whose certified gamma after ``epochs`` epochs (q =
    1/len(data_loader), T = epochs * len(data_loader); :func:`rerokit.bounds.calibrate.
    calibrate_noise_multiplier`, the same solver as ``rerokit calibrate dpsgd``) is at most
    ``target_gamma`` *under the run's sampler* (:func:`detect_sampler`: with
    ``poisson_sampling=False`` the loader's fixed-size batches, certified without amplification,
    so that Phi(Phi^-1(kappa) + sqrt(epochs)/sigma) <= target_gamma); with ``target_epsilon``, also the
    smallest sigma meeting (epsilon, delta) (:func:`rerokit.bounds.calibrate.noise_multiplier_for_epsilon`),
    and the larger of the two is used. The engine's accountant becomes a :class:`RiskAccountant` with
    this prior (keeping any history it already had, with a ``RuntimeWarning``: the calibration assumes a
    fresh run), so ``privacy_engine.accountant.get_risk()`` reports the run's risk at any time.

    Args:
      privacy_engine: an ``opacus.PrivacyEngine``.
      module: the model, as for ``PrivacyEngine.make_private``.
      optimizer: its optimizer, as for ``PrivacyEngine.make_private``.
      data_loader: the training data loader (must have a length: batches per epoch).
      target_gamma: the reconstruction success not to exceed, in (kappa, 1).
      prior: the adversary's prior: an int n (n equally likely candidates, e.g. ``prior=10``) or a
        rerokit prior (:class:`~rerokit.bounds.priors.BaselinePrior` for a bare kappa or log kappa).
      epochs: number of epochs that will be trained (>= 1).
      max_grad_norm: the clipping norm C > 0.
      target_epsilon: an epsilon > 0 honoured as well, at delta = 1e-5, or an :class:`EpsilonTarget`
        with its delta; None (default): gamma only.
      sampler: None (default): detected from the loader and ``poisson_sampling``
        (:func:`detect_sampler`), one example per user. A :class:`~rerokit.bounds.schedule.Sampling`
        gives the unit of privacy (``Sampling(examples_per_user=k)``: protect all k examples of a
        user) and, optionally, declares the sampler ("poisson", "shuffle", "full_batch"; a bare name
        also works), which must then agree with what is detected.
      **make_private_kwargs: passed to ``make_private`` (``poisson_sampling``, ``criterion``, ...).

    Returns:
      What ``make_private`` returns (module, optimizer, data_loader [, criterion]); the chosen
      noise multiplier is ``optimizer.noise_multiplier``.

    Raises:
      TypeError: if ``data_loader`` has no length, a setting has the wrong type, or a keyword replaced
        by a parameter object is given (``kappa``, ``log_kappa``, ``target_delta``,
        ``examples_per_user``: the message says what replaced it).
      ValueError: if ``data_loader`` is empty, ``epochs``/``max_grad_norm`` is out of range, the
        declared sampler contradicts the detected one, or the target cannot be met (see
        :func:`rerokit.bounds.calibrate.calibrate_noise_multiplier`).
    """
    from rerokit.bounds.calibrate import calibrate_noise_multiplier, noise_multiplier_for_epsilon

    old_names = sorted(set(_REPLACED) & set(make_private_kwargs))
    if old_names:
        raise TypeError("make_private_with_reconstruction_risk: " + "; ".join(
            f"{n}= is now {_REPLACED[n]}" for n in old_names))
    if prior is None:
        raise ValueError("give the adversary's prior: prior=n for n equally likely candidates (e.g. prior=10) or a "
                         "rerokit prior (BaselinePrior(kappa=...) for a bare baseline)")
    epochs = check_int("epochs", epochs, minimum=1)
    check_positive("max_grad_norm", max_grad_norm)
    eps_target = None
    if target_epsilon is not None:
        eps_target = target_epsilon if isinstance(target_epsilon, EpsilonTarget) else EpsilonTarget(target_epsilon)
    declared = Sampling.of(sampler)
    try:
        n_batches = len(data_loader)
    except TypeError:
        raise TypeError("data_loader must have a length (number of batches per epoch)") from None
    if n_batches < 1:
        raise ValueError("data_loader is empty (no batches per epoch)")
    q, T = 1.0 / n_batches, epochs * n_batches
    found = detect_sampler(data_loader, make_private_kwargs.get("poisson_sampling", True))
    if declared.sampler is not None and declared.sampler != found.sampler and found.source == "detected":
        raise ValueError(f"sampler={declared.sampler!r} contradicts the training loader ({found.note}): "
                         "leave sampler's name out to use what is detected")
    if declared.sampler is not None and found.source == "assumed":
        found = DetectedSampler(declared.sampler, "declared", f"declared sampler {declared.sampler!r}")
    if found.source == "assumed":
        warnings.warn(f"rerokit: {found.note}; the risk is certified under that assumption", RuntimeWarning,
                      stacklevel=2)
    sampling = Sampling(found.sampler, declared.examples_per_user)
    sigma = calibrate_noise_multiplier(target_gamma, q, T, prior=prior, delta=None, sampler=sampling).noise_multiplier
    if eps_target is not None:
        sigma = max(sigma, noise_multiplier_for_epsilon(eps_target.epsilon, eps_target.delta, q, T, sampler=sampling))
    old = privacy_engine.accountant
    if len(old) > 0:
        warnings.warn("make_private_with_reconstruction_risk called with privacy budget already spent: the "
                      "noise multiplier assumes a fresh run, so the final risk will be higher than the target",
                      RuntimeWarning, stacklevel=2)
    acc = RiskAccountant(prior, sampler=sampling.sampler, examples_per_user=sampling.examples_per_user)
    acc.sampler_source = found.source
    acc.history = [tuple(h) for h in old.history]
    privacy_engine.accountant = acc
    return privacy_engine.make_private(module=module, optimizer=optimizer, data_loader=data_loader,
                                       noise_multiplier=sigma, max_grad_norm=max_grad_norm, **make_private_kwargs)
