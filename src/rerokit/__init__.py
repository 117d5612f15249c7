"""rerokit: how likely is it that someone reconstructs a training example of your DP model?

The practitioner's API (imported on first use, so ``import rerokit`` stays cheap and torch-free)::

    import rerokit
    risk = rerokit.reconstruction_risk(noise_multiplier=1.0, sample_rate=0.01, steps=1000, prior=10)
    risk.gamma, risk.membership.advantage, risk.epsilon

    rerokit.reconstruction_risk(privacy_engine.accountant, prior=10)     # an Opacus run
    rerokit.calibrate_noise_multiplier(0.2, sample_rate=0.01, steps=1000, prior=10)
    rerokit.dpsgd_tradeoff(noise_multiplier=1.0, sample_rate=0.01, steps=1000).tpr_at_fpr(0.01)
    rerokit.one_run_bound(canaries=1000, guesses=100, correct=95).epsilon_lower   # one-run audit

Opacus integration (needs the ``torch`` extra): ``rerokit.opacus.RiskAccountant`` and
``rerokit.opacus.make_private_with_reconstruction_risk``. Sub-packages: ``rerokit.bounds`` (pure
math), ``rerokit.accounting``, ``rerokit.training``, ``rerokit.attacks``, ``rerokit.experiments``,
``rerokit.report``.
"""

from __future__ import annotations

from rerokit import _lazy, _opacus_hook

__version__ = "0.2.0"

# name -> module that defines it; resolved lazily (PEP 562)
_EXPORTS = {
    "reconstruction_risk": "rerokit.risk",
    "reconstruction_risks": "rerokit.risk",
    "ReconstructionRisk": "rerokit.risk",
    "MembershipRisk": "rerokit.risk",
    "dpsgd_tradeoff": "rerokit.bounds.tradeoff",
    "TradeoffCurve": "rerokit.bounds.tradeoff",
    "rero_dpsgd": "rerokit.bounds.dpsgd",
    "epsilon_dpsgd": "rerokit.bounds.dpsgd",
    "rero_laplace": "rerokit.bounds.laplace",
    "rero_finite_support": "rerokit.bounds.information_flow",
    "calibrate_noise_multiplier": "rerokit.bounds.calibrate",
    "calibrate_steps": "rerokit.bounds.calibrate",
    "noise_multiplier_for_epsilon": "rerokit.bounds.calibrate",
    "Schedule": "rerokit.bounds.schedule",
    "Sampling": "rerokit.bounds.schedule",
    "Numerics": "rerokit.bounds.options",
    "MonteCarlo": "rerokit.bounds.options",
    "Comparisons": "rerokit.bounds.options",
    "RiskOptions": "rerokit.risk",
    "Prior": "rerokit.bounds.priors",
    "UniformDiscretePrior": "rerokit.bounds.priors",
    "DiscretePrior": "rerokit.bounds.priors",
    "PixelTolerancePrior": "rerokit.bounds.priors",
    "UniformBallPrior": "rerokit.bounds.priors",
    "GaussianPrior": "rerokit.bounds.priors",
    "Bound": "rerokit.bounds.types",
    "one_run_bound": "rerokit.bounds.onerun",
    "OneRunBound": "rerokit.bounds.onerun",
}

__all__ = ["__version__", *_EXPORTS]


__getattr__ = _lazy.lazy_getattr(globals(), _EXPORTS)

# PrivacyEngine(accountant="rerokit") works once opacus is imported, without importing it (or torch) here.
_opacus_hook.install()


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
