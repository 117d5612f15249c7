"""DP-SGD schedules: the one validated representation of (sigma, q, T) settings.

A schedule is a tuple of :class:`Segment` s (noise multiplier sigma, Poisson sampling rate q,
steps T), composed in order; a constant run is one segment. :class:`Schedule` is built once,
from keyword settings, a list of triples, an Opacus accountant's ``history`` (list of
(noise_multiplier, sample_rate, num_steps)), an Opacus accountant itself, or a dp-accounting
``DpEvent`` of Poisson-sampled Gaussians, and every bound, calibration and accounting function
takes it (or anything :meth:`Schedule.coerce` accepts). Never imports torch; dp-accounting only
inside :meth:`Schedule.from_event` / :meth:`Schedule.to_event`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, NamedTuple, Sequence

from rerokit._validate import check_int, check_positive, check_probability

__all__ = ["Segment", "Schedule"]


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
    """

    segments: tuple[Segment, ...]

    def __post_init__(self) -> None:
        if not self.segments:
            raise ValueError("a schedule needs at least one (noise_multiplier, sample_rate, steps) segment")

    # ----------------------------------------------------------------------------- constructors

    @classmethod
    def from_settings(cls, noise_multiplier: Any, sample_rate: Any, steps: Any) -> "Schedule":
        """One constant segment (sigma, q, T).

        Args:
          noise_multiplier: sigma, a finite number > 0.
          sample_rate: Poisson sampling rate q in (0, 1].
          steps: number of steps T, an integer >= 1.

        Returns:
          The one-segment :class:`Schedule`.

        Raises:
          TypeError: if a value has the wrong type.
          ValueError: if a value is out of range or not finite.
        """
        return cls((Segment.checked(noise_multiplier, sample_rate, steps),))

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
        return cls(tuple(out))

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
            return cls.from_opacus_history(mechanism)
        hist = getattr(mechanism, "history", None)
        if isinstance(hist, (list, tuple)):
            if not hist:
                raise ValueError("the accountant's history is empty: no DP-SGD steps were recorded yet")
            return cls.from_opacus_history(hist)
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
        inv = sum(s.steps / (s.noise_multiplier * s.noise_multiplier) for s in self.segments)
        return math.sqrt(inv) if math.isfinite(inv) else math.inf

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
