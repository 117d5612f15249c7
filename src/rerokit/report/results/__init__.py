"""The results of rerokit's commands (all but ``report``, ``audit`` and ``experiment``) as typed objects,
and their JSON.

Each class is the one declaration of what its command prints: the command (:mod:`rerokit.cli`)
builds it and prints :meth:`to_dict`; the command's verdict (:mod:`rerokit.report.verdicts`) reads
the printed JSON back with ``from_dict`` (its inverse), so a key renamed on one side is a
ValueError naming it on the other, not a silent ``None``. Where a library result already carries
the numbers it is reused: :class:`CalibrateOutput` wraps the
:class:`~rerokit.bounds.calibrate.CalibrationResult` of the calibration. Standard library only at
import (the ``bound`` commands start without numpy; the layer contracts let :mod:`rerokit.cli`
import :mod:`rerokit.report`, never the reverse).

JSON numbers: the CLI writes a non-finite float as the string ``"inf"`` / ``"-inf"`` (NaN as
``null``); ``from_dict`` reads such a string back as the float.
"""

from __future__ import annotations

from rerokit.report.results.attacks import AnalyticAttackOutput, GlmAttackOutput, GlmSettings, ReconnOutput
from rerokit.report.results.dpsgd import (CalibrateOutput, DpsgdComparisons, DpsgdNoPriorOutput, DpsgdOutput,
                                          TradeoffOutput, TradeoffPoint, TradeoffTable)
from rerokit.report.results.guarantees import ConversionBound, FanoBound, KappaResult, MseRdpBound
from rerokit.report.results.uninformed import UninformedOutput

__all__ = ["ConversionBound", "FanoBound", "KappaResult", "MseRdpBound", "DpsgdComparisons", "DpsgdOutput",
           "DpsgdNoPriorOutput", "TradeoffPoint", "TradeoffTable", "TradeoffOutput", "CalibrateOutput",
           "UninformedOutput", "GlmSettings", "GlmAttackOutput", "ReconnOutput", "AnalyticAttackOutput"]
