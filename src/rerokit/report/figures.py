"""The report's figures: data first (every plotted number, also written as CSV), then matplotlib.

Each figure is a :class:`FigureData`: a name (file stem), a title, a caption, the table of every
plotted number (``columns``: name -> list, all of one length; written as ``name.csv`` beside
``name.png``) and a ``draw`` function that plots exactly those columns. The numbers come from the
report's own objects - the :class:`~rerokit.bounds.tradeoff.TradeoffCurve` of its risks (no
second PLD build), :meth:`~rerokit.report.build.Report.steps_series`, and the uninformed MSE law
of :mod:`rerokit.bounds.uninformed` - never from a second implementation.

matplotlib is imported only inside :func:`render_svg` / :func:`write_png` (Agg/SVG backends, no
display). SVG text is drawn as paths (no fonts needed), ids are prefixed per figure so that
several figures can be inlined in one page.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from rerokit.report.model import (
    BinomialAudit, DiscretePriorRow, OneRunAudit, OneRunProvenBounds, ProvenBounds, Skipped,
)

__all__ = ["FigureData", "FIGURE_NAMES", "figures", "render_svg", "write_png", "PALETTE"]

FIGURE_NAMES = ("gamma_vs_kappa", "over_steps", "tradeoff", "uninformed_mse_cdf", "audit")
"""File stems of the figures (``name.png`` and ``name.csv`` in ``--png DIR``), in the card's order."""

# Okabe-Ito: distinguishable with the common colour-vision deficiencies, readable in print
KAPPA_MIN = 1e-8
"""Smallest baseline kappa on the gamma-vs-kappa figure (smaller baselines are named in its caption)."""

FONT_PT = 10
"""The one font size (points) of every text in every figure (titles, labels, ticks, legends, notes)."""

CARD_FONT_PX = 13
"""Rendered size (CSS px) of that font in the HTML card: each inline SVG gets the width at which
FONT_PT points show as this many pixels, so all figures share one text size (narrower screens
scale them down together, up to their container's width)."""

PALETTE = {"blue": "#0072B2", "orange": "#E69F00", "green": "#009E73", "red": "#D55E00", "purple": "#CC79A7",
           "sky": "#56B4E9", "grey": "#6b6b6b", "black": "#000000"}


@dataclass
class FigureData:
    """One figure: ``name`` (file stem), ``title``, ``caption`` (plain text), ``columns`` (every
    plotted number, equal-length lists; CSV), ``draw(fig, columns)`` plots them."""

    name: str
    title: str
    caption: str
    columns: dict[str, list]
    draw: Callable[[Any, dict[str, list]], None]
    size: tuple[float, float] = (6.4, 4.0)

    def csv_text(self) -> str:
        """The columns as CSV (header row; empty cells for missing values)."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        keys = list(self.columns)
        w.writerow(keys)
        n = max((len(v) for v in self.columns.values()), default=0)
        for i in range(n):
            row = []
            for k in keys:
                v = self.columns[k][i] if i < len(self.columns[k]) else None
                row.append("" if v is None or (isinstance(v, float) and math.isnan(v)) else
                           (repr(float(v)) if isinstance(v, (float, np.floating)) else v))
            w.writerow(row)
        return buf.getvalue()


# --------------------------------------------------------------------------- data


def _gamma_vs_kappa(rep: Any) -> FigureData:
    d = rep.sections
    ref = d.options.reference_prior_size
    curve = rep.risks[f"prior_{ref}"].curve
    kap = np.logspace(math.log10(KAPPA_MIN), 0, 81)
    br = curve.tpr_at_fpr(kap)
    cols: dict[str, list] = {"kappa": kap.tolist(), "gamma_lower": np.asarray(br.lower).tolist(),
                             "gamma_upper": np.asarray(br.upper).tolist(), "marker": [""] * kap.size}
    marks = []
    for k, e in d.informed.items():
        if e.kappa >= KAPPA_MIN:
            marks.append((e.prior_size if isinstance(e, DiscretePriorRow) else None, e.kappa, e.gamma,
                          e.gamma_interval))
    for n, k, g, iv in marks:
        cols["kappa"].append(k)
        cols["gamma_lower"].append(iv[0])
        cols["gamma_upper"].append(g)
        cols["marker"].append(f"prior of {n}")
    pix = d.pixel_tolerance

    def draw(fig: Any, c: dict[str, list]) -> None:
        ax = fig.add_subplot(111)
        n = kap.size
        x, lo, hi = np.array(c["kappa"][:n]), np.array(c["gamma_lower"][:n]), np.array(c["gamma_upper"][:n])
        ax.fill_between(x, lo, hi, color=PALETTE["blue"], alpha=0.25, lw=0, label="certified bracket")
        ax.plot(x, hi, color=PALETTE["blue"], lw=2, label="\u03b3 (certified upper bound)")
        ax.plot(x, x, color=PALETTE["grey"], lw=1, ls="--", label="\u03b3 = \u03ba (model leaks nothing)")
        shapes = "osD^v"
        for i, (pn, k, g, _) in enumerate(marks):
            ax.plot([k], [g], shapes[i % len(shapes)], color=PALETTE["orange"], ms=8, mec=PALETTE["black"], mew=0.8,
                    zorder=5, label=f"prior of {pn}: \u03b3 \u2264 {g:.4g}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(KAPPA_MIN, 1.0)
        ax.set_ylim(max(KAPPA_MIN, float(np.min(hi[hi > 0])) / 2 if np.any(hi > 0) else KAPPA_MIN), 1.5)
        ax.set_xlabel("baseline \u03ba: success of a blind guess (1/number of candidates)")
        ax.set_ylabel("\u03b3: bound on reconstruction success")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(loc="lower right", framealpha=0.9)

    cap = ("The certified bound \u03b3 on an informed adversary's reconstruction success for every baseline \u03ba "
           "(Hayes et al. 2023, Thm 2), with its certified bracket; the dashed line is a model that leaks nothing. "
           "Dots: priors of 2, 10 and 100 equally likely candidates.")
    if pix is not None:
        from rerokit.report.format import fmt, fmt_log10

        cap += (f" Off the chart: any {'x'.join(map(str, pix.data_shape))} image within 32/256 per pixel, "
                f"\u03ba = {fmt_log10(pix.log10_kappa)}, \u03b3 \u2264 {fmt(pix.gamma)}.")
    return FigureData("gamma_vs_kappa", "Reconstruction bound \u03b3 against the baseline \u03ba", cap, cols, draw)


def _over_steps(rep: Any) -> FigureData:
    s = rep.steps_series()
    sizes = rep.sections.options.prior_sizes
    cols = dict(s)
    colors = [PALETTE["red"], PALETTE["blue"], PALETTE["green"], PALETTE["purple"], PALETTE["sky"]]

    def draw(fig: Any, c: dict[str, list]) -> None:
        ax = fig.add_subplot(111)
        for i, n in enumerate(sizes):
            ax.plot(c["step"], c[f"gamma_prior_{n}"], "-", color=colors[i % len(colors)], lw=2,
                    label=f"\u03b3, prior of {n}")
            ax.axhline(1.0 / n, color=colors[i % len(colors)], lw=0.8, ls=":")
        ax.set_xlabel("training step")
        ax.set_ylabel("\u03b3: bound on reconstruction success")
        ax.set_ylim(0, 1.02)
        ax.grid(True, alpha=0.3)
        ax2 = ax.twinx()
        ax2.plot(c["step"], c["epsilon"], "--", color=PALETTE["black"], lw=1.5,
                 label=f"\u03b5 at \u03b4 = {rep.sections.delta:g} (right axis)")
        ax2.set_ylabel(f"\u03b5 at \u03b4 = {rep.sections.delta:g}")
        ax2.set_ylim(0, max(c["epsilon"]) * 1.1 if max(c["epsilon"]) > 0 else 1)
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, loc="upper left", framealpha=0.9)

    cap = (f"\u03b3 (priors of {', '.join(map(str, sizes))}; dotted: their blind guesses 1/n) and \u03b5 after each "
           f"number of steps of this run ({len(s['step'])} points, each from the same certified computation as the "
           "final numbers).")
    return FigureData("over_steps", "Risk over training", cap, cols, draw)


def _tradeoff(rep: Any) -> FigureData:
    from rerokit.bounds.conversions import log_gdp_power

    d = rep.sections
    ref = d.options.reference_prior_size
    curve = rep.risks[f"prior_{ref}"].curve
    pts = curve.curve(n_points=160, alpha_min=1e-6)
    a = pts.alpha
    tpr_lo = 1.0 - np.asarray(pts.beta_upper)
    tpr_hi = 1.0 - np.asarray(pts.beta_lower)
    mu = d.gdp.mu
    gdp = [math.exp(log_gdp_power(mu, math.log(x))) if math.isfinite(mu) else 1.0 for x in a]
    cols = {"fpr": a.tolist(), "tpr_lower": tpr_lo.tolist(), "tpr_upper": tpr_hi.tolist(), "tpr_gdp": gdp}
    which = ("\u03bc-GDP, exact for this full-batch run" if d.gdp.exact else
             f"\u03bc-GDP with the \u03bc-equivalent at \u03ba = 1/{ref}")

    def draw(fig: Any, c: dict[str, list]) -> None:
        x, lo, hi, g = (np.array(c[k]) for k in ("fpr", "tpr_lower", "tpr_upper", "tpr_gdp"))
        for j, log in enumerate((False, True)):
            ax = fig.add_subplot(1, 2, j + 1)
            ax.fill_between(x, lo, hi, color=PALETTE["blue"], alpha=0.3, lw=0, label="certified band")
            ax.plot(x, hi, color=PALETTE["blue"], lw=2, label="TPR bound (DP-SGD)")
            ax.plot(x, g, color=PALETTE["orange"], lw=1.5, ls="--", label=f"{which} (\u03bc = {mu:.3g})")
            ax.plot(x, x, color=PALETTE["grey"], lw=1, ls=":", label="random guess")
            if log:
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_xlim(1e-6, 1)
                ax.set_ylim(1e-6, 1.2)
                ax.set_title("log scale")
            else:
                ax.set_xlim(0, 1)
                ax.set_ylim(0, 1)
                ax.set_title("linear scale")
                ax.legend(loc="lower right", framealpha=0.9)
            ax.set_xlabel("false-positive rate (FPR, \u03b1)")
            ax.set_ylabel("true-positive rate (TPR)")
            ax.grid(True, alpha=0.3)

    cap = ("The f-DP trade-off curve of this run: no membership test reaches a true-positive rate above the blue "
           "line at any false-positive rate (certified band from one privacy-loss distribution; its width is the "
           f"numerical error). Dashed: the Gaussian-DP curve of the same \u03bc ({which}) for reference.")
    return FigureData("tradeoff", "Membership inference: trade-off curve", cap, cols, draw, size=(9.0, 4.0))


def _uninformed(rep: Any) -> FigureData | None:
    u = rep.sections.uninformed
    if isinstance(u, Skipped):
        return None
    from rerokit.bounds import uninformed as U

    e_mse = u.expected_mse
    eta = np.logspace(math.log10(min(u.mse_threshold, e_mse) / 100), math.log10(max(u.mse_threshold, e_mse) * 10),
                      81)
    one = np.asarray(U.mse_cdf(eta, u.noise_multiplier, u.min_norm, u.dim), dtype=float)
    cols: dict[str, list] = {"mse_threshold": eta.tolist(), "p_one_release": one.tolist()}
    if u.gamma_over_steps is not None:
        cols["p_all_steps"] = [U.mse_rero_over_steps(float(x), u.noise_multiplier, u.dim, u.steps,
                                                     u.sampling_rate, min_norm=u.min_norm).value for x in eta]

    def draw(fig: Any, c: dict[str, list]) -> None:
        ax = fig.add_subplot(111)
        ax.plot(c["mse_threshold"], c["p_one_release"], color=PALETTE["blue"], lw=2, label="one release")
        if "p_all_steps" in c:
            ax.plot(c["mse_threshold"], c["p_all_steps"], color=PALETTE["red"], lw=2, ls="--",
                    label=f"all {u.steps} steps averaged")
        ax.axvline(u.mse_threshold, color=PALETTE["grey"], lw=1, ls=":",
                   label=f"\u03b7 = {u.mse_threshold:g} (PSNR {u.psnr_threshold_db:.3g} dB)")
        ax.axvline(e_mse, color=PALETTE["green"], lw=1, ls="-.", label=f"expected MSE, one release = {e_mse:.3g}")
        ax.set_xscale("log")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("MSE threshold \u03b7 (per coordinate, data units\u00b2)")
        ax.set_ylabel("P(MSE \u2264 \u03b7): reconstruction success")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right", framealpha=0.9)

    cap = (f"Uninformed gradient inversion (Riess et al. 2024, Thm 2): the exact law of the optimal unbiased attack's MSE "
           f"(an attack law, not a bound on every attacker), "
           f"(\u03c3\u00b2 r\u00b2 / N) \u03c7\u00b2_N with \u03c3 = {u.noise_multiplier:.4g}, r = {u.min_norm:.4g}"
           f" ({'assumed = C' if u.min_norm_source.startswith('clip') else 'given'}), N = {u.dim}.")
    return FigureData("uninformed_mse_cdf", "Uninformed adversary: MSE of the optimal unbiased gradient inversion", cap, cols, draw)


def _audit(rep: Any) -> FigureData | None:
    au = rep.sections.audit
    if au is None:
        return None
    if isinstance(au, OneRunAudit):
        return _one_run_audit(au)
    lb = au.lower_bounds if isinstance(au, BinomialAudit) else None  # a mean audit proves nothing
    names = ["success", "gamma", "kappa"]
    vals = [au.success, au.gamma, au.kappa]
    lows = [au.interval[0], au.gamma_interval[0], au.kappa]
    highs = [au.interval[1], au.gamma_interval[1], au.kappa]
    if lb:
        names += ["epsilon_lower", "epsilon_certified", "mu_lower", "mu_certified"]
        vals += [lb.epsilon_lower, au.certified_epsilon, lb.mu_gdp_lower, au.certified_mu]
        lows += [None] * 4
        highs += [None] * 4
    cols = {"quantity": names, "value": vals, "lower": lows, "upper": highs}

    def draw(fig: Any, c: dict[str, list]) -> None:
        ax = fig.add_subplot(1, 2 if lb else 1, 1)
        s, lo, hi = au.success, au.interval[0], au.interval[1]
        ax.errorbar([0], [s], yerr=[[s - lo], [hi - s]], fmt="o", color=PALETTE["black"], capsize=8, ms=8,
                    label="measured success (95% CI)")
        ax.axhline(au.gamma, color=PALETTE["red"], lw=2, label=f"certified bound \u03b3 = {au.gamma:.3g}")
        ax.axhline(au.kappa, color=PALETTE["grey"], lw=1.5, ls="--", label=f"blind guess \u03ba = {au.kappa:.3g}")
        ax.set_xlim(-1, 1)
        ax.set_xticks([0])
        ax.set_xticklabels([f"{au.attack}, {au.trials} trials"])
        ax.set_ylim(0, min(1.05, max(hi, au.gamma) * 1.35 + 0.02))
        ax.set_ylabel("probability of reconstructing the target")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(loc="upper left", framealpha=0.9)
        ax.set_title("attack against the bound")
        if lb:
            _draw_proven(fig.add_subplot(1, 2, 2), au, lb, "proven by the audit (95%, lower bound)")

    cap = (f"Audit ({au.attack} attack, {au.trials} trials): measured success with its exact Clopper-Pearson "
           "interval against the certified bound \u03b3 at the audit's baseline \u03ba"
           + ("; right: the privacy parameters the audit proves (one-sided 95% Clopper-Pearson lower end; "
              "Jagielski et al. 2020) next to the certified ones - the truth lies between." if lb else "."))
    return FigureData("audit", "Audit against the bound", cap, cols, draw, size=(9.0, 4.0) if lb else (6.4, 4.0))


def _draw_proven(ax: Any, au: BinomialAudit | OneRunAudit, lb: ProvenBounds | OneRunProvenBounds,
                 label: str) -> None:
    """epsilon and mu proven by an audit (bars) against the certified ones (ticks)."""
    y = [1, 0]
    lows_ = [lb.epsilon_lower, lb.mu_gdp_lower]
    cert = [au.certified_epsilon, au.certified_mu]
    ax.barh(y, lows_, color=PALETTE["orange"], height=0.45, label=label)
    ax.plot(cert, y, "|", color=PALETTE["blue"], ms=26, mew=3, label="certified (upper bound)")
    for yy, lo_, ce in zip(y, lows_, cert):
        ax.annotate(f"{lo_:.3g} \u2264 \u00b7 \u2264 {ce:.3g}", (ce, yy), textcoords="offset points", xytext=(6, -3))
    ax.set_yticks(y)
    ax.set_yticklabels([f"\u03b5 (\u03b4 = {au.certified_epsilon_delta:g})",
                        "\u03bc" + (" (GDP)" if au.certified_mu_kind == "mu_gdp" else " (equivalent)")])
    ax.set_xlim(0, max(cert + lows_) * 1.45 + 1e-9)
    ax.set_ylim(-0.7, 2.4)
    ax.set_xlabel("privacy parameter")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="upper right", framealpha=0.9, markerscale=0.5)
    ax.set_title("what the audit proves")


def _one_run_audit(au: OneRunAudit) -> FigureData:
    """A one-run audit: correct guesses against the claimed curve's certified upper tail, the
    all-slot accuracy against the game's per-slot bound, epsilon / mu proven against certified."""
    v, lb = au.one_run_view, au.lower_bounds
    g, c, cu = v.guesses, v.correct, v.correct_upper
    ps = v.per_slot_bound
    conf = f"{100 * v.confidence:.3g}%"
    acc_g = c / g if g else None
    tail = cu / g if (g and cu is not None) else None
    cols = {"quantity": ["accuracy_guesses", "claim_correct_upper_fraction", "accuracy_all", "per_slot_bound",
                         "kappa", "epsilon_lower", "epsilon_certified", "mu_lower", "mu_certified"],
            "value": [acc_g, tail, v.accuracy_all, ps.value, au.kappa, v.epsilon_lower,
                      v.certified_epsilon, v.mu_lower, v.certified_mu],
            "lower": [None, None, v.accuracy_interval[0], ps.interval[0], au.kappa] + [None] * 4,
            "upper": [None, None, v.accuracy_interval[1], ps.interval[1], au.kappa] + [None] * 4}

    def draw(fig: Any, c_: dict[str, list]) -> None:
        ax = fig.add_subplot(1, 2, 1)
        if acc_g is not None:
            ax.plot([0], [acc_g], "o", color=PALETTE["black"], ms=8, label=f"correct / guesses ({c} of {g})")
        if tail is not None:
            ax.hlines(tail, -0.35, 0.35, color=PALETTE["red"], lw=2.5,
                      label=f"claimed curve allows \u2264 {cu} of {g} ({conf})")
        a, (lo, hi) = v.accuracy_all, v.accuracy_interval
        ax.errorbar([1], [a], yerr=[[a - lo], [hi - a]], fmt="s", color=PALETTE["blue"], capsize=8, ms=7,
                    label=f"accuracy, all {v.slots} slots (95% CI)")
        ax.hlines(ps.value, 0.65, 1.35, color=PALETTE["purple"], lw=2.5, label=f"per-slot bound: {ps.name}")
        ax.axhline(au.kappa, color=PALETTE["grey"], lw=1.5, ls="--", label=f"blind guess 1/{v.options}")
        ax.set_xlim(-0.7, 1.7)
        ax.set_xticks([0, 1])
        ax.set_xticklabels([f"{g} guesses", f"all {v.slots} canaries"])
        ax.set_ylim(0, 1.85)  # room above 1 for the legend
        ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
        ax.set_ylabel("fraction correct")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(loc="upper left", framealpha=0.9)
        ax.set_title(f"one training run, {v.game} game")
        _draw_proven(fig.add_subplot(1, 2, 2), au, lb, f"proven by the run ({conf}, lower bound)")

    verdict = {None: "no claim tested", True: "REJECTED", False: "not rejected"}[v.claim_rejected]
    cap = (f"One-run audit ({v.game} game, {v.slots} canary slots of one training run, k = {v.options}): "
           f"left, {c} correct of {g} guesses against the most its claimed curve allows at {conf} "
           f"({verdict}; guesses chosen: {v.selection}), and the "
           f"accuracy over all slots against the certified per-slot bound ({ps.method}); right, the \u03b5 and "
           f"\u03bc the run proves (Mahloujifar et al. 2025) next to the certified ones - the truth lies between.")
    return FigureData("audit", "One-run audit against the certified curve", cap, cols, draw, size=(9.0, 4.0))


def figures(rep: Any) -> list[FigureData]:
    """Every figure of the report, in the card's order (audit and uninformed only when present).

    Args:
      rep: the :class:`~rerokit.report.build.Report`.

    Returns:
      The :class:`FigureData` list.
    """
    def make() -> list[FigureData]:
        out = [_gamma_vs_kappa(rep), _over_steps(rep), _tradeoff(rep)]
        return out + [f for f in (_uninformed(rep), _audit(rep)) if f is not None]

    return rep.memo("figures", make)


# --------------------------------------------------------------------------- rendering


def _figure(fd: FigureData):
    import matplotlib
    from matplotlib.figure import Figure  # no pyplot: no backend is selected, no window opens

    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "rerokit", "font.size": FONT_PT,
                                "axes.titlesize": FONT_PT, "axes.labelsize": FONT_PT, "legend.fontsize": FONT_PT,
                                "xtick.labelsize": FONT_PT, "ytick.labelsize": FONT_PT, "figure.titlesize": FONT_PT,
                                "figure.dpi": 100}):
        fig = Figure(figsize=fd.size, layout="constrained")
        fd.draw(fig, fd.columns)
    return fig


def render_svg(fd: FigureData, prefix: str) -> str:
    """The figure as an inline ``<svg>`` element (no XML prolog; ids prefixed with ``prefix``;
    scales to its container).

    Args:
      fd: the figure.
      prefix: id prefix, unique within the page (letters, digits, '-').

    Returns:
      The SVG markup.
    """
    import matplotlib

    fig = _figure(fd)
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "rerokit"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    s = buf.getvalue()
    s = s[s.index("<svg"):]
    s = re.sub(r"<metadata>.*?</metadata>\s*", "", s, count=1, flags=re.S)  # RDF block: namespace URLs only
    s = re.sub(r'\sid="([^"]+)"', lambda m: f' id="{prefix}-{m.group(1)}"', s)
    s = re.sub(r'url\(#([^)]+)\)', lambda m: f"url(#{prefix}-{m.group(1)})", s)
    s = re.sub(r'xlink:href="#([^"]+)"', lambda m: f'xlink:href="#{prefix}-{m.group(1)}"', s)
    # one text size across figures: the width at which FONT_PT points render as CARD_FONT_PX pixels (the
    # viewBox is in points and keeps the aspect ratio; max-width lets a narrow screen scale it down)
    m = re.search(r'<svg[^>]*?\swidth="([0-9.]+)pt"', s)
    css_w = float(m.group(1)) * CARD_FONT_PX / FONT_PT if m else None
    s = re.sub(r'<svg([^>]*?)\swidth="[^"]*"\sheight="[^"]*"', r'<svg\1', s, count=1)
    if css_w is not None:
        s = s.replace("<svg", f'<svg style="width: {css_w:.0f}px; max-width: 100%; height: auto; fill: currentColor"', 1)
    # dark mode: black ink (explicit, or SVG's default fill of text glyphs: the root's fill) follows the
    # page's text colour; white backgrounds take the card's colour
    s = re.sub(r"#000000\b", "currentColor", s)
    s = re.sub(r"fill:\s*#ffffff\b", "fill: var(--card, #ffffff)", s)
    s = s.replace("<svg", f'<svg role="img" aria-labelledby="{prefix}-title"', 1)
    s = re.sub(r"(<svg[^>]*>)", lambda m: m.group(1) + f'<title id="{prefix}-title">{_esc(fd.title)}</title>', s,
               count=1)
    return s


def _esc(s: str) -> str:
    import html

    return html.escape(s, quote=True)


def write_png(rep: Any, directory: Any) -> list[str]:
    """Write each figure of the report as ``name.png`` with ``name.csv`` (its plotted numbers) beside it.

    Args:
      rep: the :class:`~rerokit.report.build.Report`.
      directory: folder (created if missing).

    Returns:
      The paths written, PNG then CSV for each figure.
    """
    d = os.fspath(directory)
    os.makedirs(d, exist_ok=True)
    out = []
    for fd in figures(rep):
        fig = _figure(fd)
        png = os.path.join(d, fd.name + ".png")
        fig.savefig(png, dpi=150, facecolor="white", metadata={"Software": None})
        csv_path = os.path.join(d, fd.name + ".csv")
        with open(csv_path, "w", encoding="utf-8", newline="") as f:
            f.write(fd.csv_text())
        out += [png, csv_path]
    return out
