"""The one schedule type: built once from settings, triples, Opacus histories/accountants, DpEvents."""

from __future__ import annotations

import math

import pytest

from rerokit.bounds.schedule import Schedule, Segment


def test_constructors_agree() -> None:
    import dp_accounting as dpa

    a = Schedule.from_settings(1.0, 0.01, 100)
    assert a.segments == (Segment(1.0, 0.01, 100),) and a.total_steps == 100 and not a.full_batch
    assert Schedule.coerce([(1.0, 0.01, 60), (1.0, 0.01, 40)]) == a  # an Opacus history: merged
    ev = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0)), 100)
    assert Schedule.coerce(ev) == a
    assert Schedule.from_event(a.to_event()) == a

    class FakeAccountant:  # anything with a .history, as Opacus' IAccountant
        history = [(2.0, 1.0, 3), (1.0, 0.5, 4)]

    s = Schedule.coerce(FakeAccountant())
    assert s.as_triples() == [[2.0, 1.0, 3], [1.0, 0.5, 4]]
    assert Schedule.coerce(s) is s


def test_mu_full_batch_is_the_gdp_composition() -> None:
    s = Schedule.from_segments([(2.0, 1.0, 4), (1.0, 1.0, 1)])
    assert s.full_batch and s.mu_full_batch == pytest.approx(math.sqrt(4 / 4 + 1))


@pytest.mark.parametrize("bad,match", [
    ([], "non-empty"), ([(1.0, 1.5, 3)], r"history\[0\].sample_rate"), ([(1.0, 0.1)], r"history\[0\]"),
    ([(0.0, 0.1, 3)], r"history\[0\].noise_multiplier"), ([(1.0, 0.1, 2.5)], r"history\[0\].steps"),
])
def test_bad_histories_name_the_entry(bad, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        Schedule.coerce(bad)


def test_bad_mechanism_says_what_to_pass() -> None:
    with pytest.raises(TypeError, match="Opacus accountant, its .history"):
        Schedule.coerce(1.0)

    class Empty:
        history: list = []

    with pytest.raises(ValueError, match="empty"):
        Schedule.coerce(Empty())


def test_schedule_takes_plain_tuples_and_names_bad_segments():
    """Schedule(((sigma, q, T), ...)) raised AttributeError ('tuple' has no sample_rate) deep in the
    engine (found by fuzzing reconstruction_risk); plain tuples are now validated into Segments and a
    malformed one is named."""
    from rerokit.bounds.schedule import Schedule, Segment

    s = Schedule(((1.0, 0.01, 100), (2.0, 0.02, 50)))
    assert s.segments == (Segment(1.0, 0.01, 100), Segment(2.0, 0.02, 50))
    assert s.segments[0].sample_rate == 0.01
    with pytest.raises(TypeError, match=r"segments\[1\] must be"):
        Schedule(((1.0, 0.01, 100), (1.0, 0.01)))
    with pytest.raises(ValueError, match=r"segments\[0\]\.sample_rate"):
        Schedule(((1.0, 1.5, 100),))
    with pytest.raises(TypeError, match="segments must be a sequence"):
        Schedule("abc")
