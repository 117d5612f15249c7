"""rerokit: reconstruction-risk bounds and matching attacks for DP training.

Importing the package is cheap; sub-packages are imported on demand. ``rerokit.bounds`` and
``rerokit.accounting`` are pure numpy/scipy/dp-accounting and never import torch.
"""

__version__ = "0.1.0"
