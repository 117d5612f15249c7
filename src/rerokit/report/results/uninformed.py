"""Typed result of ``bound uninformed`` (see :mod:`rerokit.report.results`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from rerokit.report.results.json_fields import json_key, json_object, json_numbers

__all__ = ["UninformedOutput"]


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
        kw = {k: json_key(d, k, where) for k in cls._HEAD}
        kw.update({k: json_key(d, k, where) if kw["metric"] == "psnr" else None for k in cls._PSNR})
        kw.update({k: json_key(d, k, where) for k in ("gamma_error", "log10_gamma")})
        kw.update(json_numbers(d, ("mse_threshold", "gamma", "expected_mse", "ncc_bound"), where))
        kw.update({k: json_key(d, k, where) if kw["clip"] is not None else None for k in cls._CLIP})
        kw["expected_mse_data_independent"] = d.get("expected_mse_data_independent")
        steps = "steps" in d or "gamma_over_steps" in d
        kw.update({k: json_key(d, k, where) if steps else None for k in cls._STEPS})
        for k in ("no_prior_attacks", "certified"):
            kw[k] = dict(json_object(json_key(d, k, where), f"{where}: {k}"))
        return cls(**kw, log10_overflow={k: d[f"log10_{k}"] for k in cls.OVERFLOW_KEYS if f"log10_{k}" in d},
                   note=d.get("note"))
