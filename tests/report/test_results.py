"""The typed command results of :mod:`rerokit.report.results`: each reads back the JSON its command prints
(``from_dict(d).to_dict() == d``), refuses a JSON object without one of the keys it always writes
(ValueError naming the key, and the verdict falls back to the generic summary), and carries the numbers
of the library call the command makes (checked against that call, made here independently)."""

from __future__ import annotations

import math

import pytest

from rerokit.report.results import CalibrateOutput, ConversionBound, FanoBound, KappaResult, TradeoffOutput

CONVERSIONS = [
    ["bound", "dp", "--epsilon", "2", "--prior-size", "10"],
    ["bound", "dp", "--epsilon", "3", "--log10-kappa", "-500"],
    ["bound", "rdp", "--alpha", "2", "--epsilon", "1", "--prior-size", "100"],
    ["bound", "zcdp", "--rho", "0.5", "--kappa", "0.01"],
    ["bound", "gdp", "--mu", "1", "--prior-size", "10"],
]
FANO = [
    ["bound", "fano", "--noise-multiplier", "2", "--prior-size", "10"],
    ["bound", "fano", "--mutual-information", "0.5", "--prior-size", "10"],
    ["bound", "fano", "--rdp-epsilon", "1", "--prior-size", "5"],
]
CALIBRATE = [
    ["calibrate", "dpsgd", "--target-gamma", "0.5", "--sample-rate", "1", "--steps", "10", "--prior-size", "10"],
    ["calibrate", "dpsgd", "--target-gamma", "0.5", "--sample-rate", "0.001", "--noise-multiplier", "5", "--prior-size",
     "100", "--max-steps", "100"],
    ["calibrate", "dpsgd", "--target-gamma", "0.3", "--sample-rate", "0.1", "--noise-multiplier", "1", "--prior-size",
     "100", "--sampler", "shuffle"],
]
TRADEOFF = [
    ["bound", "tradeoff", "--noise-multiplier", "2", "--sample-rate", "1", "--steps", "10", "--fpr", "0.01", "0.1"],
    ["bound", "tradeoff", "--noise-multiplier", "2", "--sample-rate", "1", "--steps", "10", "--grid", "5"],
    ["bound", "tradeoff", "--noise-multiplier", "1", "--sample-rate", "0.1", "--steps", "20", "--fpr", "0.01",
     "--sampler", "shuffle"],
]
CASES = ([(a, ConversionBound) for a in CONVERSIONS] + [(a, FanoBound) for a in FANO]
         + [(a, CalibrateOutput) for a in CALIBRATE] + [(a, TradeoffOutput) for a in TRADEOFF])
IDS = [" ".join(a[:3]) + f" #{i}" for i, (a, _) in enumerate(CASES)]


def _printed(cli, argv) -> dict:
    d = cli.json(argv)
    d.pop("rerokit_version")
    return d


def _assert_each_missing_key_is_refused(read, command: str, d: dict, keys) -> None:
    """Without any one of ``keys``, ``read`` raises a ValueError naming it and the verdict is the generic one."""
    from rerokit.report.verdicts import generic_summary, summary_for

    for key in keys:
        bad = {k: v for k, v in d.items() if k != key}
        with pytest.raises(ValueError, match=repr(key)):
            read(bad)
        assert summary_for(command, bad) == generic_summary(command, bad), key


@pytest.mark.parametrize(("argv", "cls"), CASES, ids=IDS)
def test_the_printed_json_reads_back_and_is_written_again_unchanged(argv, cls, cli):
    d = _printed(cli, argv)
    assert cls.from_dict(d).to_dict() == d
    assert list(cls.from_dict(d).to_dict()) == list(d)  # the keys in the command's order


@pytest.mark.parametrize(("argv", "cls"), CASES, ids=IDS)
def test_a_missing_key_is_an_error_naming_it_and_the_verdict_is_the_generic_one(argv, cls, cli):
    d = _printed(cli, argv)
    command = " ".join(argv[:2])
    optional = {"note", "poisson_assumption", "mutual_information_bound"}
    _assert_each_missing_key_is_refused(cls.from_dict, command, d, [k for k in d if k not in optional])
    for key in [k for k in d.get("settings", {}) if k in ("noise_multiplier", "sample_rate", "steps", "sampler")]:
        bad = dict(d, settings={k: v for k, v in d["settings"].items() if k != key})
        with pytest.raises(ValueError, match=repr(key)):
            cls.from_dict(bad)


def test_missing_scalar_keys_are_named():
    d = {"bound": "dp", "epsilon": 1.0, "kappa": 0.1, "log10_kappa": -1.0, "gamma": 0.27, "log10_gamma": -0.57}
    with pytest.raises(ValueError, match="'advantage'"):
        ConversionBound.from_dict(d)
    with pytest.raises(ValueError, match="'epsilon'"):
        ConversionBound.from_dict({k: v for k, v in d.items() if k != "epsilon"})
    with pytest.raises(ValueError, match="'bound' must name one of dp, rdp, zcdp, gdp"):
        ConversionBound.from_dict(dict(d, bound="laplace (...)"))
    with pytest.raises(TypeError, match="'gamma' must be a number"):
        ConversionBound.from_dict(dict(d, advantage=0.2, gamma=[0.27]))


def test_conversion_carries_the_library_gamma(cli):
    from rerokit.bounds.conversions import log_rero_from_rdp

    r = ConversionBound.from_dict(_printed(cli, CONVERSIONS[2]))
    assert r.inputs == {"alpha": 2.0, "epsilon": 1.0}
    assert r.kappa == 0.01
    assert r.gamma == pytest.approx(math.exp(log_rero_from_rdp(2.0, 1.0, math.log(0.01))), rel=1e-15)
    # Balle et al. 2022, Thm 2: (kappa e^eps)^((alpha - 1) / alpha)
    assert r.gamma == pytest.approx((0.01 * math.e) ** 0.5, rel=1e-12)


def test_fano_reads_back_the_library_bound(cli):
    from rerokit.bounds.fano import fano_advantage_gaussian

    b = fano_advantage_gaussian(2.0, 10, 1.0)
    r = FanoBound.from_dict(_printed(cli, FANO[0]))
    assert r == FanoBound.of(r.bound, b)
    assert (r.advantage, r.gamma, r.kappa, r.error) == (b.value, b.extras["gamma"], 0.1, b.error)


def test_calibrate_reads_back_the_library_calibration(cli):
    from rerokit.bounds.calibrate import calibrate_noise_multiplier, calibrate_steps

    c = CalibrateOutput.from_dict(_printed(cli, CALIBRATE[0])).calibration
    assert c == calibrate_noise_multiplier(0.5, 1.0, 10, prior=10, delta=1e-5)
    o = CalibrateOutput.from_dict(_printed(cli, CALIBRATE[1]))
    ref = calibrate_steps(0.5, 5.0, 0.001, prior=100, delta=1e-5, max_steps=100)
    assert ref.capped and o.calibration == ref and o.solved == "steps"
    assert o.note == "target holds up to --max-steps=100; steps capped there"


def test_calibrate_reads_an_infinite_epsilon_written_as_a_string(cli):
    d = _printed(cli, CALIBRATE[0])
    assert CalibrateOutput.from_dict(dict(d, epsilon="inf")).calibration.epsilon == math.inf


def test_tradeoff_points_are_the_library_curve(cli):
    from rerokit.bounds.certify import certified_tradeoff
    from rerokit.bounds.schedule import Schedule

    r = TradeoffOutput.from_dict(_printed(cli, TRADEOFF[0]))
    curve, _ = certified_tradeoff(Schedule.from_settings(2.0, 1.0, 10), adjacency="remove")
    tpr = curve.tpr_at_fpr([0.01, 0.1])
    assert [p.fpr for p in r.points] == [0.01, 0.1]
    assert [p.tpr for p in r.points] == [(float(lo), float(hi)) for lo, hi in zip(tpr.lower, tpr.upper)]
    assert r.curve is None and r.adjacency == "remove" and r.advantage == curve.advantage().value
    g = TradeoffOutput.from_dict(_printed(cli, TRADEOFF[1]))
    assert g.points is None and len(g.curve.alpha) == 5


KAPPA = [
    ["kappa", "discrete", "--prior-size", "10"],
    ["kappa", "discrete", "--weights", "1,2,3"],
    ["kappa", "ball", "--dim", "10", "--eta", "0.5"],
    ["kappa", "gaussian", "--dim", "5", "--sigma", "1", "--eta", "0.5"],
    ["kappa", "pixels", "--dim", "100", "--delta", "0.1", "--rho", "0.9", "--levels", "256"],
    ["kappa", "pixels", "--dim", "100", "--delta", "0.1"],
]


@pytest.mark.parametrize("argv", KAPPA, ids=[" ".join(a[1:3]) for a in KAPPA])
def test_kappa_reads_back_and_a_missing_key_is_named(argv, cli):
    from rerokit.report.verdicts import VERDICTS, summary_for

    d = _printed(cli, argv)
    command = " ".join(argv[:2])
    r = KappaResult.from_dict(argv[1], d)
    assert r.to_dict() == d and list(r.to_dict()) == list(d)
    assert summary_for(command, d) == VERDICTS[command](d)
    _assert_each_missing_key_is_refused(lambda bad: KappaResult.from_dict(argv[1], bad), command, d, d)


def test_kappa_samples_reads_back(cli, tmp_path):
    import numpy as np

    path = tmp_path / "s.npy"
    np.save(path, np.repeat(np.arange(4.0), [5, 3, 1, 1]).reshape(-1, 1))
    d = _printed(cli, ["kappa", "samples", "--samples", str(path)])
    r = KappaResult.from_dict("samples", d)
    assert r.to_dict() == d
    assert r.extras["kappa_hat_plugin"] == 0.5  # the most frequent value, 5 of 10 samples
    with pytest.raises(ValueError, match="params must have the keys"):
        KappaResult(command="ball", prior="", params={"dim": 1}, kappa=1.0, log10_kappa=0.0, extras={})


MSE_RDP = [
    ["bound", "mse-rdp", "--epsilon", "1", "--dim", "10"],
    ["bound", "mse-rdp", "--epsilon", "0", "--dim", "3"],
    ["bound", "mse-rdp", "--epsilon", "1", "--diameter", "1,2,3"],
    ["bound", "mse-rdp", "--orders", "2,4,8", "--rdp", "0.5,1,2", "--diameter", "2", "--dim", "3"],
    ["bound", "mse-rdp", "--n", "100", "--lam", "0.1", "--noise-std", "1", "--dim", "5"],
    ["bound", "mse-rdp", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "100", "--dim", "4"],
]


@pytest.mark.parametrize("argv", MSE_RDP, ids=[str(i) for i in range(len(MSE_RDP))])
def test_mse_rdp_reads_back_and_a_missing_key_is_named(argv, cli):
    import json

    from rerokit.cli._common import _jsonable
    from rerokit.report.results import MseRdpBound
    from rerokit.report.verdicts import VERDICTS, summary_for

    d = _printed(cli, argv)
    r = MseRdpBound.from_dict(d)
    assert json.loads(json.dumps(_jsonable(r.to_dict()))) == d and list(r.to_dict()) == list(d)
    assert summary_for("bound mse-rdp", d) == VERDICTS["bound mse-rdp"](d)
    _assert_each_missing_key_is_refused(MseRdpBound.from_dict, "bound mse-rdp", d, [k for k in d if k != "note"])


def test_mse_rdp_is_guo_theorem_1(cli):
    from rerokit.report.results import MseRdpBound

    # Guo et al. 2022, Thm 1: MSE >= sum_i diam_i^2 / 4 / (e^eps - 1) / d per coordinate
    r = MseRdpBound.from_dict(_printed(cli, MSE_RDP[2]))
    assert r.diameter == (1.0, 2.0, 3.0) and r.dim == 3
    assert r.mse_lower_bound == pytest.approx((1 + 4 + 9) / 4 / (math.e - 1) / 3, rel=1e-12)
    r0 = MseRdpBound.from_dict(_printed(cli, MSE_RDP[1]))
    assert r0.mse_lower_bound == math.inf and r0.note.startswith("mse_lower_bound is inf")


GLM = [
    ["attack", "glm"],
    ["attack", "glm", "--noise", "0.01", "--draws", "3", "--seed", "1"],
    ["attack", "glm", "--model", "linear", "--classes", "0,1,2"],
]


@pytest.mark.parametrize("argv", GLM, ids=[str(i) for i in range(len(GLM))])
def test_glm_attack_reads_back_and_a_missing_key_is_named(argv, cli):
    from rerokit.report.results import GlmAttackOutput
    from rerokit.report.verdicts import VERDICTS, summary_for

    d = _printed(cli, argv)
    o = GlmAttackOutput.from_dict(d)
    assert o.to_dict() == d and list(o.to_dict()) == list(d)
    assert summary_for("attack glm", d) == VERDICTS["attack glm"](d)
    # the interval is over the targets reconstructed; the JSON's trials are all targets
    assert o.result.trials == o.targets - o.non_identifiable and d["trials"] == o.targets == o.settings.n
    _assert_each_missing_key_is_refused(GlmAttackOutput.from_dict, "attack glm", d,
                                        [k for k in d if k != "label_accuracy"])
    bad = dict(d, settings={k: v for k, v in d["settings"].items() if k != "model"})
    with pytest.raises(ValueError, match="'model'"):
        GlmAttackOutput.from_dict(bad)


def test_glm_attack_without_noise_is_exact(cli):
    from rerokit.report.results import GlmAttackOutput

    # Balle et al. 2022, Thm 1: without noise the closed form recovers every identifiable target
    o = GlmAttackOutput.from_dict(_printed(cli, GLM[0]))
    assert o.exact and o.mse_max < 1e-16 and o.label_accuracy == 1.0 and o.settings.model == "logistic"


def test_reconn_reads_back_and_a_missing_key_is_named(cli):
    from rerokit.report.results import ReconnOutput
    from rerokit.report.verdicts import VERDICTS, summary_for

    d = _printed(cli, ["attack", "reconn", "--shadow-models", "4", "--fixed-size", "20", "--targets", "3", "--epochs",
                       "2", "--reconstructor-epochs", "1", "--no-png", "--quiet"])
    o = ReconnOutput.from_dict(d)
    assert o.to_dict() == d and list(o.to_dict()) == list(d)
    assert summary_for("attack reconn", d) == VERDICTS["attack reconn"](d)
    assert o.success == (o.mse < o.nn_oracle_mse) and o.targets == 3 and o.png is None and o.noise_multiplier == 0.0
    _assert_each_missing_key_is_refused(ReconnOutput.from_dict, "attack reconn", d, d)


def test_analytic_attack_reads_back_and_a_missing_key_is_named(cli):
    from rerokit.report.results import AnalyticAttackOutput
    from rerokit.report.verdicts import VERDICTS, summary_for

    d = _printed(cli, ["attack", "analytic", "--noise-multiplier", "0.05", "--clip", "1", "--targets", "4", "--seed",
                       "3", "--rows", "3", "--mse-threshold", "0.05", "--no-progress", "--dataset", "synthetic"])
    o = AnalyticAttackOutput.from_dict(d)
    assert o.to_dict() == d and list(o.to_dict()) == list(d)
    assert summary_for("attack analytic", d) == VERDICTS["attack analytic"](d)
    assert list(o.means) == ["mse", "psnr", "ncc"]  # synthetic data: no SSIM
    assert o.means["mse"] == pytest.approx(sum(o.per_target["mse"]) / 4, rel=1e-12)
    # the measured success is the fraction of per-target MSEs at most the threshold
    assert o.empirical_success == sum(m <= 0.05 for m in o.per_target["mse"]) / 4
    _assert_each_missing_key_is_refused(AnalyticAttackOutput.from_dict, "attack analytic", d,
                                        [k for k in d if k not in ("mean_psnr", "ncc_undefined")])


UNINFORMED = [
    ["bound", "uninformed", "--noise-multiplier", "1", "--min-norm", "1", "--dim", "100", "--mse-threshold", "0.01"],
    ["bound", "uninformed", "--noise-multiplier", "0.5", "--min-norm", "2", "--dim", "10", "--mse-threshold", "0.5",
     "--clip", "1", "--steps", "100", "--sample-rate", "0.01"],
    ["bound", "uninformed", "--noise-multiplier", "0.5", "--min-norm", "0.5", "--dim", "10", "--mse-threshold", "0.5",
     "--clip", "1", "--releases", "3", "--prior", "ball", "--prior-scale", "1"],
    ["bound", "uninformed", "--noise-multiplier", "1e200", "--min-norm", "1e200", "--dim", "10", "--mse-threshold",
     "0.5", "--clip", "1e150"],
    ["bound", "uninformed", "--noise-multiplier", "0.3", "--dataset", "synthetic", "--psnr-threshold", "-4000",
     "--steps", "10", "--sample-rate", "0.1"],
]


@pytest.mark.parametrize("argv", UNINFORMED, ids=[str(i) for i in range(len(UNINFORMED))])
def test_uninformed_reads_back_and_a_missing_key_is_named(argv, cli):
    import json

    from rerokit.cli._common import _jsonable
    from rerokit.cli.bound_uninformed import summary
    from rerokit.report.results import UninformedOutput
    from rerokit.report.verdicts import VERDICTS, summary_for

    d = _printed(cli, argv)
    o = UninformedOutput.from_dict(d)
    assert json.loads(json.dumps(_jsonable(o.to_dict()))) == d and list(o.to_dict()) == list(d)
    assert summary_for("bound uninformed", d) == VERDICTS["bound uninformed"](d)
    assert summary(d).rows  # the command's own verdict reads it too
    optional = {"note", "expected_mse_data_independent", "log10_expected_mse", "log10_expected_mse_one_row",
                "log10_expected_mse_data_independent", "sampling_rate"}
    _assert_each_missing_key_is_refused(UninformedOutput.from_dict, "bound uninformed", d,
                                        [k for k in d if k not in optional])


def test_uninformed_overflow_and_law(cli):
    from rerokit.report.results import UninformedOutput

    o = UninformedOutput.from_dict(_printed(cli, UNINFORMED[3]))
    # sigma^2 r^2 / K = 1e800: shown as the largest double, its log10 exact
    assert o.expected_mse == 1.7976931348623157e308 and o.log10_overflow["expected_mse"] == pytest.approx(800.0)
    assert list(o.log10_overflow) == list(UninformedOutput.OVERFLOW_KEYS) and o.note.startswith("expected_mse, ")
    # Riess et al. 2024, Prop. 2: E[MSE] = sigma^2 r^2 / K
    o = UninformedOutput.from_dict(_printed(cli, UNINFORMED[2]))
    assert o.expected_mse == pytest.approx(0.25 * 0.25 / 3, rel=1e-12) and o.gamma_data_independent is None
    assert o.mse_threshold == 0.5 and o.metric == "mse" and o.psnr_threshold_db is None


DPSGD = [
    ["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "100", "--prior-size", "10"],
    ["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "100"],
    ["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "1", "--steps", "10", "--kappa", "0.01", "--method",
     "closed-form"],
    ["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "10", "--prior-size", "10",
     "--method", "mc", "--mc-samples", "1000", "--seed", "1"],
    ["bound", "dpsgd", "--noise-multiplier", "1e9", "--sample-rate", "0.01", "--steps", "10", "--prior-size", "10"],
    ["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.1", "--steps", "20", "--log10-kappa", "-400",
     "--sampler", "shuffle"],
    # a pixel-tolerance baseline (Hayes et al. 2023 App. I, MNIST): gamma below double range
    ["bound", "dpsgd", "--noise-multiplier", "1", "--sample-rate", "0.5", "--steps", "1", "--log10-kappa", "-472.015"],
]


@pytest.mark.parametrize("argv", DPSGD, ids=[str(i) for i in range(len(DPSGD))])
def test_dpsgd_reads_back_and_a_missing_key_is_named(argv, cli):
    from rerokit.report.results import DpsgdNoPriorOutput, DpsgdOutput
    from rerokit.report.verdicts import VERDICTS, summary_for

    d = _printed(cli, argv)
    cls = DpsgdOutput if "gamma" in d else DpsgdNoPriorOutput
    o = cls.from_dict(d)
    assert o.to_dict() == d and list(o.to_dict()) == list(d)
    assert summary_for("bound dpsgd", d) == VERDICTS["bound dpsgd"](d)
    optional = {"interval", "poisson_assumption", "epsilon_note", "log10_interval"}
    required = [k for k in d if k not in optional | ({"gamma"} if cls is DpsgdOutput else set())]
    _assert_each_missing_key_is_refused(cls.from_dict, "bound dpsgd", d, required)
    for part in ("settings", "certification", "details", "comparisons"):
        for key in [k for k in d.get(part, {}) if k not in ("note", "prior_size", "log10_kappa")]:
            bad = dict(d, **{part: {k: v for k, v in d[part].items() if k != key}})
            if part == "settings" and key not in ("noise_multiplier", "sample_rate", "steps"):
                continue  # the sampler's keys are Schedule.sampling_dict()'s, carried as they are
            with pytest.raises(ValueError, match=repr(key)):
                cls.from_dict(bad)


def test_dpsgd_carries_the_library_bound(cli):
    from rerokit.bounds.dpsgd import rero_dpsgd
    from rerokit.report.results import DpsgdOutput

    o = DpsgdOutput.from_dict(_printed(cli, DPSGD[0]))
    b = rero_dpsgd(1.0, 0.01, 100, log_kappa=-math.log(10))  # --prior-size 10
    assert o.gamma == pytest.approx(b.value, rel=1e-12) and o.interval == pytest.approx(b.interval, rel=1e-12)
    assert o.method == "exact" and o.prior_option == {"prior_size": 10}
    # the closed form at q = 1 (Hayes et al. 2023, Cor. 3): gamma = Phi(Phi^-1(kappa) + sqrt(T) / sigma)
    from statistics import NormalDist

    c = DpsgdOutput.from_dict(_printed(cli, DPSGD[2]))
    nd = NormalDist()
    assert c.gamma == pytest.approx(nd.cdf(nd.inv_cdf(0.01) + math.sqrt(10)), rel=1e-9)
    assert c.details == {"mu_gdp": pytest.approx(math.sqrt(10))}


def test_dpsgd_below_double_range_prints_the_log_bracket(cli):
    """Below 1e-300 the float interval is [0, 5e-324]; the JSON carries the certified bracket in log10
    (the library's log ends) and the verdict's row shows it."""
    from rerokit.bounds.dpsgd import rero_dpsgd
    from rerokit.report.format import fmt_bracket_log10
    from rerokit.report.results import DpsgdOutput
    from rerokit.report.verdicts import VERDICTS

    d = _printed(cli, DPSGD[-1])
    o = DpsgdOutput.from_dict(d)
    b = rero_dpsgd(1.0, 0.5, 1, log_kappa=-472.015 * math.log(10))
    lo, hi = b.extras["log_gamma_lower"] / math.log(10), b.extras["log_gamma"] / math.log(10)
    assert o.interval == (0.0, 5e-324) and o.log10_interval == pytest.approx((lo, hi), rel=1e-15)
    assert -473 < lo <= hi < -300 and hi - lo < 1e-6  # one step: the exact power, in logs
    rows = [r for r in VERDICTS["bound dpsgd"](d).rows if r.label.startswith("\u03b3:")]
    assert rows and rows[0].detail == fmt_bracket_log10(o.log10_interval) != ""
    # above double range nothing changes: no log10_interval in the JSON
    assert "log10_interval" not in _printed(cli, DPSGD[0])


def _documented_fields(argv) -> set[str]:
    """The top-level output fields the command's --help lists (its epilog)."""
    from rerokit.cli import build_parser

    groups = build_parser()._subparsers._group_actions[0].choices
    sub = groups[argv[0]]._subparsers._group_actions[0].choices[argv[1]]
    return {ln.split()[0].split(".")[0] for ln in (sub.epilog or "").splitlines()[1:]
            if ln.startswith("  ") and not ln.startswith("    ") and ln.strip()}


@pytest.mark.parametrize("argv", [a for a, _ in CASES] + KAPPA + MSE_RDP + UNINFORMED + DPSGD + GLM[:1],
                         ids=lambda a: " ".join(a[:4]))
def test_every_key_a_typed_result_writes_is_documented_in_help(argv, cli):
    d = cli.json(argv)
    assert set(d) <= _documented_fields(argv)
