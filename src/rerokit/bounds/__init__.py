"""Pure-math bounds on reconstruction (numpy/scipy/dp-accounting; never imports torch).

Submodules: ``priors`` (baseline kappa), ``conversions`` (DP/RDP/zCDP/GDP -> ReRo and back),
``dpsgd`` (Hayes et al. 2023 DP-SGD ReRo bound), ``fano`` (Guo et al. 2022b), ``calibrate``,
``uninformed`` (papers 001/004), ``mse`` (Guo et al. 2022).
"""

from rerokit.bounds.types import Bound

__all__ = ["Bound"]
