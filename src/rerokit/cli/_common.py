"""Helpers shared by all CLI commands: the options each command takes (one helper per option, or
per group of options that go together, so that every option is spelled, typed and explained in one
place), and the output, a readable table or one JSON object."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from rerokit import __version__


class CliError(Exception):
    """A usage error: printed as one line, exit code 2."""


def describe(text: str, width: int = 92) -> str:
    """A help description from plain text: paragraphs (separated by blank lines) filled to
    ``width``; a paragraph whose lines start with "  " is kept as it is (a formula or a list)."""
    import textwrap

    out = []
    for para in textwrap.dedent(text).strip().split("\n\n"):
        if para.startswith("  "):
            out.append(para)
        else:
            out.append(textwrap.fill(" ".join(para.split()), width, break_on_hyphens=False))
    return "\n\n".join(out)


def output_fields(fields: list[tuple[str, str]], *, width: int = 92) -> str:
    """The ``--help`` epilog listing every output field (table row / JSON key) with its meaning."""
    import textwrap

    fields = [*fields, ("rerokit_version", "version of rerokit that computed the result")]
    kw = min(24, max(len(k) for k, _ in fields))
    lines = ["output fields (the keys of --json, nested ones as parent.key; the table shows them after a verdict "
             "in plain words, with their method and whether each is certified or an estimate):"]
    for k, d in fields:
        wrapped = textwrap.wrap(" ".join(d.split()), max(30, width - kw - 4), break_on_hyphens=False) or [""]
        if len(k) > kw:
            lines.append(f"  {k}")
            lines.extend(" " * (kw + 4) + w for w in wrapped)
        else:
            lines.append(f"  {k.ljust(kw)}  {wrapped[0]}")
            lines.extend(" " * (kw + 4) + w for w in wrapped[1:])
    return "\n".join(lines)


def help_kw(description: str, fields: list[tuple[str, str]]) -> dict:
    """``add_parser`` keyword arguments: a plain description and the output-fields epilog."""
    return {"description": describe(description), "epilog": output_fields(fields),
            "formatter_class": argparse.RawDescriptionHelpFormatter}


def add_command(sub: argparse._SubParsersAction, name: str, func, *, help: str, description: str,
                fields: list[tuple[str, str]], **defaults: Any) -> argparse.ArgumentParser:
    """The sub-command ``name``, run by ``func``: ``help`` is its line in the command list, ``description``
    and the output ``fields`` its ``--help`` (see :func:`help_kw`); ``defaults`` go into the namespace too."""
    p = sub.add_parser(name, help=help, **help_kw(description, fields))
    p.set_defaults(func=func, **defaults)
    return p


def add_json_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


# --------------------------------------------------------------------------- options shared by commands
# One spelling per concept across every command: --noise-multiplier, --sample-rate, --steps,
# --prior-size | --kappa | --log10-kappa, --delta. Old spellings stay accepted for one release
# (hidden from --help) and print a one-line deprecation note.

DEPRECATION_RELEASE = "0.3"


class _DeprecatedSpelling(argparse.Action):
    """Stores into the new option's ``dest`` and notes on stderr that the spelling is deprecated."""

    def __init__(self, option_strings, dest, *, new: str, **kw):
        self.new = new
        super().__init__(option_strings, dest, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        # printed by main() after a successful run, so that an error stays one line
        notes = getattr(namespace, "_deprecation_notes", [])
        notes.append(f"note: {option_string} is deprecated, use {self.new} (the old spelling is accepted until "
                     f"rerokit {DEPRECATION_RELEASE})")
        setattr(namespace, "_deprecation_notes", notes)
        setattr(namespace, self.dest, values)


def add_deprecated_spelling(p: argparse.ArgumentParser, old: str, new: str, **kw) -> None:
    """Accept ``old`` as a hidden alias of the option ``new`` (same dest and type)."""
    dest = new.lstrip("-").replace("-", "_")
    p.add_argument(old, dest=dest, action=_DeprecatedSpelling, new=new, help=argparse.SUPPRESS, **kw)


def add_prior_args(p: argparse.ArgumentParser, *, what: str = "the prior") -> None:
    """--prior-size N | --kappa K | --log10-kappa L (exactly one; see :func:`baseline_from_args`)."""
    p.add_argument("--prior-size", type=int, default=None,
                   help=f"{what}: N >= 1 equally likely candidates (exact match), kappa = 1/N")
    p.add_argument("--kappa", type=float, default=None, help=f"{what} given by its baseline success kappa in (0, 1]")
    p.add_argument("--log10-kappa", type=float, default=None,
                   help="log10 of kappa (<= 0), for baselines that underflow (e.g. -472.015)")


def baseline_from_args(args: argparse.Namespace, *, required: bool = True):
    """The :class:`rerokit.bounds.priors.Baseline` of --prior-size / --kappa / --log10-kappa
    (None when none is given and ``required`` is False). kappa is exactly 1/N for --prior-size N."""
    from rerokit._validate import check_int, check_real
    from rerokit.bounds.priors import resolve_baseline

    given = [n for n in ("prior_size", "kappa", "log10_kappa") if getattr(args, n, None) is not None]
    if not given and not required:
        return None
    if len(given) != 1:
        raise ValueError(
            ("a prior is required: " if not given else "")
            + "give exactly one of --prior-size (integer >= 1), --kappa (in (0, 1]) or --log10-kappa (<= 0)"
            + (f"; got {', '.join('--' + g.replace('_', '-') for g in given)}" if given else "")
        )
    if args.prior_size is not None:
        return resolve_baseline(check_int("prior_size", args.prior_size, minimum=1))
    if args.kappa is not None:
        return resolve_baseline(kappa=args.kappa)
    l10 = check_real("log10_kappa", args.log10_kappa)
    if l10 > 0:
        raise ValueError(f"log10_kappa must be a finite number <= 0, got {args.log10_kappa!r}")
    return resolve_baseline(log_kappa=l10 * math.log(10.0))


def prior_echo(args: argparse.Namespace) -> dict[str, Any]:
    """The prior option the user gave, for the settings echo."""
    if getattr(args, "prior_size", None) is not None:
        return {"prior_size": args.prior_size}
    if getattr(args, "log10_kappa", None) is not None:
        return {"log10_kappa": args.log10_kappa}
    return {}


# --------------------------------------------------------------------------- a DP-SGD run
NOISE_MULTIPLIER_HELP = "noise multiplier sigma > 0"
SAMPLE_RATE_HELP = "Poisson sampling rate q in (0, 1] (batch size / dataset size; 1 = full batch)"
STEPS_HELP = "number of steps T >= 1"


def add_noise_multiplier_arg(p: argparse.ArgumentParser, help: str = NOISE_MULTIPLIER_HELP, **kw: Any) -> None:
    """--noise-multiplier SIGMA (``kw``: required or default; none by default)."""
    p.add_argument("--noise-multiplier", type=float, help=help, **kw)


def add_sample_rate_arg(p: argparse.ArgumentParser, help: str = SAMPLE_RATE_HELP, **kw: Any) -> None:
    """--sample-rate Q, the Poisson sampling rate of DP-SGD (``kw``: required or default)."""
    p.add_argument("--sample-rate", type=float, help=help, **kw)


def add_steps_arg(p: argparse.ArgumentParser, help: str = STEPS_HELP, **kw: Any) -> None:
    """--steps T of DP-SGD (``kw``: required or default)."""
    p.add_argument("--steps", type=int, help=help, **kw)


def add_schedule_args(p: argparse.ArgumentParser, *, required: bool = True, what: str = "") -> None:
    """--noise-multiplier S --sample-rate Q --steps T of a constant DP-SGD run: all required, or all
    optional (``required=False``: the command checks that they come together). ``what`` starts each
    help (e.g. "DP-SGD: " where the run is one of several ways to give a guarantee)."""
    add_noise_multiplier_arg(p, what + NOISE_MULTIPLIER_HELP, required=required)
    add_sample_rate_arg(p, what + SAMPLE_RATE_HELP, required=required)
    add_steps_arg(p, what + STEPS_HELP, required=required)


SAMPLER_HELP = ("how the run formed its batches: poisson (default; each example independently with probability q, "
                "as Opacus' DPDataLoader), shuffle (fixed-size shuffled batches, each example at most once per "
                "epoch; --sample-rate is then 1/(batches per epoch); certified WITHOUT amplification by subsampling: "
                "each epoch is one Gaussian release of the example) or full-batch")


def add_sampling_args(p: argparse.ArgumentParser) -> None:
    """--sampler poisson|shuffle|full-batch and --examples-per-user K: the sampler and the unit of
    privacy of a DP-SGD run (see :func:`sampling_from_args`)."""
    p.add_argument("--sampler", default=None, help=SAMPLER_HELP)
    p.add_argument("--examples-per-user", type=int, default=1,
                   help="unit of privacy: protect all K >= 1 examples of one user together (default 1)")


def sampling_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """``{"sampler": ..., "examples_per_user": ...}`` for the library calls (sampler None when not given:
    Poisson, assumed). A bad value is a ValueError naming --sampler / --examples-per-user."""
    from rerokit._validate import check_choice, check_int

    sampler = getattr(args, "sampler", None)
    if sampler is not None:
        sampler = check_choice("sampler", sampler.replace("-", "_"), ("poisson", "shuffle", "full_batch"))
    k = check_int("examples_per_user", getattr(args, "examples_per_user", 1), minimum=1)
    return {"sampler": sampler, "examples_per_user": k}


def sampling_summary(command: str):
    """The verdict function of ``command`` with the run's sampler stated: a note naming the sampler
    (declared / detected / assumed), the unit of privacy and the neighbouring relation, and for a
    non-Poisson run a row with the Poisson accountant's number, kind "assumption" (not certified)."""

    def summary(data: dict[str, Any]):
        import dataclasses

        from rerokit.report.terminal import Row
        from rerokit.report.verdicts import summary_for

        s = summary_for(command, data)
        st = data.get("settings") or {}
        notes, rows = list(s.notes), list(s.rows)
        if "sampler" in st:
            unit = "one example" if st.get("examples_per_user", 1) == 1 else f"{st['examples_per_user']} examples " \
                                                                                "of one user"
            notes.insert(0, f"sampler: {st['sampler']} ({st.get('sampler_source', 'declared')}); unit of privacy: "
                            f"{unit}; neighbouring relation: {st.get('neighbouring_relation', '')}")
        if st.get("sampler") == "shuffle" or st.get("examples_per_user", 1) > 1:  # the closed form is of the
            # certified view (full-batch releases of the target), not of the q given
            rows = [dataclasses.replace(r, method=r.method.replace("(q = 1)", "(unamplified releases)"))
                    if isinstance(r.method, str) else r for r in rows]
        pa = data.get("poisson_assumption")
        if pa:
            found = next(((sym, pa[key]) for key, sym in (("noise_multiplier", "\u03c3"), ("steps", "steps T"),
                                                          ("gamma", "\u03b3"), ("epsilon", "\u03b5"),
                                                          ("advantage", "advantage"))
                          if pa.get(key) is not None), None)
            if found is not None:
                rows.append(Row(f"{found[0]} if the batches had been Poisson-sampled", f"{found[1]:.4g}", "",
                                "Poisson accountant (amplification by subsampling)", "assumption",
                                section="Not certified for this run"))
            notes.append("poisson_assumption: " + pa["note"])
        return dataclasses.replace(s, rows=tuple(rows), notes=tuple(notes))

    return summary


def check_schedule_memory(args: argparse.Namespace) -> None:
    """Refuse --steps (with --noise-multiplier, --sample-rate) whose PLD accounting would not fit in
    memory, before it starts (:func:`rerokit._resources.check_dpsgd_accounting`). Values the engine
    itself refuses (missing, out of range) are left to its own one-line errors."""
    from rerokit._resources import check_dpsgd_accounting
    from rerokit._validate import check_int, check_probability, check_real

    try:
        seg = (check_real("noise_multiplier", args.noise_multiplier), check_probability("sample_rate", args.sample_rate),
               check_int("steps", args.steps, minimum=1))
    except (TypeError, ValueError):
        return
    check_dpsgd_accounting([seg])


def add_delta_arg(p: argparse.ArgumentParser, what: str = "of the reported epsilon") -> None:
    p.add_argument("--delta", type=float, default=1e-5, help=f"delta in (0, 1) {what} (default 1e-5)")


def add_clip_arg(p: argparse.ArgumentParser, help: str = "clipping norm C > 0", **kw: Any) -> None:
    """--clip C, the clipping norm of DP-SGD / DP-GD (``kw``: required or default)."""
    p.add_argument("--clip", type=float, help=help, **kw)


# --------------------------------------------------------------------------- the data
DATASET_HELP = "digits (default), mnist, cifar10 or synthetic"


def add_dataset_arg(p: argparse.ArgumentParser, help: str = DATASET_HELP, default: str | None = "digits") -> None:
    p.add_argument("--dataset", default=default, help=help)


def add_data_path_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-path", default=None, help="local MNIST / CIFAR-10 files (a file or folder)")


def add_data_args(p: argparse.ArgumentParser, datasets: str = DATASET_HELP) -> None:
    """--dataset NAME (default digits; ``datasets`` says which) and --data-path PATH (MNIST, CIFAR-10)."""
    add_dataset_arg(p, datasets)
    add_data_path_arg(p)


def add_glm_args(p: argparse.ArgumentParser, *, classes: str, classes_default: str | None = "0,1",
                 model: bool = True) -> None:
    """[--model logistic|linear|ridge] --classes LABELS --lam LAM of a GLM fitted to optimality on the
    records of the dataset with those labels (``classes``: the help of --classes, which differs by
    command). See :func:`glm_problem`."""
    if model:
        p.add_argument("--model", default="logistic", choices=("logistic", "linear", "ridge"),
                       help="logistic (default; multinomial for more than 2 classes), linear or ridge regression")
    p.add_argument("--classes", default=classes_default, help=classes)
    p.add_argument("--lam", type=float, default=1e-2,
                   help="L2 coefficient lam > 0 of (1/n) sum l + lam/2 ||theta||^2 (default 0.01"
                   + ("; not used by --model linear)" if model else ")"))


def parse_classes(text: str, labels=None, dataset: str | None = None) -> tuple[int, ...]:
    """The labels of ``--classes`` (comma-separated, at least 2 distinct); with ``labels`` (the
    labels of the dataset) every listed label must occur in it."""
    try:
        cls = tuple(int(t) for t in text.split(","))
    except ValueError:
        raise ValueError(f"classes must be a comma-separated list of integer labels, got {text!r}") from None
    if len(cls) < 2 or len(set(cls)) != len(cls):
        raise ValueError(f"classes must list at least 2 distinct labels, got {text!r}")
    if labels is not None:
        present = sorted({int(v) for v in labels})
        missing = [c for c in cls if c not in present]
        if missing:
            shown = ",".join(map(str, present)) if len(present) <= 20 else f"{present[0]}..{present[-1]}"
            raise ValueError(f"classes must be labels of dataset {dataset}, which has the labels {shown}; "
                             f"got {', '.join(map(str, missing))} (in {text!r})")
    return cls


def glm_problem(model: str, cls: tuple[int, ...], y, lam: float):
    """The GLM of ``--model`` on records with labels ``y`` (already restricted to ``cls``): its kind
    (logistic for two classes, multinomial for more, linear, ridge), the targets it is fitted to, and
    the lam it is fitted with (0 for linear). A lam of 0 is refused where the fit needs lam > 0."""
    if model == "logistic":
        kind = "logistic" if len(cls) == 2 else "multinomial"
        target = (y == cls[1]).astype(int) if len(cls) == 2 else y
    else:
        kind = model
        target = y.astype(float)
    if kind == "linear":
        lam = 0.0
    elif not math.isfinite(len(y) * lam):  # the fit's coefficient is l2 = n lam
        raise ValueError(f"lam = {lam:g} is too large: n * lam overflows for the n = {len(y)} records fitted")
    elif lam == 0:
        # fit_glm would name its own parameter (l2 = n lam); name the option given here
        raise ValueError(f"lam must be a finite number > 0 for {kind} regression, got 0"
                         + (" (no finite optimum on separable data)" if kind != "ridge" else ""))
    return kind, target, lam


# --------------------------------------------------------------------------- RecoNN attacks
def add_reconn_args(p: argparse.ArgumentParser) -> None:
    """The sizes of one RecoNN attack (Balle et al. 2022, Table V): shadow models, |D-|, evaluation
    targets, training steps of the released and shadow models and of the reconstructor."""
    p.add_argument("--shadow-models", type=int, default=2000, help="shadow models k per attack (default 2000)")
    p.add_argument("--fixed-size", type=int, default=500, help="|D-|, the fixed training set (default 500)")
    p.add_argument("--targets", type=int, default=100,
                   help="held-out released models (evaluation targets) per attack (default 100)")
    p.add_argument("--epochs", type=int, default=100,
                   help="full-batch GD steps (DP-GD when private) of each released and shadow model (default 100)")
    p.add_argument("--reconstructor-epochs", type=int, default=60,
                   help="training epochs of the reconstructor (default 60)")


def add_dpgd_args(p: argparse.ArgumentParser) -> None:
    """--delta and --clip of the full-batch DP-GD that trains the released and shadow models of a RecoNN
    attack (Balle et al. 2022, Sec. VI-D)."""
    add_delta_arg(p, "of the DP-GD guarantee")
    add_clip_arg(p, "DP-GD clipping norm C > 0 (default 1, as in Sec. VI-D)", default=1.0)


def check_threads(value: Any) -> int:
    """--threads as an int in [0, 4 x this machine's CPUs] (1e6 made OpenBLAS fail to start threads and
    libgomp ask for 216 GB)."""
    import os

    from rerokit._validate import check_int

    top = 4 * (os.cpu_count() or 1)
    return check_int("threads", value, minimum=0, maximum=top)


def add_threads_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threads", type=int, default=0,
                   help="torch CPU threads (0: torch's default; 1 is often faster on a busy shared machine)")


# --------------------------------------------------------------------------- runs: files, --resume, executors
def add_out_dir_arg(p: argparse.ArgumentParser, default: str | None = None) -> None:
    """--out-dir DIR, the folder a figure's files are written to (required unless ``default``)."""
    if default is None:
        p.add_argument("--out-dir", required=True, help="output folder")
    else:
        p.add_argument("--out-dir", default=default, help=f"output folder (default {default})")


def add_resume_args(p: argparse.ArgumentParser, resume: str, *, out: str | None = None, quiet: bool = False) -> None:
    """[--out FILE [--overwrite]] --resume and --no-progress (``quiet``: --quiet) of a run that records its work as
    it goes; ``out`` says what the file holds, ``resume`` what a resumed run continues."""
    if out is not None:
        p.add_argument("--out", default=None, help=out)
    g = p.add_mutually_exclusive_group() if out is not None else p
    g.add_argument("--resume", action="store_true", help=resume)
    if out is not None:
        g.add_argument("--overwrite", action="store_true",
                       help="replace an existing --out file (without it, a finished file of the same settings is "
                       "reported again and any other file is refused)")
    if quiet:
        p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    else:
        p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def add_executor_args(p: argparse.ArgumentParser, *, device: bool = False, what: str = "blocks") -> None:
    """--executor local|ray, --workers N, --address HOST:PORT [, --device cpu|cuda|auto] of a trial runner."""
    g = p.add_argument_group("execution (the same results, bit for bit, with any executor and number of workers)")
    g.add_argument("--executor", default="local",
                   help=f"local (default: {what} in this process, 1 thread each; audits run --workers of them at "
                   f"a time) or ray (the {what} on Ray workers, one CPU each; needs pip install \"rerokit[ray]\")")
    g.add_argument("--workers", type=int, default=None,
                   help="Ray workers, or audit blocks run at the same time locally, >= 1 (default: every CPU)")
    g.add_argument("--address", default=None,
                   help="an existing Ray cluster, host:port or ray://host:port (or auto); default: start a local "
                   "one for this run; needs --executor ray")
    if device:
        add_device_arg(g)


def add_device_arg(p: argparse.ArgumentParser, where: str = "the vectorised engines run") -> None:
    """--device cpu|cuda|auto: where the computations (``where``) run."""
    p.add_argument("--device", default="cpu",
                   help=f"cpu (default), cuda (a GPU; error without one) or auto (cuda when available): where "
                   f"{where} (the same random numbers on every device; results agree across devices to rounding)")


def executor_from_args(args: argparse.Namespace):
    """The :class:`rerokit.executors.Executor` of --executor/--workers/--address (checked; one-line errors)."""
    from rerokit.executors import get_executor

    return get_executor(args.executor, workers=args.workers, address=args.address)


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if hasattr(x, "item") and callable(x.item) and getattr(x, "ndim", 1) == 0:
        return x.item()
    if hasattr(x, "tolist"):
        return x.tolist()
    if isinstance(x, float) and not math.isfinite(x):  # JSON has no Infinity: a string, never the bare token
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def _printable_strings(x: Any) -> Any:
    """Every string in ``x`` (a JSON-ready tree) without control characters: strings a user gave
    (labels, paths, names) reach the terminal as text, never as escape sequences."""
    from rerokit._validate import printable

    if isinstance(x, str):
        return printable(x, keep_newlines=True)
    if isinstance(x, dict):
        return {k: _printable_strings(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_printable_strings(v) for v in x]
    return x


def emit(result: dict[str, Any], *, as_json: bool = False, title: str | None = None, file=None,
         summary=None, command: str | None = None) -> None:
    """Print ``result`` as one JSON object (with the rerokit version) or for a human.

    The human output is one renderer for every command (:func:`rerokit.report.terminal.render`):
    the command's verdict in plain words first, then a table of its numbers (value, bracket or
    interval, method, certified or estimate), then notes.

    Args:
      result: the command's JSON-ready dict.
      as_json: print one JSON object (keys unchanged).
      title: a heading for the human output.
      file: the stream (default stdout).
      summary: the command's verdict function ``result -> rerokit.report.terminal.Summary``; default
        the one registered for ``command`` in :data:`rerokit.report.verdicts.VERDICTS` (or the
        generic one).
      command: "group subcommand" (e.g. "bound dpsgd"), to look the verdict function up.
    """
    out = file or sys.stdout
    result = dict(result)
    result.setdefault("rerokit_version", __version__)
    if as_json:
        print(json.dumps(_jsonable(result), sort_keys=False), file=out)
        return
    from rerokit.report.terminal import render

    data = _printable_strings(_jsonable(result))
    if summary is not None:
        s = summary(data)
    else:
        from rerokit.report.verdicts import summary_for

        s = summary_for(command or "", data)
    render(data, verdict=s.verdict, rows=s.rows, tables=s.tables, notes=s.notes, title=title or s.title, file=out,
           glossary=s.glossary)
