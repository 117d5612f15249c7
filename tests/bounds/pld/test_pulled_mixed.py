"""The far-tail tilt's upper end where the pulled tilt's double round-off is too large
(rerokit.bounds.pld.tilt.pulled_upper, _PULLED_MIXED_FIRST): the pulled tilt again in "mixed"
precision first (its window is the smaller one), the saddle point's only where that share stays
above e^_PULL_ERR; against the rule off (the saddle point in double, then in "mixed")."""

from __future__ import annotations

import math

from rerokit.bounds.dpsgd import dpsgd_pld
from rerokit.bounds.pld import builder, tilt


def _fake(shares: dict[tuple[float, str], float], calls: list[tuple[float, str]]):
    """upper(x, precision) -> (log upper end -10 - x, the share given for (x, precision))."""
    def upper(x: float, precision: str) -> tuple[float, float]:
        calls.append((x, precision))
        return -10.0 - x - (0.5 if precision == "mixed" else 0.0), shares[(x, precision)]
    return upper


def test_the_pulled_tilt_in_mixed_first_where_its_double_share_is_large() -> None:
    big, small = tilt._PULL_ERR + 1.0, tilt._PULL_ERR - 1.0
    calls: list[tuple[float, str]] = []
    # pulled in double too large, in mixed small enough: kept, no saddle point
    up = _fake({(1.5, "double"): big, (1.5, "mixed"): small}, calls)
    assert tilt.pulled_upper(up, 2.0, 1.5) == (-12.0, 1.5, "mixed", small)
    assert calls == [(1.5, "double"), (1.5, "mixed")]
    # still large in mixed: the saddle point in double, then in mixed (its share large too)
    calls.clear()
    up = _fake({(1.5, "double"): big, (1.5, "mixed"): big, (2.0, "double"): big, (2.0, "mixed"): small}, calls)
    assert tilt.pulled_upper(up, 2.0, 1.5) == (-12.5, 2.0, "mixed", small)
    assert calls == [(1.5, "double"), (1.5, "mixed"), (2.0, "double"), (2.0, "mixed")]
    # the pulled tilt in double fine: one call
    calls.clear()
    up = _fake({(1.5, "double"): small}, calls)
    assert tilt.pulled_upper(up, 2.0, 1.5) == (-11.5, 1.5, "double", small)
    assert calls == [(1.5, "double")]
    # nothing pulled, or a caller already in mixed: the rule does not apply
    calls.clear()
    up = _fake({(2.0, "double"): big, (2.0, "mixed"): small}, calls)
    assert tilt.pulled_upper(up, 2.0, 2.0) == (-12.5, 2.0, "mixed", small)
    assert calls == [(2.0, "double"), (2.0, "mixed")]


def test_the_rule_off_takes_the_saddle_point(monkeypatch) -> None:
    big, small = tilt._PULL_ERR + 1.0, tilt._PULL_ERR - 1.0
    monkeypatch.setattr(tilt, "_PULLED_MIXED_FIRST", False)
    calls: list[tuple[float, str]] = []
    up = _fake({(1.5, "double"): big, (2.0, "double"): big, (2.0, "mixed"): small}, calls)
    assert tilt.pulled_upper(up, 2.0, 1.5) == (-12.5, 2.0, "mixed", small)
    assert calls == [(1.5, "double"), (2.0, "double"), (2.0, "mixed")]


def test_a_short_lattice_like_schedule_keeps_the_pulled_tilt(monkeypatch) -> None:
    """sigma 0.988, q 3.08e-5, T 361, kappa 1.9e-13 (about 0.01 sampled steps: a nearly lattice-like
    far tail): the pulled tilt's share is e^-4.7 in double, e^-7.4 in "mixed", so the saddle point's
    three times longer window is not composed (63 -> 31 ms in rero_dpsgd). Both brackets are
    certified, so they overlap; the new one is at most 2e-3 wide in log (measured 4.1e-4; the saddle
    point's in mixed 3.2e-4)."""
    seen: list[tuple[str, int]] = []
    real = tilt.compose

    def recording(*args, **kwargs):
        c = real(*args, **kwargs)
        seen.append((kwargs.get("precision", "double"), c.pmf.size))
        return c

    monkeypatch.setattr(tilt, "compose", recording)
    # (the tilts themselves: since the nineteenth stop the one-jump bound answers this cell first)
    monkeypatch.setattr(builder, "_ONE_JUMP_RARE_Q", 0.0)
    segs, log_level = [(0.988, 3.08e-5, 361)], math.log(1.9e-13)
    lo, up = dpsgd_pld(segs).tail_power(log_level)
    new = list(seen)
    assert up - lo <= 2e-3
    seen.clear()
    monkeypatch.setattr(tilt, "_PULLED_MIXED_FIRST", False)
    lo_s, up_s = dpsgd_pld(segs).tail_power(log_level)
    assert lo <= up_s and lo_s <= up
    mixed_new = [n for p, n in new if p == "mixed"]
    mixed_old = [n for p, n in seen if p == "mixed"]
    assert len(mixed_new) == len(mixed_old) == 1 and 2 * mixed_new[0] < mixed_old[0]
    assert sum(n for _, n in new) < sum(n for _, n in seen) / 2  # labels composed in all
