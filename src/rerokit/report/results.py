"""The results of ``rerokit bound dp|rdp|zcdp|gdp|fano``, ``bound tradeoff`` and ``calibrate dpsgd`` as
typed objects, and their JSON.

Each class is the one declaration of what its command prints: the command (:mod:`rerokit.cli`)
builds it and prints :meth:`to_dict`; the command's verdict (:mod:`rerokit.report.verdicts`) reads
the printed JSON back with ``from_dict`` (its inverse), so a key renamed on one side is a
ValueError naming it on the other, not a silent ``None``. Where a library result already carries
the numbers it is reused: :class:`CalibrateOutput` wraps the
:class:`~rerokit.bounds.calibrate.CalibrationResult` of the calibration. Standard library only at
import (the ``bound`` commands start without numpy; the layer contracts let :mod:`rerokit.cli`
import :mod:`rerokit.report`, never the reverse).

JSON numbers: the CLI writes a non-finite float as the string ``"inf"`` / ``"-inf"`` (NaN as
``null``); ``from_dict`` reads such a string back as the float.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from rerokit.bounds.calibrate import CalibrationResult
    from rerokit.bounds.types import Bound

__all__ = ["ConversionBound", "FanoBound", "CalibrateOutput", "TradeoffPoint", "TradeoffTable", "TradeoffOutput"]

_LN10 = math.log(10.0)


def _obj(d: Any, where: str) -> Mapping[str, Any]:
    """``d`` when it is a JSON object, else a TypeError naming ``where``."""
    if not isinstance(d, Mapping):
        raise TypeError(f"{where}: expected a JSON object, got {type(d).__name__}")
    return d


def _key(d: Mapping[str, Any], key: str, where: str) -> Any:
    """``d[key]``, or a ValueError naming the key (a JSON object that is not the command's output)."""
    if key not in _obj(d, where):
        raise ValueError(f"{where}: missing {key!r}")
    return d[key]


def _real(v: Any, key: str = "value", where: str = "result") -> float | int | None:
    """A number as the CLI's JSON holds it (a float, an int, None for NaN, the strings "inf" / "-inf" for
    infinities, read back as floats); a TypeError naming ``key`` for anything else."""
    if isinstance(v, str) and v in ("inf", "-inf"):
        return float(v)
    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
        raise TypeError(f"{where}: {key!r} must be a number, got {v!r}")
    return v


def _pair(v: Any, key: str, where: str) -> tuple[float, float]:
    """A bracket ``[lower, upper]`` as a tuple (ValueError naming ``key`` for anything else)."""
    if not isinstance(v, (list, tuple)) or len(v) != 2:
        raise ValueError(f"{where}: {key!r} must be a pair [lower, upper], got {v!r}")
    return (_real(v[0], key, where), _real(v[1], key, where))


def _read(d: Mapping[str, Any], keys: tuple[str, ...], where: str) -> dict[str, Any]:
    """``{k: d[k]}`` for every key, each a number (:func:`_real`); a ValueError naming the first missing one."""
    return {k: _real(_key(d, k, where), k, where) for k in keys}


# --------------------------------------------------------------------------- bound dp | rdp | zcdp | gdp | fano


@dataclass(frozen=True)
class ConversionBound:
    """``rerokit bound dp|rdp|zcdp|gdp``: the ReRo bound gamma of a privacy guarantee at a prior's
    baseline kappa (Balle et al. 2022, Cor. 3, Thm 2, Cor. 4; Kaissis et al. 2023 for mu-GDP).

    Attributes:
        bound: which conversion (its name and reference).
        inputs: the guarantee's parameters as given (the keys :attr:`INPUTS` names for ``bound``).
        kappa, log10_kappa: the baseline and its log10 (exact where kappa underflows).
        gamma, log10_gamma: the bound and its log10.
        advantage: (gamma - kappa) / (1 - kappa).
    """

    bound: str
    inputs: Mapping[str, float]
    kappa: float
    log10_kappa: float
    gamma: float
    log10_gamma: float
    advantage: float

    INPUTS = {"dp": ("epsilon",), "rdp": ("alpha", "epsilon"), "zcdp": ("rho",), "gdp": ("mu",)}
    """Each conversion's parameters in the JSON's order, by the first word of ``bound`` (the sub-command)."""
    _NUMBERS = ("kappa", "log10_kappa", "gamma", "log10_gamma", "advantage")
    mutual_information_bound = None  # the attributes FanoBound has besides (one verdict reads both)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict of the command (less ``rerokit_version``)."""
        return {"bound": self.bound, **self.inputs, **{k: getattr(self, k) for k in self._NUMBERS}}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "bound result") -> "ConversionBound":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key; unknown keys ignored)."""
        name = _key(d, "bound", where)
        keys = cls.INPUTS.get(str(name).split(" ", 1)[0])
        if keys is None:
            raise ValueError(f"{where}: 'bound' must name one of {', '.join(cls.INPUTS)}, got {name!r}")
        return cls(bound=name, inputs=_read(d, keys, where), **_read(d, cls._NUMBERS, where))


@dataclass(frozen=True)
class FanoBound:
    """``rerokit bound fano``: Guo et al. 2022b's Fano bound on the advantage of any attack against a
    uniform prior (Hayes et al. 2023, App. H), from :mod:`rerokit.bounds.fano`'s
    :class:`~rerokit.bounds.types.Bound` (:meth:`of`).

    Attributes:
        bound: the bound's name and reference.
        inputs: the Bound's inputs in its order (one of :attr:`INPUTS`).
        advantage: the certified upper end of the advantage (the Bound's value).
        gamma: the corresponding bound on the success probability.
        kappa: 1 / prior_size.
        error: the numerical width of the advantage.
        mutual_information_bound: the Gaussian mechanism's mutual-information bound (nats), where used.
    """

    bound: str
    inputs: Mapping[str, Any]
    advantage: float
    gamma: float
    kappa: float
    error: float
    mutual_information_bound: float | None = None

    INPUTS = (("noise_multiplier", "prior_size", "sensitivity"), ("mutual_information", "prior_size"),
              ("epsilon", "prior_size"))
    """The Bound's inputs of each way of giving the information bound (the Gaussian mechanism's noise, the
    mutual information, a replace-one RDP epsilon), in its order."""
    _NUMBERS = ("advantage", "gamma", "kappa", "error")
    log10_kappa = None  # Fano's prior is uniform: kappa never underflows
    log10_gamma = None

    @classmethod
    def of(cls, name: str, b: "Bound") -> "FanoBound":
        """The result of :mod:`rerokit.bounds.fano`'s Bound ``b`` (value: the advantage; extras: gamma,
        kappa and, for the Gaussian mechanism, mutual_information_bound)."""
        return cls(bound=name, inputs=dict(b.inputs), advantage=b.value, gamma=b.extras["gamma"],
                   kappa=b.extras["kappa"], error=b.error,
                   mutual_information_bound=b.extras.get("mutual_information_bound"))

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict of the command (less ``rerokit_version``)."""
        d = {"bound": self.bound, **self.inputs, **{k: getattr(self, k) for k in self._NUMBERS}}
        if self.mutual_information_bound is not None:
            d["mutual_information_bound"] = self.mutual_information_bound
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "bound fano result") -> "FanoBound":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key; unknown keys ignored)."""
        keys = next((ks for ks in cls.INPUTS if ks[0] in _obj(d, where)), None)
        if keys is None:
            raise ValueError(f"{where}: missing the information bound (one of "
                             f"{', '.join(repr(ks[0]) for ks in cls.INPUTS)})")
        return cls(bound=_key(d, "bound", where), inputs=_read(d, keys, where), **_read(d, cls._NUMBERS, where),
                   mutual_information_bound=_real(d.get("mutual_information_bound"), "mutual_information_bound", where))


# --------------------------------------------------------------------------- calibrate dpsgd


@dataclass(frozen=True)
class CalibrateOutput:
    """``rerokit calibrate dpsgd``: the calibrated DP-SGD setting and its certified bound.

    Attributes:
        calibration: the calibration (:func:`rerokit.bounds.calibrate.calibrate_noise_multiplier` or
            :func:`~rerokit.bounds.calibrate.calibrate_steps`).
        solved: what was solved for, ``"noise_multiplier"`` or ``"steps"``.
        note: remarks (steps capped at --max-steps; why epsilon is inf), or None.
        prior_option: the prior option as given (``{"prior_size": N}``, ``{"log10_kappa": L}`` or ``{}``).
        sampling: the run's sampler, its source, the unit of privacy and the neighbouring relation
            (:meth:`rerokit.bounds.schedule.Schedule.sampling_dict`).
        poisson_assumption: for a non-Poisson sampler, what a Poisson calibration would give (kind
            "assumption"), else None.
    """

    calibration: "CalibrationResult"
    solved: str
    note: str | None
    prior_option: Mapping[str, Any]
    sampling: Mapping[str, Any]
    poisson_assumption: Mapping[str, Any] | None = None

    SOLVED = ("noise_multiplier", "steps")
    """What a calibration solves for (the first key of the JSON)."""
    PRIOR_KEYS = ("prior_size", "log10_kappa")
    """The prior options echoed in ``settings``."""

    @property
    def log10_kappa(self) -> float:
        return self.calibration.log_kappa / _LN10

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict of the command (less ``rerokit_version``)."""
        c = self.calibration
        d: dict[str, Any] = {self.solved: getattr(c, self.solved)}
        if self.note is not None:
            d["note"] = self.note
        d.update(target_gamma=c.target_gamma, gamma=c.gamma, error=c.gamma_error, kappa=c.kappa,
                 log10_kappa=self.log10_kappa, epsilon=c.epsilon, delta=c.delta,
                 settings={"noise_multiplier": c.noise_multiplier, "sample_rate": c.sample_rate, "steps": c.steps,
                           **self.prior_option, **self.sampling},
                 search={"bracket": list(c.bracket), "evaluations": c.evaluations})
        if self.poisson_assumption is not None:
            d["poisson_assumption"] = dict(self.poisson_assumption)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "calibrate result") -> "CalibrateOutput":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key; unknown keys ignored).

        ``calibration.log_kappa`` is read from ``log10_kappa`` (equal up to the rounding of the
        conversion); ``calibration.capped`` is what the JSON says of it: steps solved for with a
        final bracket of one point ``(max_steps, max_steps)``.
        """
        from rerokit.bounds.calibrate import CalibrationResult

        solved = next((k for k in cls.SOLVED if k in _obj(d, where)), None)
        if solved is None:
            raise ValueError(f"{where}: missing 'noise_multiplier' or 'steps'")
        s = _obj(_key(d, "settings", where), f"{where}: settings")
        search = _obj(_key(d, "search", where), f"{where}: search")
        bracket = _pair(_key(search, "bracket", f"{where}: search"), "bracket", f"{where}: search")
        n = _read(d, ("target_gamma", "gamma", "error", "kappa", "log10_kappa", "epsilon", "delta"), where)
        run = _read(s, ("noise_multiplier", "sample_rate", "steps", "examples_per_user"), f"{where}: settings")
        c = CalibrationResult(
            noise_multiplier=run["noise_multiplier"], sample_rate=run["sample_rate"], steps=run["steps"],
            kappa=n["kappa"], log_kappa=n["log10_kappa"] * _LN10, target_gamma=n["target_gamma"], gamma=n["gamma"],
            gamma_error=n["error"], epsilon=n["epsilon"], delta=n["delta"], bracket=bracket,
            evaluations=_key(search, "evaluations", f"{where}: search"),
            capped=solved == "steps" and bracket[0] == bracket[1], sampler=_key(s, "sampler", f"{where}: settings"),
            examples_per_user=run["examples_per_user"])
        pa = d.get("poisson_assumption")
        return cls(calibration=c, solved=solved, note=d.get("note"),
                   prior_option={k: s[k] for k in cls.PRIOR_KEYS if k in s},
                   sampling={k: v for k, v in s.items() if k not in (*cls.SOLVED, "sample_rate", *cls.PRIOR_KEYS)},
                   poisson_assumption=None if pa is None else dict(_obj(pa, f"{where}: poisson_assumption")))


# --------------------------------------------------------------------------- bound tradeoff


@dataclass(frozen=True)
class TradeoffPoint:
    """One ``--fpr`` of ``bound tradeoff``: the certified brackets of beta (miss rate) and of the TPR
    at false-positive rate ``fpr``, and the TPR bracket's width ``error``."""

    fpr: float
    beta: tuple[float, float]
    tpr: tuple[float, float]
    error: float

    def to_dict(self) -> dict[str, Any]:
        return {"fpr": self.fpr, "beta": list(self.beta), "tpr": list(self.tpr), "error": self.error}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "point") -> "TradeoffPoint":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key)."""
        return cls(**_read(d, ("fpr", "error"), where), beta=_pair(_key(d, "beta", where), "beta", where),
                   tpr=_pair(_key(d, "tpr", where), "tpr", where))


@dataclass(frozen=True)
class TradeoffTable:
    """``--grid`` of ``bound tradeoff``: alpha and the lower/upper ends of beta and of the TPR at each point."""

    alpha: tuple[float, ...]
    beta_lower: tuple[float, ...]
    beta_upper: tuple[float, ...]
    tpr_lower: tuple[float, ...]
    tpr_upper: tuple[float, ...]

    _KEYS = ("alpha", "beta_lower", "beta_upper", "tpr_lower", "tpr_upper")

    def to_dict(self) -> dict[str, Any]:
        return {k: list(getattr(self, k)) for k in self._KEYS}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "curve") -> "TradeoffTable":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key)."""
        return cls(**{k: tuple(_real(x, k, where) for x in _key(d, k, where)) for k in cls._KEYS})


@dataclass(frozen=True)
class TradeoffOutput:
    """``rerokit bound tradeoff``: the certified trade-off curve of a DP-SGD run (Hayes et al. 2023,
    Thm 2 pair) and the membership risks read off it (Kulynych et al. 2025).

    Attributes:
        noise_multiplier, sample_rate, steps: the run (``settings`` in the JSON, as are the next two).
        adjacency: ``"remove"`` or ``"add_remove"``.
        sampling: the run's sampler, its source, the unit of privacy and the neighbouring relation
            (:meth:`rerokit.bounds.schedule.Schedule.sampling_dict`).
        method: exact, closed-form or envelope.
        value_discretization_interval: the PLD's grid step (None for closed forms).
        points: with ``--fpr``, one :class:`TradeoffPoint` per rate; else None.
        curve: with ``--grid``, the :class:`TradeoffTable`; else None.
        max_error: the largest TPR bracket width.
        advantage, advantage_interval: the advantage TPR - FPR (certified upper end, bracket).
        bayes_accuracy, bayes_accuracy_interval: the Bayes accuracy at ``prior_membership``.
        prior_membership: the prior probability of membership.
        poisson_assumption: for a non-Poisson sampler, the Poisson curve's advantage (kind
            "assumption"), else None.
    """

    noise_multiplier: float
    sample_rate: float
    steps: int
    adjacency: str
    sampling: Mapping[str, Any]
    method: str
    value_discretization_interval: float | None
    points: tuple[TradeoffPoint, ...] | None
    curve: TradeoffTable | None
    max_error: float
    advantage: float
    advantage_interval: tuple[float, float]
    bayes_accuracy: float
    bayes_accuracy_interval: tuple[float, float]
    prior_membership: float
    poisson_assumption: Mapping[str, Any] | None = None

    RUN_KEYS = ("noise_multiplier", "sample_rate", "steps")
    """The run's keys in ``settings`` (then ``adjacency`` and the sampler's)."""

    @property
    def settings(self) -> dict[str, Any]:
        """The JSON's ``settings``: the run, the adjacency, the sampling."""
        return {**{k: getattr(self, k) for k in self.RUN_KEYS}, "adjacency": self.adjacency, **self.sampling}

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict of the command (less ``rerokit_version``)."""
        d: dict[str, Any] = {"settings": self.settings, "method": self.method,
                             "value_discretization_interval": self.value_discretization_interval}
        if self.points is not None:
            d["points"] = [p.to_dict() for p in self.points]
        if self.curve is not None:
            d["curve"] = self.curve.to_dict()
        d.update(max_error=self.max_error, advantage=self.advantage, advantage_interval=list(self.advantage_interval),
                 bayes_accuracy=self.bayes_accuracy, bayes_accuracy_interval=list(self.bayes_accuracy_interval),
                 prior_membership=self.prior_membership)
        if self.poisson_assumption is not None:
            d["poisson_assumption"] = dict(self.poisson_assumption)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "bound tradeoff result") -> "TradeoffOutput":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key; unknown keys ignored)."""
        s = _obj(_key(d, "settings", where), f"{where}: settings")
        _key(s, "sampler", f"{where}: settings")  # read by the sampling notes (rerokit.cli._common.sampling_summary)
        if ("points" in d) == ("curve" in d):
            raise ValueError(f"{where}: expected one of 'points' (--fpr) or 'curve' (--grid)")
        pts = d.get("points")
        if pts is not None and not isinstance(pts, (list, tuple)):
            raise TypeError(f"{where}: 'points' must be a list, got {type(pts).__name__}")
        pa = d.get("poisson_assumption")
        return cls(
            **_read(s, cls.RUN_KEYS, f"{where}: settings"), adjacency=_key(s, "adjacency", f"{where}: settings"),
            sampling={k: v for k, v in s.items() if k not in (*cls.RUN_KEYS, "adjacency")},
            method=_key(d, "method", where),
            value_discretization_interval=_key(d, "value_discretization_interval", where),
            points=None if pts is None else tuple(TradeoffPoint.from_dict(p, f"{where}: points[{i}]")
                                                  for i, p in enumerate(pts)),
            curve=None if "curve" not in d else TradeoffTable.from_dict(d["curve"], f"{where}: curve"),
            **_read(d, ("max_error", "advantage", "bayes_accuracy", "prior_membership"), where),
            advantage_interval=_pair(_key(d, "advantage_interval", where), "advantage_interval", where),
            bayes_accuracy_interval=_pair(_key(d, "bayes_accuracy_interval", where), "bayes_accuracy_interval", where),
            poisson_assumption=None if pa is None else dict(_obj(pa, f"{where}: poisson_assumption")))


# --------------------------------------------------------------------------- kappa


@dataclass(frozen=True)
class KappaResult:
    """``rerokit kappa discrete|ball|gaussian|samples|pixels``: the baseline success kappa of a prior
    (Balle et al. 2022, Props. 6-7; Hayes et al. 2023, Apps. I-J).

    Attributes:
        command: the sub-command (a key of :attr:`PARAMS`; not in the JSON).
        prior: the prior, in words, with its reference.
        params: the prior's parameters (the keys :attr:`PARAMS` names for ``command``, in order).
        kappa, log10_kappa: the baseline and its log10 (exact where kappa underflows).
        extras: what the prior computes besides (the keys :attr:`EXTRAS` names for ``command``).
    """

    command: str
    prior: str
    params: Mapping[str, Any]
    kappa: float
    log10_kappa: float
    extras: Mapping[str, Any]

    PARAMS = {"discrete": ("prior_size",), "ball": ("dim", "eta"), "gaussian": ("dim", "sigma", "eta"),
              "samples": ("n_samples", "eta", "metric", "confidence", "method"),
              "pixels": ("dim", "delta", "rho", "levels", "strict")}
    """Each sub-command's parameters, in the JSON's order."""
    EXTRAS = {"samples": ("kappa_hat", "kappa_hat_plugin", "direction"),
              "pixels": ("per_coordinate_p", "required_coordinates")}
    """Each sub-command's further keys, after kappa."""

    def __post_init__(self) -> None:
        if self.command not in self.PARAMS:
            raise ValueError(f"command must be one of {', '.join(self.PARAMS)}, got {self.command!r}")
        for what, got, want in (("params", self.params, self.PARAMS), ("extras", self.extras, self.EXTRAS)):
            if tuple(got) != want.get(self.command, ()):
                raise ValueError(f"kappa {self.command}: {what} must have the keys {want.get(self.command, ())}, "
                                 f"got {tuple(got)}")

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict of the command (less ``rerokit_version``)."""
        return {"prior": self.prior, **self.params, "kappa": self.kappa, "log10_kappa": self.log10_kappa,
                **self.extras}

    @classmethod
    def from_dict(cls, command: str, d: Mapping[str, Any], where: str = "kappa result") -> "KappaResult":
        """The inverse of :meth:`to_dict` for ``command`` (ValueError naming a missing key)."""
        if command not in cls.PARAMS:
            raise ValueError(f"command must be one of {', '.join(cls.PARAMS)}, got {command!r}")
        return cls(command=command, prior=_key(d, "prior", where),
                   params={k: _key(d, k, where) for k in cls.PARAMS[command]},
                   **_read(d, ("kappa", "log10_kappa"), where),
                   extras={k: _key(d, k, where) for k in cls.EXTRAS.get(command, ())})


# --------------------------------------------------------------------------- bound mse-rdp


@dataclass(frozen=True)
class MseRdpBound:
    """``rerokit bound mse-rdp``: Guo et al. 2022's Thm 1 lower bound on the MSE of an unbiased attacker
    from an order-2 RDP guarantee (:func:`rerokit.bounds.mse.rdp_mse_lower_bound`).

    Attributes:
        mse_lower_bound: the bound (per coordinate); inf where epsilon_rdp2 is 0.
        error: its numerical margin.
        epsilon_rdp2: the order-2 RDP epsilon used.
        source: where it came from (its first words are a key of :attr:`DETAILS`).
        neighbouring_relation: the relation the guarantee holds under (Thm 1 needs replace-one).
        details: the source's inputs (the keys :attr:`DETAILS` names for it, in order).
        note: why the bound is inf, or None.
        dim: the data dimension d.
        diameter: the diameter per coordinate (a number, or one per coordinate).
        attack: the attacker bounded ("unbiased").
        reference: the theorem.
    """

    mse_lower_bound: float
    error: float
    epsilon_rdp2: float
    source: str
    neighbouring_relation: str
    details: Mapping[str, Any]
    note: str | None
    dim: int
    diameter: float | tuple[float, ...]
    attack: str
    reference: str

    DETAILS = {"epsilon": (), "rdp curve": ("order_used",),
               "output perturbation": ("n", "lam", "noise_std", "lipschitz", "adjacency", "gdp_mu"),
               "DP-SGD": ("noise_multiplier", "sample_rate", "steps", "sampler", "examples_per_user", "order_used")}
    """Each source's inputs, by the start of ``source``, in the JSON's order."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict of the command (less ``rerokit_version``)."""
        d = {"mse_lower_bound": self.mse_lower_bound, "error": self.error, "epsilon_rdp2": self.epsilon_rdp2,
             "source": self.source, "neighbouring_relation": self.neighbouring_relation, **self.details}
        if self.note is not None:
            d["note"] = self.note
        d.update(dim=self.dim, diameter=list(self.diameter) if isinstance(self.diameter, tuple) else self.diameter,
                 attack=self.attack, reference=self.reference)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "bound mse-rdp result") -> "MseRdpBound":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key; unknown keys ignored)."""
        source = _key(d, "source", where)
        kind = next((k for k in cls.DETAILS if str(source).startswith(k)), None)
        if kind is None:
            raise ValueError(f"{where}: 'source' must start with one of {', '.join(cls.DETAILS)}, got {source!r}")
        diam = _key(d, "diameter", where)
        return cls(**_read(d, ("mse_lower_bound", "error", "epsilon_rdp2", "dim"), where), source=source,
                   neighbouring_relation=_key(d, "neighbouring_relation", where),
                   details={k: _key(d, k, where) for k in cls.DETAILS[kind]}, note=d.get("note"),
                   diameter=tuple(_real(x, "diameter", where) for x in diam) if isinstance(diam, (list, tuple))
                   else _real(diam, "diameter", where),
                   attack=_key(d, "attack", where), reference=_key(d, "reference", where))


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
        kw = {k: _key(d, k, where) for k in cls._KEYS}
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

        n = _read(d, ("mse", "ci_low", "ci_high", "confidence", "mse_median", "mse_max", "targets", "non_identifiable"),
                  where)
        settings = GlmSettings.from_dict(_obj(_key(d, "settings", where), f"{where}: settings"), f"{where}: settings")
        _key(d, "trials", where)
        result = AttackResult("mse", n["mse"], (n["ci_low"], n["ci_high"]), n["targets"] - n["non_identifiable"],
                              _key(d, "seed", where), settings.to_dict(), n["confidence"])
        return cls(result=result, **{k: n[k] for k in ("mse_median", "mse_max", "targets", "non_identifiable")},
                   exact=_key(d, "exact", where), reference=_key(d, "reference", where),
                   label_accuracy=_real(d.get("label_accuracy"), "label_accuracy", where))


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
        return cls(**_read(d, cls._NUMBERS, where), **{k: _pair(_key(d, k, where), k, where) for k in cls._PAIRS},
                   success=_key(d, "success", where),
                   settings=dict(_obj(_key(d, "settings", where), f"{where}: settings")),
                   png=d.get("png"), jsonl=d.get("jsonl"), reference=_key(d, "reference", where))


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
            _key(d, f"mean_{m}", where)
        return cls(settings=dict(_obj(_key(d, "settings", where), f"{where}: settings")),
                   means={m: _real(d[f"mean_{m}"], f"mean_{m}", where) for m in cls.METRICS if f"mean_{m}" in d},
                   **_read(d, cls._NUMBERS + cls._NUMBERS_AFTER_CI, where),
                   empirical_success_ci=_pair(_key(d, "empirical_success_ci", where), "empirical_success_ci", where),
                   per_target=dict(_obj(_key(d, "per_target", where), f"{where}: per_target")),
                   ncc_undefined=_real(d.get("ncc_undefined"), "ncc_undefined", where))


# --------------------------------------------------------------------------- bound uninformed


@dataclass(frozen=True)
class UninformedOutput:
    """``rerokit bound uninformed``: the laws of the optimal unbiased analytic gradient inversion without
    a prior (Riess et al. 2024, Props. 2-7; kind "attack law", not bounds on every attacker), the
    prior-free attacks beside them and the certified bound for a data prior.

    Attributes:
        bound, kind, attack: what this is (its reference, "attack law", the attack).
        noise_multiplier, dim, min_norm, min_norm_source, clip, releases: the inputs (clip None when not given).
        metric: ``"mse"`` or ``"psnr"``; ``psnr_threshold_db`` and ``data_range`` with ``"psnr"``, else None.
        mse_threshold: eta (inf where a PSNR threshold makes it overflow).
        gamma, gamma_error, log10_gamma: P(MSE <= eta) of the attack, its margin and log10 (None where not computed).
        expected_mse, ncc_bound: Prop. 2's expected MSE and Prop. 6's NCC bound.
        optimal_rows, expected_mse_one_row, gamma_data_independent: with a clip (None without; the
            last also None where C > r).
        expected_mse_data_independent: with a clip C <= r, else None.
        steps, sample_rate, gamma_over_steps: with --steps and --sample-rate (Sec. 4.3, Prop. 7), else None.
        no_prior_attacks: the prior-free attacks (:meth:`rerokit.bounds.uninformed_scope.NoPriorAttacks.to_dict`,
            with the data's fixed guesses where a dataset was given).
        certified: the certified bound for a target drawn from the data prior (or why there is none).
        log10_overflow: the exact log10 of each expected MSE shown as the largest double (by key).
        note: remarks (an overflow, an infinite eta), or None.
    """

    bound: str
    kind: str
    attack: str
    noise_multiplier: float
    dim: int
    min_norm: float
    min_norm_source: str
    clip: float | None
    releases: int
    metric: str
    psnr_threshold_db: float | None
    data_range: float | None
    mse_threshold: float
    gamma: float
    gamma_error: float
    log10_gamma: float | None
    expected_mse: float
    ncc_bound: float
    optimal_rows: int | None
    expected_mse_one_row: float | None
    gamma_data_independent: float | None
    expected_mse_data_independent: float | None
    steps: int | None
    sample_rate: float | None
    gamma_over_steps: float | None
    no_prior_attacks: Mapping[str, Any]
    certified: Mapping[str, Any]
    log10_overflow: Mapping[str, float]
    note: str | None

    _HEAD = ("bound", "kind", "attack", "noise_multiplier", "dim", "min_norm", "min_norm_source", "clip", "releases",
             "metric")
    _PSNR = ("psnr_threshold_db", "data_range")
    _LAW = ("mse_threshold", "gamma", "gamma_error", "log10_gamma", "expected_mse", "ncc_bound")
    _CLIP = ("optimal_rows", "expected_mse_one_row", "gamma_data_independent")
    _STEPS = ("steps", "sample_rate", "gamma_over_steps")
    OVERFLOW_KEYS = ("expected_mse", "expected_mse_one_row", "expected_mse_data_independent")
    """The expected MSEs that may exceed the largest double (then ``log10_<key>`` holds their log10)."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict of the command (less ``rerokit_version``)."""
        g = lambda keys: {k: getattr(self, k) for k in keys}  # noqa: E731 - the fields of a group of keys
        d = g(self._HEAD)
        if self.metric == "psnr":
            d.update(g(self._PSNR))
        d.update(g(self._LAW))
        if self.clip is not None:
            d.update(g(self._CLIP))
            if self.expected_mse_data_independent is not None:
                d["expected_mse_data_independent"] = self.expected_mse_data_independent
        if self.steps is not None:
            d.update(steps=self.steps, sample_rate=self.sample_rate,
                     sampling_rate=self.sample_rate,  # the JSON key before 0.2, kept for one release
                     gamma_over_steps=self.gamma_over_steps)
        d.update(no_prior_attacks=dict(self.no_prior_attacks), certified=dict(self.certified))
        d.update({f"log10_{k}": v for k, v in self.log10_overflow.items()})
        if self.note is not None:
            d["note"] = self.note
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "bound uninformed result") -> "UninformedOutput":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key; unknown keys ignored)."""
        kw = {k: _key(d, k, where) for k in cls._HEAD}
        kw.update({k: _key(d, k, where) if kw["metric"] == "psnr" else None for k in cls._PSNR})
        kw.update({k: _key(d, k, where) for k in ("gamma_error", "log10_gamma")})
        kw.update(_read(d, ("mse_threshold", "gamma", "expected_mse", "ncc_bound"), where))
        kw.update({k: _key(d, k, where) if kw["clip"] is not None else None for k in cls._CLIP})
        kw["expected_mse_data_independent"] = d.get("expected_mse_data_independent")
        steps = "steps" in d or "gamma_over_steps" in d
        kw.update({k: _key(d, k, where) if steps else None for k in cls._STEPS})
        for k in ("no_prior_attacks", "certified"):
            kw[k] = dict(_obj(_key(d, k, where), f"{where}: {k}"))
        return cls(**kw, log10_overflow={k: d[f"log10_{k}"] for k in cls.OVERFLOW_KEYS if f"log10_{k}" in d},
                   note=d.get("note"))


# --------------------------------------------------------------------------- bound dpsgd


@dataclass(frozen=True)
class DpsgdComparisons:
    """``comparisons`` of ``bound dpsgd``: the RDP bound of Balle et al. 2022 (Thm 2) for the same schedule
    and the run's (epsilon, delta); all None under the envelope (sigma outside the accounted range)."""

    rdp_gamma: float | None
    rdp_order: float | None
    epsilon: float | None
    delta: float | None
    note: str | None = None

    _KEYS = ("rdp_gamma", "rdp_order", "epsilon", "delta")

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self._KEYS}
        if self.note is not None:
            d["note"] = self.note
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "comparisons") -> "DpsgdComparisons":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key)."""
        return cls(**_read(d, cls._KEYS, where), note=d.get("note"))


@dataclass(frozen=True)
class DpsgdOutput:
    """``rerokit bound dpsgd`` with a prior: the ReRo bound gamma of DP-SGD (Hayes et al. 2023, Thm 2), the
    run's comparisons and the membership risks read off the same composed PLD (Kulynych et al. 2025).

    Attributes:
        gamma, kappa, advantage: the bound, the prior's baseline, (gamma - kappa) / (1 - kappa).
        method, direction, error, interval: the bound's method (a key of :attr:`DETAILS`), direction,
            numerical error (or the estimate's half-width) and bracket (None where it has none).
        log10_gamma, log10_kappa: exact also where gamma or kappa underflow.
        noise_multiplier, sample_rate, steps: the run (``settings`` in the JSON, as are the next two).
        prior_option: the prior option as given (``{"prior_size": N}``, ``{"log10_kappa": L}`` or ``{}``).
        sampling: the sampler, its source, the unit of privacy and the neighbouring relation
            (:meth:`rerokit.bounds.schedule.Schedule.sampling_dict`).
        certification: how the run is certified (the keys :attr:`CERTIFICATION`).
        details: the method's details (the keys :attr:`DETAILS` names for it; exact: a note where floored).
        comparisons: the :class:`DpsgdComparisons`.
        membership: the membership risks (:class:`rerokit.report.model.MembershipFacts`' keys and the method).
        poisson_assumption: for a non-Poisson sampler, the Poisson accountant's numbers (kind
            "assumption"), else None.
    """

    gamma: float
    kappa: float
    advantage: float
    method: str
    direction: str
    error: float
    interval: tuple[float, float] | None
    log10_gamma: float
    log10_kappa: float
    noise_multiplier: float
    sample_rate: float
    steps: int
    prior_option: Mapping[str, Any]
    sampling: Mapping[str, Any]
    certification: Mapping[str, Any]
    details: Mapping[str, Any]
    comparisons: DpsgdComparisons
    membership: Mapping[str, Any]
    poisson_assumption: Mapping[str, Any] | None = None

    CERTIFICATION = ("amplified", "releases", "group_size")
    """The keys of ``certification`` (attributes of :class:`rerokit.bounds.schedule.Certification`)."""
    DETAILS = {"exact": ("lower", "value_discretization_interval", "threshold_epsilon", "floored"),
               "mc": ("seed", "mc_samples", "standard_error"), "closed-form": ("mu_gdp",),
               "envelope": ("lower", "note")}
    """Each method's details, in the JSON's order (exact: then ``note`` where the floor dominates)."""
    RUN_KEYS = ("noise_multiplier", "sample_rate", "steps")
    PRIOR_KEYS = ("prior_size", "log10_kappa")
    _HEAD = ("gamma", "kappa", "advantage", "method", "direction", "error")

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict of the command (less ``rerokit_version``)."""
        d: dict[str, Any] = {k: getattr(self, k) for k in self._HEAD}
        if self.interval is not None:
            d["interval"] = list(self.interval)
        d.update(log10_gamma=self.log10_gamma, log10_kappa=self.log10_kappa,
                 settings={**{k: getattr(self, k) for k in self.RUN_KEYS}, **self.prior_option, **self.sampling},
                 certification=dict(self.certification), details=dict(self.details),
                 comparisons=self.comparisons.to_dict(), membership=dict(self.membership))
        if self.poisson_assumption is not None:
            d["poisson_assumption"] = dict(self.poisson_assumption)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "bound dpsgd result") -> "DpsgdOutput":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key; unknown keys ignored)."""
        method = _key(d, "method", where)
        if method not in cls.DETAILS:
            raise ValueError(f"{where}: 'method' must be one of {', '.join(cls.DETAILS)}, got {method!r}")
        s = _obj(_key(d, "settings", where), f"{where}: settings")
        det = _obj(_key(d, "details", where), f"{where}: details")
        cert = _obj(_key(d, "certification", where), f"{where}: certification")
        pa = d.get("poisson_assumption")
        return cls(
            **_read(d, ("gamma", "kappa", "advantage", "error", "log10_gamma", "log10_kappa"), where),
            method=method, direction=_key(d, "direction", where),
            interval=None if d.get("interval") is None else _pair(d["interval"], "interval", where),
            **_read(s, cls.RUN_KEYS, f"{where}: settings"),
            prior_option={k: s[k] for k in cls.PRIOR_KEYS if k in s},
            sampling={k: v for k, v in s.items() if k not in (*cls.RUN_KEYS, *cls.PRIOR_KEYS)},
            certification={k: _key(cert, k, f"{where}: certification") for k in cls.CERTIFICATION},
            details={**{k: _key(det, k, f"{where}: details") for k in cls.DETAILS[method]},
                     **({"note": det["note"]} if method == "exact" and "note" in det else {})},
            comparisons=DpsgdComparisons.from_dict(_obj(_key(d, "comparisons", where), f"{where}: comparisons"),
                                                   f"{where}: comparisons"),
            membership=dict(_obj(_key(d, "membership", where), f"{where}: membership")),
            poisson_assumption=None if pa is None else dict(_obj(pa, f"{where}: poisson_assumption")))


@dataclass(frozen=True)
class DpsgdNoPriorOutput:
    """``rerokit bound dpsgd`` without a prior: the run's (epsilon, delta) and membership risks (gamma
    needs a prior's kappa).

    Attributes:
        epsilon, delta: the certified epsilon at delta (inf where none is; ``epsilon_note`` says why).
        membership: the membership risks (as in :class:`DpsgdOutput`).
        note: why there is no gamma.
        noise_multiplier, sample_rate, steps, sampling: the run (``settings`` in the JSON).
        certification: how the run is certified (:attr:`DpsgdOutput.CERTIFICATION`).
        poisson_assumption: as in :class:`DpsgdOutput`.
        epsilon_note: why epsilon is inf, or None.
    """

    epsilon: float | None
    delta: float
    membership: Mapping[str, Any]
    note: str
    noise_multiplier: float
    sample_rate: float
    steps: int
    sampling: Mapping[str, Any]
    certification: Mapping[str, Any]
    poisson_assumption: Mapping[str, Any] | None = None
    epsilon_note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict of the command (less ``rerokit_version``)."""
        d: dict[str, Any] = {"epsilon": self.epsilon, "delta": self.delta, "membership": dict(self.membership),
                             "note": self.note,
                             "settings": {**{k: getattr(self, k) for k in DpsgdOutput.RUN_KEYS}, **self.sampling},
                             "certification": dict(self.certification)}
        if self.poisson_assumption is not None:
            d["poisson_assumption"] = dict(self.poisson_assumption)
        if self.epsilon_note is not None:
            d["epsilon_note"] = self.epsilon_note
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "bound dpsgd result") -> "DpsgdNoPriorOutput":
        """The inverse of :meth:`to_dict` (ValueError naming a missing key; unknown keys ignored)."""
        s = _obj(_key(d, "settings", where), f"{where}: settings")
        cert = _obj(_key(d, "certification", where), f"{where}: certification")
        pa = d.get("poisson_assumption")
        return cls(**_read(d, ("epsilon", "delta"), where),
                   membership=dict(_obj(_key(d, "membership", where), f"{where}: membership")),
                   note=_key(d, "note", where), **_read(s, DpsgdOutput.RUN_KEYS, f"{where}: settings"),
                   sampling={k: v for k, v in s.items() if k not in DpsgdOutput.RUN_KEYS},
                   certification={k: _key(cert, k, f"{where}: certification") for k in DpsgdOutput.CERTIFICATION},
                   poisson_assumption=None if pa is None else dict(_obj(pa, f"{where}: poisson_assumption")),
                   epsilon_note=d.get("epsilon_note"))
