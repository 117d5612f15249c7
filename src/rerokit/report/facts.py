"""The privacy-facts header of a report: what the numbers below it are about.

Every certified number is a statement about one mechanism. The header says which one, before
any number: the unit of privacy (one example, or a user's k examples), the neighbouring relation
(add/remove under Poisson sampling; zero-out for shuffled or full batches, see
:mod:`rerokit.bounds.schedule`), the sampler and whether rerokit saw it or assumed it, what is
released (every intermediate model and noisy gradient: the bounds hold for the whole transcript,
not only the final model), the accountant and its numerics, and delta.
"""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping

from rerokit.bounds.schedule import Schedule

__all__ = ["PrivacyFacts", "privacy_facts", "facts_line", "facts_html"]

_SAMPLER_WORDS = {
    "poisson": "Poisson subsampling (each example joins each step independently with probability q)",
    "shuffle": "shuffled fixed-size batches (each example at most once per epoch; no amplification certified)",
    "full_batch": "full batch (every example in every step)",
}
_SOURCE_WORDS = {
    "declared": "as declared",
    "detected": "detected",
    "assumed": "ASSUMED: rerokit could not see how batches were formed",
}
_ACCOUNTANT = {
    "exact": "rerokit's pessimistic privacy-loss distribution (PLD): certified brackets, numerical error included",
    "closed-form": "closed-form Gaussian DP (exact)",
    "envelope": "closed-form envelope (noise outside the PLD's double-precision range; certified, looser)",
}


@dataclass(frozen=True)
class PrivacyFacts:
    """What a report's certified numbers are about.

    Attributes:
      unit_of_privacy: "one example" or "one user (k examples)".
      examples_per_user: k.
      neighbouring_relation: the relation the guarantees are for, in words.
      sampler: "poisson", "shuffle" or "full_batch".
      sampler_source: "declared", "detected" or "assumed".
      sampler_text: the sampler in words, with where it came from.
      released: what the attacker is assumed to see.
      accountant: how the numbers were computed.
      delta: the delta of the reported epsilon.
    """

    unit_of_privacy: str
    examples_per_user: int
    neighbouring_relation: str
    sampler: str
    sampler_source: str
    sampler_text: str
    released: str
    accountant: str
    delta: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of the facts."""
        return asdict(self)


def privacy_facts(schedule: Schedule, delta: float, method: str = "exact") -> PrivacyFacts:
    """The facts of a run.

    Args:
      schedule: the run (with its sampler and unit of privacy).
      delta: delta of the reported epsilon.
      method: the method of the reference gamma ("exact", "closed-form" or "envelope").

    Returns:
      :class:`PrivacyFacts`.
    """
    k = schedule.examples_per_user
    unit = "one example" if k == 1 else f"one user ({k} examples)"
    steps = schedule.total_steps
    released = (f"every intermediate model and noisy gradient of all {steps} step{'s' if steps != 1 else ''} "
                "(the bounds cover the whole training transcript, not only the final model)")
    return PrivacyFacts(
        unit_of_privacy=unit, examples_per_user=k,
        neighbouring_relation=schedule.certification().relation, sampler=schedule.sampler,
        sampler_source=schedule.sampler_source,
        sampler_text=f"{_SAMPLER_WORDS[schedule.sampler]}, {_SOURCE_WORDS[schedule.sampler_source]}",
        released=released, accountant=_ACCOUNTANT.get(method, method), delta=float(delta),
    )


def _facts(f: PrivacyFacts | Mapping[str, Any]) -> PrivacyFacts:
    if isinstance(f, PrivacyFacts):
        return f
    return PrivacyFacts(**{k.name: f[k.name] for k in fields(PrivacyFacts)})


def _items(f: PrivacyFacts) -> list[tuple[str, str]]:
    return [("unit of privacy", f.unit_of_privacy), ("neighbouring relation", f.neighbouring_relation),
            ("sampler", f.sampler_text), ("released", f.released), ("accountant", f.accountant),
            ("\u03b4", f"{f.delta:g}")]


def facts_line(f: PrivacyFacts | Mapping[str, Any]) -> str:
    """The facts as one line of text (the report's first bullet in the terminal).

    Args:
      f: the :class:`PrivacyFacts` (or its :meth:`PrivacyFacts.to_dict`).

    Returns:
      "Privacy facts: unit of privacy: ...; ...".
    """
    return "Privacy facts \u2014 " + "; ".join(f"{k}: {v}" for k, v in _items(_facts(f))) + "."


def facts_html(f: PrivacyFacts | Mapping[str, Any] | None) -> str:
    """The facts as an HTML section (escaped; empty for a report without facts).

    Args:
      f: the :class:`PrivacyFacts` (or its :meth:`PrivacyFacts.to_dict`), or None.

    Returns:
      ``<section id="privacy-facts">...</section>``.
    """
    if not f:
        return ""
    rows = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in _items(_facts(f)))
    return f'<section id="privacy-facts"><h2>Privacy facts</h2><dl class="inputs">{rows}</dl></section>'
