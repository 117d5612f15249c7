"""Parameter objects of :func:`rerokit.report.build.build_report`: the data and the card.

::

    from rerokit.report import DataDescription, ReportSettings, build_report
    rep = build_report(noise_multiplier=1.0, sample_rate=0.01, steps=1000,
                       data=DataDescription(data_shape="1x28x28", clip=1.0),
                       settings=ReportSettings(label="mnist-cnn", prior_sizes=(10, 100)))

Every field is validated when the object is built: a bad value raises ``ValueError`` (or
``TypeError`` for a wrong type) whose message names the field and its valid range. Never imports
torch, numpy only through the data-shape parser's module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rerokit._validate import check_int, check_positive
from rerokit.report.inputs import parse_data_shape

__all__ = ["DataDescription", "ReportSettings", "DEFAULT_PRIOR_SIZES", "DEFAULT_MSE_THRESHOLD"]

DEFAULT_PRIOR_SIZES = (2, 10, 100)
"""Prior sizes of the informed adversary (n equally likely candidates: kappa = 1/n)."""

DEFAULT_MSE_THRESHOLD = 0.01
"""MSE threshold eta of the uninformed adversary (PSNR >= 20 dB on data in [0, 1])."""


@dataclass(frozen=True)
class DataDescription:
    """What the report knows about the training data (every field optional).

    Attributes:
      data_shape: the shape of one record, e.g. ``"1x28x28"`` or ``(3, 32, 32)`` (1 to 4 positive
        sizes, product <= 1e8); stored as a tuple of ints. It gives the data dimension of the pixel
        prior and of the uninformed adversary. None (default): the audited dataset's shape, if any.
      dataset_size: the number of training records N, an integer >= 1 (shows the expected batch qN
        and the epochs Tq; warns when delta >= 1/N); None: not shown.
      clip: the clipping norm C > 0; None: the audit's, if any.
      min_norm: the smallest non-zero L2 norm r > 0 of a record (Riess et al.'s uninformed bound);
        None: r = C, i.e. assume every record has norm >= C.
      diameter: the per-coordinate diameter > 0 of the data space for Guo et al.'s MSE bound (e.g. 1
        for pixels in [0, 1]); None leaves that bound out.
      mse_threshold: eta > 0 of P(MSE <= eta), the uninformed adversary's success (default 0.01).
      data_range: the data range R > 0 of the PSNR reading of eta, 10 log10(R^2 / eta) dB (default 1).

    Raises:
      ValueError: if a field is out of range or not finite.
      TypeError: if a field has the wrong type.
    """

    data_shape: Any = None
    dataset_size: int | None = None
    clip: float | None = None
    min_norm: float | None = None
    diameter: float | None = None
    mse_threshold: float = DEFAULT_MSE_THRESHOLD
    data_range: float = 1.0

    def __post_init__(self) -> None:
        if self.data_shape is not None:
            object.__setattr__(self, "data_shape", parse_data_shape(self.data_shape))
        if self.dataset_size is not None:
            object.__setattr__(self, "dataset_size", check_int("dataset_size", self.dataset_size, minimum=1))
        for name in ("clip", "min_norm", "diameter"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, check_positive(name, getattr(self, name)))
        object.__setattr__(self, "mse_threshold", check_positive("mse_threshold", self.mse_threshold))
        object.__setattr__(self, "data_range", check_positive("data_range", self.data_range))


@dataclass(frozen=True)
class ReportSettings:
    """How the report is titled and which informed adversaries it shows.

    Attributes:
      label: a title for the card (e.g. the model's name), a string; shown escaped. None: no title.
      source: where the run came from (e.g. "opacus history run.json"), a string; shown escaped.
        None: said from the input ("settings", the mechanism's type, the audit file).
      prior_sizes: the prior sizes of the informed adversary, a non-empty sequence of integers >= 2
        (default 2, 10, 100); duplicates dropped, order kept.

    Raises:
      ValueError: if ``prior_sizes`` is empty or holds a size < 2.
      TypeError: if ``label`` / ``source`` is not a string or a prior size is not an integer.
    """

    label: str | None = None
    source: str | None = None
    prior_sizes: tuple[int, ...] = DEFAULT_PRIOR_SIZES

    def __post_init__(self) -> None:
        for name in ("label", "source"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, str):
                raise TypeError(f"{name} must be a string, got {type(v).__name__}")
        sizes = self.prior_sizes
        if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__iter__"):
            raise TypeError(f"prior_sizes must be a sequence of integers >= 2, got {type(sizes).__name__}")
        sizes = tuple(check_int(f"prior_sizes[{i}]", n, minimum=2) for i, n in enumerate(sizes))
        if not sizes:
            raise ValueError("prior_sizes must list at least one integer >= 2")
        object.__setattr__(self, "prior_sizes", tuple(dict.fromkeys(sizes)))
