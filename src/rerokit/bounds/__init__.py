"""Pure-math bounds on reconstruction (numpy/scipy/dp-accounting; never imports torch).

Submodules: ``priors`` (baseline kappa), ``conversions`` (DP/RDP/zCDP/GDP -> ReRo and back),
``dpsgd`` (Hayes et al. 2023 DP-SGD ReRo bound), ``fano`` (Guo et al. 2022b), ``calibrate``,
``uninformed`` (Riess et al. 2024), ``mse`` (Guo et al. 2022), ``tradeoff`` (the certified DP-SGD
trade-off curve: membership, attribute and reconstruction risk; Kulynych et al. 2025),
``empirical`` (audit lower bounds on mu-GDP / (eps, delta)), ``laplace`` (exact ReRo of the Laplace
mechanism, the pure-DP curve), ``information_flow`` (finite-support bound, Balle et al. 2022
Sec. VII-F), ``fano_mc`` (Monte Carlo mutual information, Hayes et al. 2023 Table 2),
``uninformed_metrics`` (expected PSNR, sample-NCC law, NMI of the analytic attack), ``onerun`` and ``onerun_scores``
(one-run audits: Steinke et al. 2023; Mahloujifar et al. 2025).

Parameter objects (frozen dataclasses, validated when built): ``Sampling`` (how batches are formed,
the unit of privacy), ``Numerics`` / ``MonteCarlo`` / ``Comparisons`` (``rero_dpsgd``'s numerical
settings, Monte Carlo estimate and what it reports beside gamma), ``SearchRange`` (the range of a
calibration search). ``DpsgdDetails`` is the typed view of what ``rero_dpsgd`` reports beside gamma.
"""

from rerokit.bounds.dpsgd_details import DpsgdDetails
from rerokit.bounds.options import Comparisons, MonteCarlo, Numerics
from rerokit.bounds.schedule import Sampling, Schedule
from rerokit.bounds.solve import SearchRange
from rerokit.bounds.types import Bound

__all__ = ["Bound", "Comparisons", "DpsgdDetails", "MonteCarlo", "Numerics", "Sampling", "Schedule", "SearchRange"]
