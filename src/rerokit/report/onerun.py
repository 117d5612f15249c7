"""The report's view of a one-run audit (``rerokit audit one-run``): words, table rows, tile.

A one-run audit (Steinke, Nasr & Jagielski 2023, "Privacy auditing with one (1) training run";
Mahloujifar, Melis & Chaudhuri 2025, "Auditing f-differential privacy in one run") trains ONE
model with m canary slots; the attacker guesses g of them (abstaining on the rest) and c guesses
are correct. What it proves is read from those counts, not from a success rate over independent
training runs, so the report says "canaries", "guesses" and "correct", never "trials", and
compares the run with what its certified trade-off curve implies for the game it played:

* the certified upper tail on the number of correct guesses under the run's own claimed curve
  (:class:`rerokit.bounds.onerun.ClaimCheck`): more correct guesses reject the claim;
* ``epsilon_lower`` / ``mu_lower`` (proven at the audit's confidence) against the certified
  epsilon / mu of the same neighbouring relation (add/remove for membership, replace-one for the
  reconstruction game with k > 2 candidates, as :func:`rerokit.bounds.onerun.one_run_bound`);
* the accuracy over all m slots (no abstention) against the certified per-slot success: the
  Bayes membership accuracy at prior 1/2 of the symmetrised add/remove curve (membership), or
  gamma at kappa = 1/k of Hayes et al. 2023, Thm 2 (reconstruction: the slot's candidate added to
  the rest of the run, every other slot known to the attacker - add/remove, the relation of that
  theorem; it bounds the one-run attacker too, who does not know the other slots). The same
  numbers as ``rero_gamma`` in the audit's JSON (the report's certified PLD bracket, upper end).
"""

from __future__ import annotations

from typing import Any, Mapping

from rerokit.report.format import Lead, Num, Sentence, fmt, fmt_bracket, num
from rerokit.report.model import MembershipFacts, OneRunView, PerSlotBound
from rerokit.report.terminal import Row

__all__ = ["one_run_view", "one_run_sentence", "one_run_rows", "one_run_tile", "claim_words"]


def one_run_view(one_run: Mapping[str, Any], membership: MembershipFacts, gamma: float,
                 gamma_interval: list[float]) -> OneRunView:
    """The numbers the report shows for a one-run audit, all taken from the audit's JSON.

    Args:
      one_run: the one-run audit's result (``rerokit audit one-run --json`` or its ``--out`` file).
      membership: the report's membership section (its certified Bayes accuracy at prior 1/2).
      gamma: the report's certified gamma at kappa = 1/k (Hayes et al. 2023, Thm 2, PLD).
      gamma_interval: its certified bracket.

    Returns:
      The :class:`~rerokit.report.model.OneRunView`: the game, the counts of the bound (``canaries``
      its slots, guesses, abstentions, correct and the accuracy over the guesses), how the number of
      guesses was chosen, the claim test (``claim_rejected``, ``correct_upper``), the proven and
      certified epsilon / mu, and the accuracy over all the run's ``slots`` (more than ``canaries``
      after a split) with the per-slot certified bound of that game.
    """
    # the audit file's JSON (read by rerokit.report.inputs): its optional parts may be missing
    b = one_run.get("bound") or {}
    claim = b.get("claim") or {}
    st = one_run.get("settings") or {}
    m, g, c, k = one_run["canaries"], one_run["guesses"], one_run["correct"], one_run["options"]
    m_all = st.get("canaries") or m  # a split selection bounds on a held-out half of the run's slots
    game = st.get("game") or ("membership" if k == 2 else "reconstruction")
    if game == "membership":
        per_slot = PerSlotBound(value=membership.bayes_accuracy, interval=tuple(membership.bayes_accuracy_interval),
                                name="Bayes membership accuracy at prior 1/2",
                                method="symmetrised add/remove f-DP curve, same PLD (1/2 + TV/2)")
    else:
        per_slot = PerSlotBound(value=gamma, interval=tuple(gamma_interval), name=f"\u03b3 at \u03ba = 1/{k}",
                                method="Hayes et al. 2023 Thm 2, add/remove PLD (every other slot known)")
    return OneRunView(
        game=game, threat=st.get("threat"), canaries=m, options=k, guesses=g,
        abstentions=m - g, correct=c, accuracy_guesses=(c / g) if g else None,
        selection=b.get("selection"), thresholds_tried=b.get("thresholds_tried"),
        confidence=b.get("confidence", 0.95), significance=b.get("significance"),
        method=b.get("method"), family=b.get("family"), adjacency=b.get("adjacency"),
        delta=b.get("delta"),
        # replace-one at q < 1: the bound and the certified value both use the add/remove epsilon
        epsilon_relation=("add/remove" if b.get("adjacency") != "replace_one" or st.get("sample_rate", 1.0) < 1.0
                          else "replace-one"),
        claim=claim.get("description"), claim_rejected=one_run.get("claim_rejected"),
        correct_upper=one_run.get("correct_upper"),
        epsilon_lower=one_run["epsilon_lower"], mu_lower=one_run["mu_lower"],
        certified_epsilon=one_run.get("certified_epsilon"), certified_mu=one_run.get("certified_mu"),
        slots=m_all, accuracy_all=one_run["accuracy_all"],
        accuracy_interval=tuple(one_run["accuracy_interval"]),
        per_slot_bound=per_slot,
    )


def _pct(p: float) -> str:
    return f"{fmt(100 * p, 3)}%"


def claim_words(v: OneRunView) -> str:
    """The verdict on the run's own claim, in words ("not rejected at 95%" / "REJECTED ...")."""
    conf = _pct(v.confidence)
    if v.claim_rejected is None:
        return "no claimed curve was tested (the audit was given no noise multiplier)"
    if v.claim_rejected:
        return "REJECTED: the run leaks more than its claim"
    return f"the run's own claimed curve is not rejected at {conf}"


def _relation(v: OneRunView) -> str:
    return "replace-one" if v.adjacency == "replace_one" else "add/remove"


def one_run_sentence(v: OneRunView) -> Sentence:
    """The audit's verdict sentence for a one-run audit.

    Args:
      v: :func:`one_run_view`'s :class:`~rerokit.report.model.OneRunView`.

    Returns:
      The sentence: the guesses made and correct, how their number was chosen, what the run proves
      at the stated confidence against the certified values, and the test of its own claim.
    """
    m, g, c = v.canaries, v.guesses, v.correct
    conf = _pct(v.confidence)
    held_out = f" (a held-out part of the run's {v.slots})" if m != v.slots else ""
    parts: list[Any] = [Lead(f"Audit (one training run, {v.threat or 'canary'} {v.game} game): "),
                        f"of {m} canary slots{held_out} the attack guessed ", num("audit_guesses", g),
                        f" (abstaining on {m - g}) and ", num("audit_correct", c), " were correct"]
    if g:
        acc = v.accuracy_guesses
        parts += [" (", Num("audit_guess_accuracy", acc, _pct(acc)), " of the guesses)"]
    parts += [f"; number of guesses: {v.selection}. At {conf} confidence the run proves \u03b5 \u2265 ",
              num("audit_epsilon_lower", v.epsilon_lower), f" (\u03b4 = {fmt(v.delta)}; certified \u2264 ",
              num("audit_certified_epsilon", v.certified_epsilon), f", {v.epsilon_relation}) and \u03bc \u2265 ",
              num("audit_mu_lower", v.mu_lower), " (certified ", num("audit_certified_mu", v.certified_mu),
              f", {_relation(v)})."]
    if v.claim_rejected is None:
        parts.append(f" Its own claim: {claim_words(v)}.")
    else:
        parts += [f" Its claimed curve ({v.claim}) allows at most ", num("audit_correct_upper", v.correct_upper),
                  f" correct of {g} guesses at {conf}: ", claim_words(v)]
        parts.append(" (check that it audited these settings)." if v.claim_rejected else ".")
    return tuple(parts)


def one_run_rows(v: OneRunView) -> list[Row]:
    """The audit's table rows for a one-run audit.

    Args:
      v: :func:`one_run_view`'s :class:`~rerokit.report.model.OneRunView`.

    Returns:
      Rows: guesses and correct, the claim's certified upper tail and its verdict, the all-slot
      accuracy against the per-slot bound of the game, and epsilon / mu proven against certified.
    """
    m, g, c = v.canaries, v.guesses, v.correct
    conf = _pct(v.confidence)
    ref = "Mahloujifar et al. 2025 Thm 3.1" if v.method == "fdp" else "Steinke et al. 2023 Thm 5.2"
    rows = [Row(f"Correct guesses ({g} guesses, {m - g} abstentions)",
                (num(None, c), f" of {g}") if g else "no guess",
                (f"accuracy {fmt(c / g)}" if g else ""), v.selection or "", "measured",
                section=f"Audit: one training run, {v.game} game, {v.slots} canary slots, "
                        f"k = {v.options}")]
    if v.claim_rejected is not None:
        rows.append(Row(f"Correct guesses its claimed curve allows ({conf})",
                        ("\u2264 ", num(None, v.correct_upper)),
                        v.claim or "", f"{ref}, at level {fmt(v.significance)}", "certified"))
        rows.append(Row("The run's own claim", "REJECTED" if v.claim_rejected else "not rejected", "",
                        claim_words(v), f"test ({conf})"))
    ps = v.per_slot_bound
    rows.append(Row(f"Accuracy over all {v.slots} slots (no abstention)", num(None, v.accuracy_all),
                    "95% CI " + fmt_bracket(v.accuracy_interval, 4), "Clopper-Pearson", "estimate"))
    rows.append(Row(f"Per-slot bound: {ps.name}", ("\u2264 ", num(None, ps.value)), fmt_bracket(ps.interval),
                    ps.method, "certified"))
    how = f"one-run bound ({ref.rsplit(' Thm', 1)[0]}), "
    rows.append(Row(f"\u03b5 proven by the run (\u03b4 = {fmt(v.delta)})",
                    ("\u2265 ", num(None, v.epsilon_lower)),
                    f"certified \u2264 {fmt(v.certified_epsilon)}", how + v.epsilon_relation,
                    f"empirical ({conf})"))
    rows.append(Row("\u03bc proven by the run", ("\u2265 ", num(None, v.mu_lower)),
                    f"certified {fmt(v.certified_mu)}", how + _relation(v), f"empirical ({conf})"))
    return rows


def one_run_tile(v: OneRunView) -> tuple[str, Sentence, Sentence]:
    """The audit tile of the HTML card for a one-run audit: correct of guesses, epsilon proven, claim."""
    claim = {None: "no claim tested", True: "own claim REJECTED", False: "own claim not rejected"}[v.claim_rejected]
    return (f"One-run audit ({v.game}, {v.slots} canaries)",
            (num(None, v.correct), f" of {v.guesses} guesses correct"),
            ("\u03b5 \u2265 ", num(None, v.epsilon_lower), f" ({_pct(v.confidence)}); {claim}"))
