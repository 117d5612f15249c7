"""Where practitioners train: callbacks that log and limit the certified risk of a DP-SGD run.

* :class:`rerokit.integrations.transformers.RiskCallback` - a Hugging Face ``TrainerCallback``;
* :class:`rerokit.integrations.lightning.RiskCallback` - a PyTorch Lightning ``Callback``.

Both count optimizer steps (not gradient-accumulation substeps), log gamma for the chosen prior,
the membership TPR bound at 1% FPR and epsilon (``privacy/gamma``, ``privacy/tpr_at_fpr_1pct``,
``privacy/epsilon``) to whatever tracker the trainer reports to, stop training before a step
would exceed ``max_gamma`` / ``max_tpr`` / ``max_epsilon``, and write the HTML risk card at the
end (``card=PATH``). The run comes from an Opacus accountant (``run=privacy_engine``) or from
explicit settings (``noise_multiplier=``, ``sample_rate=``, ``sampler="poisson"``).

Install with ``pip install "rerokit[torch,integrations]"``. This package imports nothing itself:
each sub-module imports its framework.
"""
