"""Words for the report: the privacy level and where it comes from, a glossary of every symbol, the references.

* :func:`privacy_level` - the run's (epsilon, delta) placed in the three tiers that Ponomareva et
  al. (2023) propose for DP machine learning (epsilon <= 1 strong, <= 10 reasonable, above weak),
  with published DP training runs at comparable epsilon named beside it. The level is a
  comparison with that published practice, not a safety threshold of rerokit's own.
* :data:`GLOSSARY` / :func:`glossary_for` - every symbol and abbreviation the report prints, in
  plain words; :func:`glossary_for` keeps those that occur in a given output.
* :data:`REFERENCES` - authors, year and title of every work a report cites.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Iterable

__all__ = ["Level", "privacy_level", "GLOSSARY", "SHORT", "glossary_for", "REFERENCES", "TIERS"]

REFERENCES: dict[str, str] = {
    "ponomareva2023": "Ponomareva, Hazimeh, Kurakin, Xu, Denison, McMahan, Vassilvitskii, Chien, Thakurta (2023). "
                      "How to DP-fy ML: A Practical Guide to Machine Learning with Differential Privacy. JAIR 77.",
    "de2022": "De, Berrada, Hayes, Smith, Balle (2022). Unlocking High-Accuracy Differentially Private Image "
              "Classification through Scale. arXiv:2204.13650.",
    "nanayakkara2023": "Nanayakkara, Smart, Cummings, Kaptchuk, Redmiles (2023). What Are the Chances? Explaining the "
                       "Epsilon Parameter in Differential Privacy. USENIX Security.",
    "balle2022": "Balle, Cherubin, Hayes (2022). Reconstructing Training Data with Informed Adversaries. IEEE S&P.",
    "hayes2023": "Hayes, Mahloujifar, Balle (2023). Bounding Training Data Reconstruction in DP-SGD. NeurIPS.",
    "kulynych2025": "Kulynych, Gomez, Kaissis, Hayes, Balle et al. (2025). Unifying Re-identification, Attribute "
                    "Inference, and Data Reconstruction Risks. NeurIPS.",
    "guo2022": "Guo, Karrer, Chaudhuri, van der Maaten (2022). Bounding Training Data Reconstruction in Private (Deep) "
               "Learning. ICML.",
    "riess2024": "Riess, Schwethelm, Kaiser, Mueller, Schnabel, Rueckert, Ziller (2024). From Mean to Extreme: Formal "
                 "Differential Privacy Bounds on the Success of Real-World Data Reconstruction Attacks. "
                 "arXiv:2402.12861 (first version: Bounding Reconstruction Attack Success of Adversaries Without "
                 "Data Priors).",
    "jagielski2020": "Jagielski, Ullman, Oprea (2020). Auditing Differentially Private Machine Learning: How Private "
                     "is Private SGD? NeurIPS.",
}
"""Every work the report cites: key -> authors (year). Title. Venue."""

TIERS = ((1.0, "strong"), (10.0, "reasonable"), (math.inf, "weak"))
"""Ponomareva et al. (2023), epsilon <= 1 'strong', <= 10 'reasonable', larger 'weak' formal guarantees."""


@dataclass(frozen=True)
class Level:
    """Where the run's epsilon sits among the tiers of Ponomareva et al. (2023).

    Attributes:
      name: "strong", "reasonable" or "weak".
      tier: 1, 2 or 3.
      epsilon: the run's epsilon at ``delta``.
      delta: its delta.
      basis: one sentence: what the level compares to, with the citations.
      references: the keys of those citations in :data:`REFERENCES`.
    """

    name: str
    tier: int
    epsilon: float
    delta: float
    basis: str
    references: tuple[str, ...] = ("ponomareva2023", "de2022")

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict (``level`` of ``rerokit report --json``)."""
        return {"name": self.name, "tier": self.tier, "epsilon": self.epsilon, "delta": self.delta,
                "basis": self.basis, "references": list(self.references)}


def privacy_level(epsilon: float, delta: float) -> Level:
    """The tier of (epsilon, delta)-DP among those Ponomareva et al. (2023) propose.

    Args:
      epsilon: the run's certified epsilon (>= 0, may be inf).
      delta: its delta.

    Returns:
      The :class:`Level`; its ``basis`` names the tiers and, for comparison, the published image
      classifiers of De et al. (2022), trained with DP-SGD at epsilon from 1 to 8.
    """
    tier = next(i for i, (hi, _) in enumerate(TIERS, start=1) if epsilon <= hi)
    name = TIERS[tier - 1][1]
    basis = ("tiers of Ponomareva et al. 2023, \"How to DP-fy ML\": \u03b5 \u2264 1 strong, \u2264 10 reasonable, "
             "above weak; De et al. 2022 published DP-SGD image classifiers (CIFAR-10, ImageNet) at \u03b5 = 1 to 8")
    return Level(name, tier, float(epsilon), float(delta), basis)


GLOSSARY: tuple[tuple[str, str], ...] = (
    ("\u03b3", "gamma: certified upper bound on the probability that any attacker reconstructs the target "
               "(Hayes et al. 2023, Thm 2)"),
    ("\u03ba", "kappa: probability that a blind guess (the prior alone, without the model) is right"),
    ("prior", "the set of candidates the target is known to come from, e.g. 10 equally likely images"),
    ("\u03b5", "epsilon: the differential-privacy parameter; smaller is more private"),
    ("\u03b4", "delta: the probability with which the \u03b5 guarantee may fail"),
    ("\u03bc", "mu of Gaussian DP (\u03bc-GDP): telling the model with the record from the one without is no easier "
               "than telling N(0, 1) from N(\u03bc, 1)"),
    ("\u03c3", "sigma: noise multiplier of DP-SGD (noise standard deviation = \u03c3 C)"),
    ("q", "sampling rate: probability that a record is in a given batch (Poisson sampling)"),
    ("T", "number of DP-SGD steps"),
    ("C", "clipping norm of per-example gradients"),
    ("r", "smallest L2 norm of a record (the uninformed bound's assumption)"),
    ("N", "number of values in a record (its dimension)"),
    ("TPR", "true-positive rate: share of members a membership test flags"),
    ("FPR", "false-positive rate: share of non-members it wrongly flags"),
    ("advantage", "TPR \u2212 FPR of the best membership test (total variation, TV)"),
    ("Bayes", "best accuracy of a membership guess when members and non-members are equally likely"),
    ("f-DP", "trade-off curve \u03b2(\u03b1): the smallest miss rate of any test at false-positive rate \u03b1; "
             "every bound here is read off it (Kulynych et al. 2025)"),
    ("PLD", "privacy-loss distribution: the exact, certified accounting of the run (with a numerical bracket)"),
    ("RDP", "R\u00e9nyi differential privacy, an older accounting used by Guo et al.'s MSE bound"),
    ("MSE", "mean squared error between the record and its reconstruction (per value)"),
    ("PSNR", "peak signal-to-noise ratio of the reconstruction, in dB (higher = closer)"),
    ("NCC", "normalised cross-correlation between record and reconstruction (1 = identical shape)"),
    ("\u03a6", "standard normal distribution function (\u03a6\u207b\u00b9 its inverse)"),
    ("s_lo", "lower end of the audit's one-sided 95% confidence interval of the attack's success"),
    ("CI", "confidence interval (95%, exact Clopper-Pearson for success rates)"),
)
"""Symbol or abbreviation -> its meaning in plain words."""


SHORT: dict[str, str] = {
    "\u03b3": "bound on any attacker's reconstruction success", "\u03ba": "success of a blind guess",
    "prior": "the candidates the target comes from", "\u03b5": "DP parameter (smaller = more private)",
    "\u03b4": "probability the \u03b5 guarantee may fail", "\u03bc": "Gaussian-DP parameter",
    "\u03c3": "noise multiplier", "q": "sampling rate", "T": "steps", "C": "clipping norm",
    "r": "smallest record norm", "N": "values per record", "TPR": "members flagged", "FPR": "non-members flagged",
    "advantage": "TPR \u2212 FPR", "Bayes": "best membership accuracy at 1/2", "f-DP": "trade-off curve \u03b2(\u03b1)",
    "PLD": "privacy-loss distribution (certified accounting)", "RDP": "R\u00e9nyi DP", "MSE": "mean squared error",
    "PSNR": "peak signal-to-noise ratio", "NCC": "normalised cross-correlation",
    "\u03a6": "standard normal CDF", "s_lo": "lower 95% end of the audit's success", "CI": "confidence interval",
}
"""One short gloss per :data:`GLOSSARY` symbol, for the terminal (the card and model card show the long one)."""


def _occurs(term: str, text: str) -> bool:
    if len(term) <= 2 and term.isascii():  # a single letter: not inside a word ("T" in "TPR")
        return re.search(rf"(?<![A-Za-z_]){re.escape(term)}(?![A-Za-z_])", text) is not None
    return term in text


def glossary_for(texts: Iterable[str]) -> list[tuple[str, str]]:
    """The :data:`GLOSSARY` entries whose symbol occurs in ``texts``.

    Args:
      texts: the output's texts (verdict, labels, methods).

    Returns:
      ``(symbol, meaning)`` pairs in glossary order.
    """
    blob = "\n".join(texts)
    return [(k, v) for k, v in GLOSSARY if _occurs(k, blob)]
