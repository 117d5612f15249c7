"""DP-SGD schedules: the one validated representation of (sigma, q, T) settings.

A schedule is a tuple of :class:`Segment` s (noise multiplier sigma, Poisson sampling rate q,
steps T), composed in order; a constant run is one segment. :class:`Schedule` is built once,
from keyword settings, a list of triples, an Opacus accountant's ``history`` (list of
(noise_multiplier, sample_rate, num_steps)), an Opacus accountant itself, or a dp-accounting
``DpEvent`` of Poisson-sampled Gaussians, and every bound, calibration and accounting function
takes it (or anything :meth:`Schedule.coerce` accepts). Never imports torch; dp-accounting only
inside :meth:`Schedule.from_event` / :meth:`Schedule.to_event`.

Sampling and the unit of privacy are part of the mechanism: a schedule also carries the
``sampler`` that formed the batches and ``examples_per_user`` (the unit of privacy), and
:meth:`Schedule.certification` says what the privacy-loss engine must compose for them.

Samplers and what is certified (proof sketch)
---------------------------------------------
``"poisson"`` (default; Opacus' ``DPDataLoader``): every example joins every step's batch
independently with probability q. Neighbouring relation: add/remove one example (the pair of
Hayes et al. 2023, Thm 2: "trained with the target" against "trained without it"); one step of
the target's contribution is the mixture (1 - q) N(0, sigma^2) + q N(1, sigma^2) against
N(0, sigma^2) (in units of the clipping norm C), and amplification by subsampling is used.

``"shuffle"`` (fixed-size batches, each example at most once per epoch: a shuffled or
sequential PyTorch/JAX/Keras loader, Opacus' ``make_private(poisson_sampling=False)``): no
amplification is certified. Neighbouring relation: *zero-out* (the target's clipped gradient
replaced by the zero vector; the reference distribution is the same run with the target's
contribution zeroed, which does not depend on the target, so the attacker's success under it is
at most the prior's kappa - what Hayes et al.'s Thm 2 needs). Give the attacker the batch
assignment of every epoch (it cannot hurt the attacker). Given it, the target's clipped gradient
(norm <= C) enters exactly one step per epoch (none in an epoch it is not drawn in), and every
other step is a known function of the earlier releases; the step that holds it releases
known + g + N(0, sigma^2 C^2 I): a Gaussian mechanism of sensitivity C, i.e. 1/sigma-GDP. By
adaptive composition of Gaussian DP (Dong, Roth & Su 2022, Cor. 3.3) a run touching E epochs is
mu-GDP with mu = sqrt(E)/sigma, i.e. E full-batch releases at noise sigma. Under *replace-one*
(the target swapped for another record) the sensitivity is 2C and mu = 2 sqrt(E)/sigma;
add/remove is not well defined for fixed-size batches (removing a record reshuffles every
batch). Opacus divides the noisy sum by the *expected* batch size B = n q, a public constant,
so the released average is a post-processing of the noisy sum and the noise multiplier keeps its
meaning (noise std sigma C on the sum). Here ``sample_rate`` is the fraction of an epoch one
step covers, 1 / (steps per epoch) - Opacus' convention (``sample_rate = 1 / len(data_loader)``)
- so a segment of T steps touches E = ceil(T q) epochs (a partial epoch counts as one; an epoch
split between two segments is counted in both, which only adds releases).

``"full_batch"``: every step uses every example, so every step is one Gaussian release of the
target: mu = sqrt(T)/sigma (q is ignored: every step is treated as holding the target).

Unit of privacy: ``examples_per_user = k`` protects all k examples of one user together. Poisson:
each of the user's examples is sampled independently, so one step releases N(J C, sigma^2 C^2)
with J ~ Binomial(k, q) against N(0, sigma^2 C^2) - the engine composes this pair with
``group_size=k``; at q = 1 it is N(k, sigma^2) vs N(0, sigma^2), mu = k sqrt(T)/sigma. Shuffle,
worst case (all k examples in one batch): sensitivity kC per epoch, mu = k sqrt(E)/sigma (k
examples spread over batches give sqrt(sum_b k_b^2) <= k, less). Full batch: mu = k sqrt(T)/sigma.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, NamedTuple, Sequence

from rerokit._validate import check_choice, check_int, check_positive, check_probability

__all__ = ["Segment", "Schedule", "Sampling", "Certification", "SAMPLERS", "SAMPLER_SOURCES", "epochs_touched"]

SAMPLERS = ("poisson", "shuffle", "full_batch")
"""How batches are formed: Poisson subsampling (amplified), fixed-size shuffled batches (each
example at most once per epoch; certified without amplification), or every example every step."""

SAMPLER_SOURCES = ("declared", "detected", "assumed")
"""Where the sampler came from: given by the user, detected by rerokit (Opacus' flag, the
DataLoader's sampler), or assumed because rerokit could not see it."""

RELATIONS = {
    "poisson": "add/remove one {unit} (Poisson subsampling: amplification by subsampling used)",
    "shuffle": "zero-out one {unit} (its clipped gradients replaced by 0; sensitivity {k}C per epoch; no "
               "amplification: each epoch is one Gaussian release)",
    "full_batch": "zero-out / add-remove one {unit} (every step holds it: sensitivity {k}C per step)",
}


def epochs_touched(sample_rate: float, steps: int) -> int:
    """E = ceil(T q): the epochs a run of T steps touches when one step covers the fraction q of an epoch.

    A relative tolerance of 1e-9 absorbs the rounding of q = 1/(steps per epoch) (T q = 3.0000000004
    is 3 epochs); a real fractional epoch is at least one step, i.e. q >= 1e-9 of an epoch for any
    loader of fewer than 1e9 batches.

    Args:
      sample_rate: q in (0, 1], the fraction of an epoch one step covers.
      steps: T >= 1.

    Returns:
      The number of epochs, an integer >= 1.
    """
    x = check_probability("sample_rate", sample_rate) * check_int("steps", steps, minimum=1)
    return max(1, math.ceil(x - 1e-9 * max(1.0, x)))


@dataclass(frozen=True)
class Sampling:
    """How a run forms its batches and whom it protects: ``Sampling("shuffle", examples_per_user=3)``.

    The one ``sampler=`` argument of :func:`rerokit.reconstruction_risk`, the calibrators, the report
    and :func:`rerokit.opacus.make_private_with_reconstruction_risk` (each also takes a bare sampler
    name), so that they keep few parameters.

    Attributes:
      sampler: "poisson" (Poisson subsampling, amplified), "shuffle" (fixed-size shuffled batches,
        each example at most once per epoch; no amplification) or "full_batch"; None (default): not
        said here - the mechanism's own (a rerokit ``RiskAccountant`` knows it, Opacus' loader is
        detected), else Poisson, assumed.
      examples_per_user: the unit of privacy, k >= 1 examples of one user protected together
        (default 1: one example).

    Raises:
      ValueError: if ``sampler`` is not one of :data:`SAMPLERS` or ``examples_per_user`` < 1.
      TypeError: if a field has the wrong type.
    """

    sampler: str | None = None
    examples_per_user: int = 1

    def __post_init__(self) -> None:
        if self.sampler is not None:
            check_choice("Sampling.sampler", self.sampler, SAMPLERS)
        object.__setattr__(self, "examples_per_user", check_int("Sampling.examples_per_user",
                                                                 self.examples_per_user, minimum=1))

    @classmethod
    def of(cls, sampler: Any) -> "Sampling":
        """A :class:`Sampling` from a sampler name (k = 1), None (``Sampling()``) or a :class:`Sampling`
        (returned as is).

        Args:
          sampler: "poisson", "shuffle", "full_batch", None or a :class:`Sampling`.

        Returns:
          The :class:`Sampling`.

        Raises:
          ValueError / TypeError: if ``sampler`` is none of these (the message names ``sampler``).
        """
        if isinstance(sampler, Sampling):
            return sampler
        if sampler is not None and not isinstance(sampler, str):
            raise TypeError(f"sampler must be 'poisson', 'shuffle', 'full_batch' or a rerokit Sampling, "
                            f"got {type(sampler).__name__}")
        if sampler is not None:
            check_choice("sampler", sampler, SAMPLERS)
        return cls(sampler)


@dataclass(frozen=True)
class Certification:
    """What the privacy-loss engine must certify for a schedule's sampler and unit of privacy.

    Attributes:
      schedule: a Poisson, example-level :class:`Schedule` whose (remove) pair dominates the run's
        pair: the run's own segments (Poisson), or the Gaussian releases of the target as q = 1
        segments (sigma / k, 1, releases) when no amplification is certified.
      group_size: the engine's ``group_size`` (k for Poisson with q < 1 and k > 1, else 1).
      amplified: True when amplification by (Poisson) subsampling is used.
      releases: how many Gaussian releases of the target the unamplified view counts (epochs for
        "shuffle", steps otherwise).
      relation: the neighbouring relation, in words.
    """

    schedule: "Schedule"
    group_size: int
    amplified: bool
    releases: int
    relation: str


MAX_EVENT_DEPTH = 64
"""Deepest nesting of composed events :meth:`Schedule.from_event` follows."""


class Segment(NamedTuple):
    """``steps`` DP-SGD steps with noise multiplier ``noise_multiplier`` and sampling rate ``sample_rate``."""

    noise_multiplier: float
    sample_rate: float
    steps: int

    @classmethod
    def checked(cls, noise_multiplier: Any, sample_rate: Any, steps: Any, prefix: str = "") -> "Segment":
        """A validated segment; errors name ``prefix + parameter`` and the valid range.

        Args:
          noise_multiplier: sigma, a finite number > 0.
          sample_rate: Poisson sampling rate q in (0, 1].
          steps: number of steps T, an integer >= 1 (an integral float is accepted).
          prefix: prepended to the parameter names in error messages (e.g. ``"segments[2]."``).

        Returns:
          The :class:`Segment` (floats and an int).

        Raises:
          TypeError: if a value has the wrong type.
          ValueError: if a value is out of range or not finite.
        """
        return cls(
            check_positive(prefix + "noise_multiplier", noise_multiplier),
            check_probability(prefix + "sample_rate", sample_rate),
            check_int(prefix + "steps", steps, minimum=1),
        )


@dataclass(frozen=True)
class Schedule:
    """A validated, non-empty DP-SGD schedule (segments composed in order).

    Build it with the ``from_*`` constructors or :meth:`coerce`, which validate every segment; the
    plain constructor only checks that there is at least one segment.

    Attributes:
      segments: the :class:`Segment` s; consecutive segments with the same (sigma, q) are merged
        when built from an Opacus history.
      sampler: "poisson" (default), "shuffle" or "full_batch" (see the module docstring).
      examples_per_user: the unit of privacy, k >= 1 examples per protected user (default 1).
      sampler_source: "declared", "detected" or "assumed" (default: nobody said how batches were
        formed, and Poisson is the assumption).
    """

    segments: tuple[Segment, ...]
    sampler: str = "poisson"
    examples_per_user: int = 1
    sampler_source: str = field(default="assumed", compare=False)  # provenance, not part of the mechanism

    def __post_init__(self) -> None:
        if isinstance(self.segments, (str, bytes)) or not hasattr(self.segments, "__iter__"):
            raise TypeError(f"segments must be a sequence of (noise_multiplier, sample_rate, steps), got {self.segments!r}")
        segs = []
        for i, seg in enumerate(self.segments):  # plain tuples too (they had no .sample_rate: AttributeError)
            if isinstance(seg, (str, bytes)) or not hasattr(seg, "__len__") or len(seg) != 3:
                raise TypeError(f"segments[{i}] must be (noise_multiplier, sample_rate, steps), got {seg!r}")
            segs.append(Segment.checked(*seg, prefix=f"segments[{i}]."))
        object.__setattr__(self, "segments", tuple(segs))
        if not self.segments:
            raise ValueError("a schedule needs at least one (noise_multiplier, sample_rate, steps) segment")
        check_choice("sampler", self.sampler, SAMPLERS)
        object.__setattr__(self, "examples_per_user", check_int("examples_per_user", self.examples_per_user,
                                                                 minimum=1))
        check_choice("sampler_source", self.sampler_source, SAMPLER_SOURCES)

    def with_sampling(self, sampler: Any = None, examples_per_user: Any = None,
                      sampler_source: str | None = None) -> "Schedule":
        """The same segments with another sampler and/or unit of privacy (None keeps the current one).

        Args:
          sampler: "poisson", "shuffle" or "full_batch", or None.
          examples_per_user: k >= 1, or None.
          sampler_source: "declared", "detected" or "assumed"; None: "declared" when ``sampler``
            is given, else unchanged.

        Returns:
          The new :class:`Schedule` (``self`` when nothing changes).

        Raises:
          ValueError: if a value is out of range.
          TypeError: if a value has the wrong type.
        """
        if sampler is None and examples_per_user is None and sampler_source is None:
            return self
        src = sampler_source if sampler_source is not None else ("declared" if sampler is not None
                                                                 else self.sampler_source)
        if sampler is None and sampler_source is None and examples_per_user == self.examples_per_user:
            return self
        return Schedule(self.segments, self.sampler if sampler is None else sampler,
                        self.examples_per_user if examples_per_user is None else examples_per_user, src)

    def as_poisson(self) -> "Schedule":
        """The same segments and unit of privacy under Poisson sampling (the assumption the Poisson
        accountant makes; for a run that did not sample that way it is *not* certified)."""
        return Schedule(self.segments, "poisson", self.examples_per_user, "assumed")

    def certification(self) -> Certification:
        """What the engine must compose for this sampler and unit of privacy (see the module docstring).

        Returns:
          A :class:`Certification`: Poisson with k = 1 - the segments as they are; Poisson with
          k > 1 - the same segments with ``group_size=k`` (q = 1 everywhere: (sigma/k, 1, T) and
          group size 1, the closed form mu k); "shuffle" - (sigma/k, 1, ceil(T q)) per segment;
          "full_batch" - (sigma/k, 1, T) per segment.
        """
        k = self.examples_per_user
        unit = "example" if k == 1 else f"user ({k} examples)"
        relation = RELATIONS[self.sampler].format(unit=unit, k="" if k == 1 else k)
        if self.sampler == "poisson" and (k == 1 or not self.full_batch):
            base = Schedule(self.segments)
            return Certification(base, k, not self.full_batch, self.total_steps, relation)
        if self.sampler == "shuffle":
            segs = tuple(Segment(s / k, 1.0, epochs_touched(q, T)) for s, q, T in self.segments)
        else:  # full batch, or Poisson at q = 1 with a group
            segs = tuple(Segment(s / k, 1.0, T) for s, _, T in self.segments)
        return Certification(Schedule(segs), 1, False, sum(x.steps for x in segs), relation)

    def group_envelope(self) -> Certification:
        """The certified no-amplification view of a group under Poisson sampling: every step treated
        as holding all k examples, (sigma/k, 1, T) per segment, mu = k sqrt(sum T_i / sigma_i^2).

        Subsampling never helps the attacker (give it the batch memberships): valid whatever the
        sampler; looser than the Binomial mixture the engine composes with ``group_size``.
        """
        k = self.examples_per_user
        segs = tuple(Segment(s / k, 1.0, T) for s, _, T in self.segments)
        return Certification(Schedule(segs), 1, False, self.total_steps,
                             RELATIONS["full_batch"].format(unit=f"user ({k} examples)", k=k))

    # ----------------------------------------------------------------------------- constructors

    @classmethod
    def from_settings(cls, noise_multiplier: Any, sample_rate: Any, steps: Any, *, sampler: str | None = None,
                      examples_per_user: int = 1, sampler_source: str | None = None) -> "Schedule":
        """One constant segment (sigma, q, T).

        Args:
          noise_multiplier: sigma, a finite number > 0.
          sample_rate: sampling rate q in (0, 1] (Poisson rate; for "shuffle" 1/(steps per epoch)).
          steps: number of steps T, an integer >= 1.
          sampler, examples_per_user, sampler_source: see the class docstring (sampler None: Poisson,
            assumed; a sampler given without a source is "declared").

        Returns:
          The one-segment :class:`Schedule`.

        Raises:
          TypeError: if a value has the wrong type.
          ValueError: if a value is out of range or not finite.
        """
        return cls((Segment.checked(noise_multiplier, sample_rate, steps),)).with_sampling(
            sampler, examples_per_user, sampler_source)

    @classmethod
    def from_segments(cls, segments: Iterable[Sequence[Any]], *, name: str = "segments") -> "Schedule":
        """From (sigma, q, T) triples; errors name ``name[i].parameter``.

        Args:
          segments: an iterable of (noise_multiplier, sample_rate, steps) lists or tuples, in order.
          name: what to call the argument in error messages (default "segments").

        Returns:
          The :class:`Schedule` (segments kept as given, not merged).

        Raises:
          TypeError: if ``segments`` is a string or not iterable, or a value has the wrong type.
          ValueError: if it is empty, an entry is not a triple, or a value is out of range.
        """
        if isinstance(segments, (str, bytes)) or not isinstance(segments, Iterable):
            raise TypeError(f"{name} must be a list of (noise_multiplier, sample_rate, steps) triples, "
                            f"got {type(segments).__name__}")
        out = []
        for i, seg in enumerate(segments):
            if not isinstance(seg, (list, tuple)) or len(seg) != 3:
                raise ValueError(f"{name}[{i}] must be a (noise_multiplier, sample_rate, steps) triple, got {seg!r}")
            out.append(Segment.checked(*seg, prefix=f"{name}[{i}]."))
        if not out:
            raise ValueError(f"{name} must be a non-empty list of (noise_multiplier, sample_rate, steps)")
        return cls(tuple(out))

    @classmethod
    def from_opacus_history(cls, history: Iterable[Sequence[Any]]) -> "Schedule":
        """Opacus ``accountant.history`` (list of (noise_multiplier, sample_rate, num_steps)).

        Consecutive entries with the same (sigma, q) are merged (Opacus appends one entry per
        optimizer step or per epoch, depending on the accountant).

        Args:
          history: the accountant's history, an iterable of (noise_multiplier, sample_rate, num_steps).

        Returns:
          The :class:`Schedule`.

        Raises:
          TypeError: if ``history`` is not an iterable of triples of numbers.
          ValueError: if it is empty, an entry is not a triple, or a value is out of range (errors name
            ``history[i].parameter``).
        """
        merged: list[Segment] = []
        for seg in cls.from_segments(history, name="history").segments:
            if merged and merged[-1][:2] == seg[:2]:
                merged[-1] = Segment(seg[0], seg[1], merged[-1][2] + seg[2])
            else:
                merged.append(seg)
        return cls(tuple(merged))

    @classmethod
    def from_event(cls, event: Any) -> "Schedule":
        """Flatten a dp-accounting ``DpEvent`` of Gaussian / PoissonSampled(Gaussian) events.

        SelfComposed and Composed events are allowed (counts multiply), NoOp events are skipped; a
        plain Gaussian event is a step with q = 1.

        Args:
          event: the dp-accounting ``DpEvent``.

        Returns:
          The :class:`Schedule`, one segment per Gaussian leaf in order.

        Raises:
          ValueError: if the event holds anything else, no Gaussian step, or an out-of-range value
            (errors name ``event.parameter``).
        """
        import dp_accounting as dpa

        out: list[Segment] = []

        def walk(e: Any, count: int, depth: int = 0) -> None:
            if depth > MAX_EVENT_DEPTH:  # a crafted nesting would end in a RecursionError
                raise ValueError(f"event is nested more than {MAX_EVENT_DEPTH} levels deep")
            if isinstance(e, dpa.NoOpDpEvent):
                return
            if isinstance(e, dpa.SelfComposedDpEvent):
                # an integral count only: 2.7 compositions are not 2 (no silent truncation)
                c = e.count
                if isinstance(c, float) and c.is_integer():
                    c = int(c)
                walk(e.event, count * check_int("event.count", c, minimum=0), depth + 1)
            elif isinstance(e, dpa.ComposedDpEvent):
                for sub in e.events:
                    walk(sub, count, depth + 1)
            elif isinstance(e, dpa.GaussianDpEvent):
                out.append(Segment.checked(e.noise_multiplier, 1.0, count, prefix="event."))
            elif isinstance(e, dpa.PoissonSampledDpEvent) and isinstance(e.event, dpa.GaussianDpEvent):
                out.append(Segment.checked(e.event.noise_multiplier, e.sampling_probability, count, prefix="event."))
            else:
                raise ValueError(
                    f"event must be built from Gaussian / PoissonSampled(Gaussian) events, got {type(e).__name__}"
                )

        walk(event, 1)
        if not out:
            raise ValueError("event contains no Gaussian steps")
        return cls(tuple(out), "poisson", 1, "declared")  # the event says PoissonSampled (or q = 1)

    @classmethod
    def coerce(cls, mechanism: Any) -> "Schedule":
        """A :class:`Schedule` from any accepted form.

        Args:
          mechanism: a ``Schedule`` (returned as is), a list/tuple of (sigma, q, T) triples (an Opacus
            ``history``, merged as in :meth:`from_opacus_history`), an object with a ``history``
            attribute (an Opacus accountant), or a dp-accounting ``DpEvent``.

        Returns:
          The :class:`Schedule`.

        Raises:
          TypeError: if ``mechanism`` is none of these.
          ValueError: if the accountant's history is empty or a value is invalid.
        """
        if isinstance(mechanism, Schedule):
            return mechanism
        if isinstance(mechanism, (list, tuple)):
            return cls.from_opacus_history(mechanism)  # a bare history: Poisson, assumed
        hist = getattr(mechanism, "history", None)
        if isinstance(hist, (list, tuple)):
            if not hist:
                raise ValueError("the accountant's history is empty: no DP-SGD steps were recorded yet")
            sched = cls.from_opacus_history(hist)
            # a rerokit RiskAccountant knows its run's sampler; any other accountant: Poisson, assumed
            smp, k, src = (getattr(mechanism, n, None) for n in ("sampler", "examples_per_user", "sampler_source"))
            if not (isinstance(smp, str) and smp in SAMPLERS):  # another library's attribute of that name
                smp, k, src = "poisson", 1, "assumed"
            return sched.with_sampling(smp, k if isinstance(k, int) else 1,
                                       src if src in SAMPLER_SOURCES else "assumed")
        if type(mechanism).__module__.startswith("dp_accounting"):
            return cls.from_event(mechanism)
        raise TypeError(
            "mechanism must be an Opacus accountant, its .history (a list of (noise_multiplier, "
            "sample_rate, steps)), a dp_accounting DpEvent or a rerokit Schedule; "
            f"got {type(mechanism).__name__}"
        )

    # ----------------------------------------------------------------------------- views

    def __iter__(self) -> Iterator[Segment]:
        return iter(self.segments)

    def __len__(self) -> int:
        return len(self.segments)

    @property
    def total_steps(self) -> int:
        """Total number of steps T = sum_i T_i."""
        return sum(s.steps for s in self.segments)

    @property
    def full_batch(self) -> bool:
        """True if every segment has q = 1 (then the schedule is exactly mu-GDP)."""
        return all(s.sample_rate == 1.0 for s in self.segments)

    @property
    def mu_full_batch(self) -> float:
        """mu = sqrt(sum_i T_i / sigma_i^2): the GDP parameter of the schedule with q = 1, an upper
        envelope for any q (subsampling never helps the adversary); exact when ``full_batch``."""
        # T / sigma / sigma: inf, not ZeroDivisionError, where sigma^2 underflows (sigma 1e-300)
        inv = sum(s.steps / s.noise_multiplier / s.noise_multiplier for s in self.segments)
        return math.sqrt(inv) if math.isfinite(inv) else math.inf

    def sampling_dict(self) -> dict[str, Any]:
        """JSON-ready sampler, its source, the unit of privacy and the neighbouring relation."""
        return {"sampler": self.sampler, "sampler_source": self.sampler_source,
                "examples_per_user": self.examples_per_user, "neighbouring_relation": self.certification().relation}

    def as_triples(self) -> list[list[float | int]]:
        """``[[sigma, q, T], ...]`` (JSON-ready; the format of Opacus histories)."""
        return [[s.noise_multiplier, s.sample_rate, s.steps] for s in self.segments]

    def to_event(self) -> Any:
        """The dp-accounting ``DpEvent``: ``ComposedDpEvent`` of ``SelfComposed(PoissonSampled(q,
        Gaussian(sigma)), T)`` per segment (no sampling wrapper for q = 1; a single segment is
        not wrapped in a ``ComposedDpEvent``)."""
        import dp_accounting as dpa

        evs = []
        for s, q, T in self.segments:
            g = dpa.GaussianDpEvent(s)
            evs.append(dpa.SelfComposedDpEvent(g if q == 1.0 else dpa.PoissonSampledDpEvent(q, g), T))
        return evs[0] if len(evs) == 1 else dpa.ComposedDpEvent(evs)
