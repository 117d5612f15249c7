"""``rerokit experiment fil-glm``: Guo et al. 2022 Fig. 3 (GLM attack MSE vs dFIL bound on digits 0 vs 1)."""

from __future__ import annotations


def register(sub) -> None:
    from rerokit.experiments.fil_glm import register_cli

    register_cli(sub)
