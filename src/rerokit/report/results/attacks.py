"""Typed results of ``attack glm|reconn|analytic`` (see :mod:`rerokit.report.results`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from rerokit.report.results.json_fields import json_key, json_object, json_pair, json_numbers, json_number

__all__ = ["GlmSettings", "GlmAttackOutput", "ReconnOutput", "AnalyticAttackOutput"]


# --------------------------------------------------------------------------- attack glm


@dataclass(frozen=True)
class GlmSettings:
    """The settings of ``rerokit attack glm`` (the JSON's ``settings``): the data, the fitted GLM and the noise."""

    dataset: str
    model: str
    classes: tuple[int, ...]
    lam: float
    noise: float
    draws: int
    n: int
    dim: int

    _KEYS = ("dataset", "model", "classes", "lam", "noise", "draws", "n", "dim")

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in ((k, getattr(self, k)) for k in self._KEYS)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "settings") -> "GlmSettings":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key)."""
        kw = {k: json_key(d, k, where) for k in cls._KEYS}
        return cls(**dict(kw, classes=tuple(kw["classes"])))


@dataclass(frozen=True)
class GlmAttackOutput:
    """``rerokit attack glm``: the closed-form reconstruction attack on a GLM fitted to optimality
    (Balle et al. 2022, Thm 1), over every target of the dataset.

    Attributes:
        result: the mean MSE over the reconstructed targets with its Student-t interval
            (:class:`rerokit.attacks.result.AttackResult`, metric ``"mse"``; its ``trials`` the targets
            reconstructed, its ``settings`` a :class:`GlmSettings`' dict).
        mse_median, mse_max: the median and largest MSE over the targets.
        targets: the targets attacked (the JSON's ``trials``: the interval is over targets).
        non_identifiable: targets whose gradient vanished or was not finite (not reconstructed).
        exact: every target reconstructed to within 1e-16 without noise.
        reference: the theorem.
        label_accuracy: the fraction of labels recovered (logistic and multinomial models), else None.
    """

    result: Any  # rerokit.attacks.result.AttackResult (numpy at import: not imported here)
    mse_median: float
    mse_max: float
    targets: int
    non_identifiable: int
    exact: bool
    reference: str
    label_accuracy: float | None = None

    @property
    def settings(self) -> GlmSettings:
        return GlmSettings.from_dict(self.result.settings)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict of the command (less ``rerokit_version``)."""
        d = self.result.to_dict()
        d.update(mse_median=self.mse_median, mse_max=self.mse_max, targets=self.targets,
                 non_identifiable=self.non_identifiable, exact=self.exact, reference=self.reference)
        if self.label_accuracy is not None:
            d["label_accuracy"] = self.label_accuracy
        d["trials"] = self.targets  # the interval is over targets, not over noise draws
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "attack glm result") -> "GlmAttackOutput":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key; unknown keys ignored)."""
        from rerokit.attacks.result import AttackResult

        n = json_numbers(d, ("mse", "ci_low", "ci_high", "confidence", "mse_median", "mse_max", "targets",
                             "non_identifiable"),
                  where)
        settings = GlmSettings.from_dict(json_object(json_key(d, "settings", where), f"{where}: settings"),
                                         f"{where}: settings")
        json_key(d, "trials", where)
        result = AttackResult("mse", n["mse"], (n["ci_low"], n["ci_high"]), n["targets"] - n["non_identifiable"],
                              json_key(d, "seed", where), settings.to_dict(), n["confidence"])
        return cls(result=result, **{k: n[k] for k in ("mse_median", "mse_max", "targets", "non_identifiable")},
                   exact=json_key(d, "exact", where), reference=json_key(d, "reference", where),
                   label_accuracy=json_number(d.get("label_accuracy"), "label_accuracy", where))


# --------------------------------------------------------------------------- attack reconn


@dataclass(frozen=True)
class ReconnOutput:
    """``rerokit attack reconn``: the reconstructor-network attack (Balle et al. 2022, Sec. IV-V) on
    held-out released models, as its JSON summary. The run's
    :class:`~rerokit.experiments.reconn.ReconnResult` also holds per-target arrays the JSON leaves
    out; :meth:`of` reads its summary (:meth:`~rerokit.experiments.reconn.ReconnResult.to_dict`).

    Attributes:
        mse, mse_ci: the mean reconstruction MSE over the targets and its Student-t interval.
        nn_oracle_mse: the nearest-neighbour oracle's mean MSE (Sec. V-B(d)).
        success: mse < nn_oracle_mse (Table II's criterion).
        success_rate, success_rate_ci: the fraction of targets beating their own oracle MSE and its
            Clopper-Pearson interval.
        kl, nn_oracle_kl: the mean KL metric of the reconstructions and of the oracle's guesses.
        targets: the evaluation targets.
        noise_multiplier: sigma of the released and shadow models' DP-GD (0 without DP).
        shadow_shifted, shadow_train_mse, classifier_accuracy, released_model_accuracy: the run's
            diagnostics (shadow models shifted, the reconstructor's training MSE, the KL
            classifier's accuracy, the released models' test accuracy).
        settings: the run's settings (:class:`~rerokit.experiments.reconn.ReconnConfig` and the data).
        png, jsonl: the files written, or None.
        reference: the paper section.
    """

    mse: float
    mse_ci: tuple[float, float]
    nn_oracle_mse: float
    success: bool
    success_rate: float
    success_rate_ci: tuple[float, float]
    kl: float
    nn_oracle_kl: float
    targets: int
    noise_multiplier: float
    shadow_shifted: int
    shadow_train_mse: float
    classifier_accuracy: float
    released_model_accuracy: float
    settings: Mapping[str, Any]
    png: str | None
    jsonl: str | None
    reference: str

    _PAIRS = ("mse_ci", "success_rate_ci")
    _NUMBERS = ("mse", "nn_oracle_mse", "success_rate", "kl", "nn_oracle_kl", "targets", "noise_multiplier",
                "shadow_shifted", "shadow_train_mse", "classifier_accuracy", "released_model_accuracy")
    _ORDER = ("mse", "mse_ci", "nn_oracle_mse", "success", "success_rate", "success_rate_ci", "kl", "nn_oracle_kl",
              "targets", "noise_multiplier", "shadow_shifted", "shadow_train_mse", "classifier_accuracy",
              "released_model_accuracy", "settings")
    """The keys every result has, in the JSON's order (then png and jsonl where written, then reference)."""

    @classmethod
    def of(cls, summary: Mapping[str, Any], *, png: str | None, jsonl: str | None, reference: str) -> "ReconnOutput":
        """The output of a run from its ``ReconnResult.to_dict()`` and the files written."""
        return cls.from_dict({**summary, "png": png, "jsonl": jsonl, "reference": reference}, "ReconnResult.to_dict()")

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict of the command (less ``rerokit_version``)."""
        d = {k: list(v) if k in self._PAIRS else dict(v) if k == "settings" else v
             for k, v in ((k, getattr(self, k)) for k in self._ORDER)}
        for k in ("png", "jsonl"):
            if getattr(self, k):
                d[k] = getattr(self, k)
        d["reference"] = self.reference
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "attack reconn result") -> "ReconnOutput":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key; unknown keys ignored)."""
        return cls(**json_numbers(d, cls._NUMBERS, where),
                   **{k: json_pair(json_key(d, k, where), k, where) for k in cls._PAIRS},
                   success=json_key(d, "success", where),
                   settings=dict(json_object(json_key(d, "settings", where), f"{where}: settings")),
                   png=d.get("png"), jsonl=d.get("jsonl"), reference=json_key(d, "reference", where))


# --------------------------------------------------------------------------- attack analytic


@dataclass(frozen=True)
class AnalyticAttackOutput:
    """``rerokit attack analytic``: the optimal analytic gradient inversion (Riess et al. 2024, Cor. 1) on
    Opacus DP-SGD, measured on real targets beside the laws it follows (Thm 2, Props. 1-3, 6), as
    :func:`rerokit.experiments.analytic.run_analytic_attack` summarises it (:meth:`of`).

    Attributes:
        settings: the run's settings (the attack's, then the dataset and the results file).
        means: the mean of each metric over the targets (``mse`` and ``ncc`` always; ``psnr`` and
            ``ssim`` where computed), by metric, in :attr:`METRICS` order; NaN (JSON null) where undefined.
        predicted_expected_mse, predicted_expected_mse_optimal: Eq. 17 at these rows; Props. 1-2 at optimal rows.
        ncc_bound: Prop. 6's bound on the NCC.
        empirical_success, empirical_success_ci: the fraction of targets with MSE <= eta and its
            Clopper-Pearson interval.
        predicted_success: Thm 2 at these targets' norms.
        predicted_gamma: Prop. 3's bound over the dataset (r = its smallest norm).
        clipped_fraction: the fraction of targets whose gradient was clipped.
        per_target: per-target values (index, each metric, variance, clip factor), by name.
        ncc_undefined: the constant targets left out of the mean NCC, or None.
    """

    settings: Mapping[str, Any]
    means: Mapping[str, float | None]
    predicted_expected_mse: float
    predicted_expected_mse_optimal: float
    ncc_bound: float
    empirical_success: float
    empirical_success_ci: tuple[float, float]
    predicted_success: float
    predicted_gamma: float
    clipped_fraction: float
    per_target: Mapping[str, Any]
    ncc_undefined: int | None = None

    METRICS = ("mse", "psnr", "ncc", "ssim")
    """The metrics, in the JSON's order (each as ``mean_<metric>``)."""
    _REQUIRED_METRICS = ("mse", "ncc")
    _NUMBERS = ("predicted_expected_mse", "predicted_expected_mse_optimal", "ncc_bound", "empirical_success")
    _NUMBERS_AFTER_CI = ("predicted_success", "predicted_gamma", "clipped_fraction")

    @classmethod
    def of(cls, summary: Mapping[str, Any]) -> "AnalyticAttackOutput":
        """The output of a run from the dict of :func:`~rerokit.experiments.analytic.run_analytic_attack`."""
        return cls.from_dict(summary, "run_analytic_attack()")

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict of the command (less ``rerokit_version``)."""
        d: dict[str, Any] = {"settings": dict(self.settings), **{f"mean_{m}": v for m, v in self.means.items()}}
        d.update({k: getattr(self, k) for k in self._NUMBERS})
        d["empirical_success_ci"] = list(self.empirical_success_ci)
        d.update({k: getattr(self, k) for k in self._NUMBERS_AFTER_CI})
        d["per_target"] = dict(self.per_target)
        if self.ncc_undefined is not None:
            d["ncc_undefined"] = self.ncc_undefined
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "attack analytic result") -> "AnalyticAttackOutput":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key; unknown keys ignored)."""
        for m in cls._REQUIRED_METRICS:
            json_key(d, f"mean_{m}", where)
        return cls(settings=dict(json_object(json_key(d, "settings", where), f"{where}: settings")),
                   means={m: json_number(d[f"mean_{m}"], f"mean_{m}", where) for m in cls.METRICS if f"mean_{m}" in d},
                   **json_numbers(d, cls._NUMBERS + cls._NUMBERS_AFTER_CI, where),
                   empirical_success_ci=json_pair(json_key(d, "empirical_success_ci", where), "empirical_success_ci",
                                                  where),
                   per_target=dict(json_object(json_key(d, "per_target", where), f"{where}: per_target")),
                   ncc_undefined=json_number(d.get("ncc_undefined"), "ncc_undefined", where))
