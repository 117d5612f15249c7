"""Pure-math bounds on reconstruction (numpy/scipy/dp-accounting; never imports torch).

Submodules: ``priors`` (baseline kappa), ``conversions`` (DP/RDP/zCDP/GDP -> ReRo and back),
``dpsgd`` (Hayes et al. 2023 DP-SGD ReRo bound), ``fano`` (Guo et al. 2022b), ``calibrate``,
``uninformed`` (papers 001/004), ``mse`` (Guo et al. 2022), ``tradeoff`` (the certified DP-SGD
trade-off curve: membership, attribute and reconstruction risk; Kulynych et al. 2025),
``empirical`` (audit lower bounds on mu-GDP / (eps, delta)), ``onerun`` and ``onerun_scores``
(one-run audits: Steinke et al. 2023; Mahloujifar et al. 2025).
"""

from rerokit.bounds.types import Bound

__all__ = ["Bound"]
