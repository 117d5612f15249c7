"""Typed results of the bounds from a privacy guarantee (``bound dp|rdp|zcdp|gdp|fano``), of
``bound mse-rdp`` and of ``kappa ...`` (see :mod:`rerokit.report.results`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from rerokit.report.results.json_fields import json_key, json_object, json_numbers, json_number

if TYPE_CHECKING:
    from rerokit.bounds.types import Bound

__all__ = ["ConversionBound", "FanoBound", "KappaResult", "MseRdpBound"]


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
        name = json_key(d, "bound", where)
        keys = cls.INPUTS.get(str(name).split(" ", 1)[0])
        if keys is None:
            raise ValueError(f"{where}: 'bound' must name one of {', '.join(cls.INPUTS)}, got {name!r}")
        return cls(bound=name, inputs=json_numbers(d, keys, where), **json_numbers(d, cls._NUMBERS, where))


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
        keys = next((ks for ks in cls.INPUTS if ks[0] in json_object(d, where)), None)
        if keys is None:
            raise ValueError(f"{where}: missing the information bound (one of "
                             f"{', '.join(repr(ks[0]) for ks in cls.INPUTS)})")
        return cls(bound=json_key(d, "bound", where), inputs=json_numbers(d, keys, where),
                   **json_numbers(d, cls._NUMBERS, where),
                   mutual_information_bound=json_number(d.get("mutual_information_bound"), "mutual_information_bound",
                                                        where))


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
        return cls(command=command, prior=json_key(d, "prior", where),
                   params={k: json_key(d, k, where) for k in cls.PARAMS[command]},
                   **json_numbers(d, ("kappa", "log10_kappa"), where),
                   extras={k: json_key(d, k, where) for k in cls.EXTRAS.get(command, ())})


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
        source = json_key(d, "source", where)
        kind = next((k for k in cls.DETAILS if str(source).startswith(k)), None)
        if kind is None:
            raise ValueError(f"{where}: 'source' must start with one of {', '.join(cls.DETAILS)}, got {source!r}")
        diam = json_key(d, "diameter", where)
        return cls(**json_numbers(d, ("mse_lower_bound", "error", "epsilon_rdp2", "dim"), where), source=source,
                   neighbouring_relation=json_key(d, "neighbouring_relation", where),
                   details={k: json_key(d, k, where) for k in cls.DETAILS[kind]}, note=d.get("note"),
                   diameter=tuple(json_number(x, "diameter", where) for x in diam) if isinstance(diam, (list, tuple))
                   else json_number(diam, "diameter", where),
                   attack=json_key(d, "attack", where), reference=json_key(d, "reference", where))
