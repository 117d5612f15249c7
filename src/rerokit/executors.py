"""Executors: run the blocks of a trial runner in this process (``local``) or on Ray workers (``ray``).

Every resumable runner of rerokit (the audits, the analytic attack, the experiments, RecoNN's
shadow models) splits its work into blocks with FIXED boundaries: block ``b`` holds the items
(trials, targets, draws, cells, models) ``[b * B, min((b + 1) * B, K))``, ``B`` the block size the
run records in its JSONL header. A block is computed by one pure function of the run's job
(settings, seed) and the block (its index, boundaries, the items still missing and per-block
inputs such as the trial seeds), written once per runner, which both executors call:

* :class:`LocalExecutor` calls it in this process, block after block, and hands every item on as
  soon as it is yielded (the gradient audit appends each trial as its attack finishes);
* :class:`RayExecutor` sends the blocks to ``workers`` Ray actors (one CPU each; ``address``: an
  existing cluster, default a new local one) and hands on each block's items on the driver as
  the block finishes (in completion order), where the runner appends them to its one JSONL
  file (the driver holds the file's lock).

Both run every block with the same fixed number of intra-op threads (``threads``, default 1:
torch and the BLAS of numpy, restored afterwards), so a block's floating-point results do not
depend on the executor, the number of workers, their order, or a resume: a local run, a Ray run
with any number of workers and an interrupted-and-resumed run write the same records bit for
bit. A block that is partly in the file is recomputed whole and only its missing items are
handed on. An interruption loses at most the blocks in flight.

Blocks that run concurrently on threads share the process, so a block function must not change
process-wide state that another block's numbers depend on: torch's intra-op thread count (and
BLAS's) is one per process - while such a run is in progress, :func:`fixed_threads` and
``EngineOptions(num_threads=...)`` inside a block accept only the run's own count
(:func:`concurrent_threads`), anything else is a ``ValueError`` - and torch's global generator
is one per process: every draw from it (seeded or not, module construction included) holds
:data:`rerokit.training.models.GLOBAL_RNG_LOCK` (:func:`rerokit.training.models.global_rng`).

Ray is an optional extra (``pip install "rerokit[ray]"``); without it ``executor="ray"`` is a
one-line ``ValueError`` saying so. A block that raises on a Ray worker ends the run with an
error naming the block (blocks finished before stay in the file): the worker's ``ValueError`` /
``TypeError`` / ``ArithmeticError`` / ``OSError`` is re-raised with its type, anything else (or a
worker that died) as :class:`BlockFailed`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence

from rerokit._validate import check_choice, check_int

__all__ = [
    "EXECUTORS",
    "RAY_INSTALL",
    "Block",
    "BlockFailed",
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "get_executor",
    "using_executor",
    "run_blocks",
    "plan_blocks",
    "fixed_threads",
    "concurrent_threads",
    "check_thread_count",
    "RunOptions",
    "ProgressBar",
]

EXECUTORS = ("local", "ray")
RAY_INSTALL = 'pip install "rerokit[ray]"'
_CONNECT_TIMEOUT_S = 5.0
_HANDSHAKE_TIMEOUT_S = 20.0


class BlockFailed(RuntimeError):
    """A block failed on a worker (an unexpected exception there, or the worker died)."""


@dataclass(frozen=True)
class Block:
    """One block of a run: ``index`` b, the items ``[lo, hi)`` it computes, the items ``todo``
    (a subset, in order) still missing from the run's file, which it hands on, and ``payload``:
    per-block inputs (e.g. the trial seeds of ``lo..hi-1``)."""

    index: int
    lo: int
    hi: int
    todo: tuple[int, ...]
    payload: Any = None

    def describe(self) -> str:
        """``block b (items lo-hi)`` for messages."""
        return f"block {self.index} (items {self.lo}-{self.hi - 1})"


def plan_blocks(total: int, block_size: int, done: Iterable[int] = (),
                payload: Callable[[int, int], Any] | None = None) -> list[Block]:
    """The blocks of a run of ``total`` items in blocks of ``block_size`` that still have work.

    Args:
        total: the run's item count K.
        block_size: B; block b holds items [b B, min((b + 1) B, K)).
        done: items already in the run's file (skipped; a block with all its items done is left out).
        payload: ``payload(lo, hi)`` -> the block's per-block inputs (None: no payload).

    Returns:
        The blocks with at least one missing item, in order.
    """
    K = check_int("total", total, minimum=0)
    B = check_int("block_size", block_size, minimum=1)
    done = set(done)
    out = []
    for b, lo in enumerate(range(0, K, B)):
        hi = min(K, lo + B)
        todo = tuple(i for i in range(lo, hi) if i not in done)
        if todo:
            out.append(Block(b, lo, hi, todo, None if payload is None else payload(lo, hi)))
    return out


_CONCURRENT_LOCK = threading.Lock()
_CONCURRENT: list[int] = []  # the thread count of every concurrent local run in progress in this process


def concurrent_threads() -> int | None:
    """The intra-op thread count fixed for the blocks that run concurrently on threads in this
    process right now (:class:`LocalExecutor` with ``workers`` > 1), or None when none do.

    Returns:
        The count, or None.
    """
    with _CONCURRENT_LOCK:
        return _CONCURRENT[-1] if _CONCURRENT else None


def check_thread_count(name: str, n: int) -> int:
    """``n`` intra-op threads requested (as ``name``) by code that may run in a block: a ``ValueError``
    while blocks run concurrently on threads with another count (the count is process-wide: setting
    it in one block would change the others' floating-point results, and the set/restore pairs of
    concurrent blocks interleave).

    Args:
        name: the option's name, for the message.
        n: the requested count (>= 1).

    Returns:
        ``n``.
    """
    n = check_int(name, n, minimum=1)
    fixed = concurrent_threads()
    if fixed is not None and n != fixed:
        raise ValueError(f"{name}={n} inside a block of a run whose blocks run concurrently on threads with {fixed} "
                         f"intra-op thread{'s' if fixed > 1 else ''} each: the count is process-wide (it would change "
                         f"the other blocks' results); leave it unset there or use {fixed}")
    return n


@contextlib.contextmanager
def _concurrent_run(n: int) -> Iterator[None]:
    with _CONCURRENT_LOCK:
        _CONCURRENT.append(n)
    try:
        yield
    finally:
        with _CONCURRENT_LOCK:
            _CONCURRENT.remove(n)


@contextlib.contextmanager
def fixed_threads(n: int | None) -> Iterator[None]:
    """Run the body with ``n`` intra-op threads in torch (if installed) and in numpy's BLAS
    (through threadpoolctl, if installed), restored afterwards.

    Inside a block of a concurrent local run (:func:`concurrent_threads`) the count is already
    fixed, process-wide: ``n`` equal to it changes nothing, any other ``n`` is a ``ValueError``
    (:func:`check_thread_count`).

    Args:
        n: threads (>= 1); None leaves the process's settings unchanged.

    Returns:
        A context manager.
    """
    if n is None:
        yield
        return
    n = check_thread_count("threads", n)
    if concurrent_threads() is not None:  # already n threads, process-wide: nothing to set or restore
        yield
        return
    torch = None
    if "torch" in sys.modules or importlib.util.find_spec("torch") is not None:
        import torch  # optional

        before = torch.get_num_threads()
    try:
        with contextlib.ExitStack() as stack:
            try:
                from threadpoolctl import threadpool_limits

                stack.enter_context(threadpool_limits(limits=n, user_api="blas"))
            except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
                pass
            if torch is not None:
                torch.set_num_threads(n)
            yield
    finally:
        # last, and always: threadpoolctl's restore resets OpenMP's count but not MKL's (set to n by
        # torch above), and torch.set_num_threads restores both; without it later work in this
        # process (e.g. RecoNN's reconstructor) would run with other MKL threads than in a fresh one
        if torch is not None:
            torch.set_num_threads(before)


BlockFn = Callable[[Any, Block], Iterable[tuple[int, Any]]]
"""``fn(job, block)`` -> the block's ``(item, result)`` pairs (its ``todo`` items, any order)."""


class Executor:
    """Runs the blocks of a run; see the module docstring. Use as a context manager (or call
    :meth:`close`) when one executor serves several runs."""

    name = "local"
    threads: int | None = 1

    def run(self, fn: BlockFn, job: Any, blocks: Sequence[Block], emit: Callable[[int, Any], None], *,
            gpu: bool = False) -> None:
        """Compute ``blocks`` with ``fn(job, block)`` and call ``emit(item, result)`` on the caller's side
        for each item a block hands on.

        Args:
            fn: the block function: a module-level function (Ray workers import it by name).
            job: the run's settings, passed to every block (picklable).
            blocks: from :func:`plan_blocks`.
            emit: called in this process for every item, as soon as it is available.
            gpu: the blocks run on a CUDA device (Ray workers then reserve a share of the GPUs).
        """
        raise NotImplementedError

    def describe(self) -> str:
        """Short text for progress bars, e.g. ``ray, 2 workers``."""
        return self.name

    def close(self) -> None:
        """Release what the executor started (idempotent)."""

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class LocalExecutor(Executor):
    """Blocks in this process: one after another, or ``workers`` at a time on threads.

    Every block runs with ``threads`` intra-op threads (default 1, as on a Ray worker), so its
    numbers do not depend on where or alongside what it runs: with ``workers`` > 1 each thread
    executes whole blocks whose torch kernels release the GIL, which uses several cores with
    results identical bit for bit to ``workers=1`` and to Ray. Only block functions marked
    ``fn.thread_safe = True`` (the audits, balle-mia) run concurrently; the others run one at a
    time. Such a function changes no process-wide state (the thread count: :func:`check_thread_count`)
    and draws from torch's global generator only holding
    :data:`rerokit.training.models.GLOBAL_RNG_LOCK` - module construction included. Results
    are emitted on the calling thread (the one that holds the result file) in block order, so the
    file is the same whatever ``workers``; an interruption loses at most the blocks in flight or
    finished but waiting on an earlier one (at most ``workers`` blocks).

    Args:
        threads: intra-op threads per block (default 1; None leaves the process setting, results
            then agree with a Ray run only to rounding; only with ``workers=1``).
        workers: blocks run at the same time (default 1).
    """

    name = "local"

    def __init__(self, threads: int | None = 1, workers: int = 1):
        self.threads = None if threads is None else check_int("threads", threads, minimum=1)
        self.workers = check_int("workers", workers, minimum=1)
        if self.workers > 1 and self.threads is None:
            raise ValueError("workers > 1 needs a fixed threads per block (threads=None is for workers=1)")

    def describe(self) -> str:
        """``local`` or ``local, N workers``."""
        return "local" if self.workers == 1 else f"local, {self.workers} workers"

    def run(self, fn: BlockFn, job: Any, blocks: Sequence[Block], emit: Callable[[int, Any], None], *,
            gpu: bool = False) -> None:
        """:meth:`Executor.run` in this process: blocks in order, or ``workers`` at a time on threads
        (thread-safe block functions only); a block that raises stops the run with its error after
        the items already emitted.

        Args:
            fn, job, blocks, emit, gpu: as in :meth:`Executor.run` (``gpu`` changes nothing here).
        """
        if self.workers == 1 or len(blocks) <= 1 or not getattr(fn, "thread_safe", False):
            # block functions declare thread safety (fn.thread_safe = True); others run one at a time
            for block in blocks:
                with fixed_threads(self.threads):
                    try:
                        for item, result in fn(job, block):
                            emit(item, result)
                    except Exception as exc:  # noqa: BLE001 - the error boundary of user code, as on Ray
                        raise _local_block_error(block, job, exc) from exc
            return
        import queue
        import threading
        from concurrent.futures import ThreadPoolExecutor

        # workers stream every finished item through a queue; this thread (which holds the result
        # file) emits them in block order - the head block's items as they come, later blocks'
        # items once every block before them is done - so the file is the same as with one worker
        # and an interruption loses at most the blocks in flight or waiting on an earlier one
        out: queue.Queue = queue.Queue()
        stop = threading.Event()
        done = object()

        def work(pos: int, block: Block) -> None:
            try:
                if stop.is_set():
                    return
                for item, result in fn(job, block):
                    out.put((pos, item, result))
                    if stop.is_set():
                        return
            except Exception as exc:  # noqa: BLE001 - handed to the emitting thread
                out.put((pos, done, _local_block_error(block, job, exc)))
                return
            except BaseException as exc:  # noqa: BLE001 - an interrupt: handed on as it is
                out.put((pos, done, exc))
                return
            out.put((pos, done, None))

        waiting: dict[int, list] = {pos: [] for pos in range(len(blocks))}
        finished: set[int] = set()
        head = 0
        # the intra-op thread count is process-wide: set it once around the whole run, and refuse
        # other counts inside the blocks meanwhile (check_thread_count)
        with fixed_threads(self.threads), _concurrent_run(self.threads), \
                ThreadPoolExecutor(self.workers, thread_name_prefix="rerokit-block") as pool:
            submitted = 0
            try:
                while head < len(blocks):
                    # a window of `workers` blocks from the head: a slow head block cannot let
                    # finished-but-unwritten blocks pile up behind it
                    while submitted < min(len(blocks), head + self.workers):
                        pool.submit(work, submitted, blocks[submitted])
                        submitted += 1
                    pos, item, result = out.get()
                    if item is done:
                        if result is not None:
                            raise result
                        finished.add(pos)
                    elif pos == head:
                        emit(item, result)
                    else:
                        waiting[pos].append((item, result))
                    while head in finished:  # the head block is complete: the next one takes its place
                        head += 1
                        if head < len(blocks):
                            for item, result in waiting.pop(head):
                                emit(item, result)
            finally:
                stop.set()  # an error or an interrupt: blocks not begun do not start


def _ray():
    """The ``ray`` module, or a ValueError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ValueError(f"executor ray needs Ray, which is not installed: {RAY_INSTALL}") from None
    return ray


def _check_address(address: str) -> str:
    """Fail within a bounded time when ``host:port`` (or ``ray://host:port``) does not accept connections."""
    if not isinstance(address, str) or not address.strip():
        raise ValueError(f"address must be host:port of a Ray cluster (or auto), got {address!r}")
    address = address.strip()
    if address in ("auto", "local"):
        return address
    hostport = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = hostport.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"address must be host:port of a Ray cluster (e.g. 10.0.0.5:6379, ray://10.0.0.5:10001) or "
                         f"auto, got {address!r}")
    try:
        sock = socket.create_connection((host.strip("[]"), int(port)), timeout=_CONNECT_TIMEOUT_S)
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or type(exc).__name__)
        raise ValueError(f"address {address}: cannot reach a Ray cluster there ({reason} within "
                         f"{_CONNECT_TIMEOUT_S:g} s)") from None
    # Ray's GCS (and Ray Client) are gRPC servers: an HTTP/2 server answers a client preface with a
    # SETTINGS frame. Anything else (a closed connection, HTTP/1, silence) is not a Ray cluster, and
    # Ray's own connection attempts would take minutes to give up.
    deadline = time.monotonic() + _CONNECT_TIMEOUT_S  # one deadline for the whole answer (a slow trickle too)
    head = b""
    try:
        with sock:
            sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
            while len(head) < 9:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                sock.settimeout(left)
                chunk = sock.recv(9 - len(head))
                if not chunk:
                    break
                head += chunk
    except OSError:
        pass
    if len(head) < 9 or head[3] != 0x04:
        raise ValueError(f"address {address}: the service there is not a Ray cluster (no gRPC answer within "
                         f"{_CONNECT_TIMEOUT_S:g} s)")
    _probe_ray(address)
    return address


def _probe_ray(address: str) -> None:
    """Connect a throw-away driver to ``address`` in a child process, killed after
    :data:`_HANDSHAKE_TIMEOUT_S`: a service that speaks HTTP/2 but is not a Ray cluster keeps
    ``ray.init`` retrying for minutes (3.5 minutes measured), which this process could not
    interrupt. A real cluster answers in a few seconds."""
    import subprocess

    code = ("import logging, sys, ray\n"
            "ray.init(address=sys.argv[1], include_dashboard=False, log_to_driver=False, "
            "logging_level=logging.ERROR)\nray.shutdown()\n")
    env = dict(os.environ, RAY_gcs_server_port_wait_time_s=str(int(_CONNECT_TIMEOUT_S)),
               RAY_py_gcs_connect_timeout_s=str(int(_CONNECT_TIMEOUT_S)))
    try:
        r = subprocess.run([sys.executable, "-c", code, address], stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=_HANDSHAKE_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        raise ValueError(f"address {address}: no Ray cluster answered within {_HANDSHAKE_TIMEOUT_S:g} s (the service "
                         "there accepts connections but does not complete Ray's handshake)") from None
    if r.returncode != 0:
        last = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
        why = " ".join(last[-1].split())[:300] if last else f"exit code {r.returncode}"
        raise ValueError(f"address {address}: cannot connect to a Ray cluster there ({why})")


def _worker_pythonpath() -> str:
    """PYTHONPATH for the workers: this process's import path without the interpreter's own
    folders (stdlib, site-packages), so that rerokit from a source tree and user modules named by
    ``--model-factory`` import there as here; an installed rerokit is found in site-packages."""
    import site
    import sysconfig

    own = set()
    for p in [*sysconfig.get_paths().values(), *site.getsitepackages(), site.getusersitepackages()]:
        if p:
            own.add(os.path.realpath(p))
    entries: list[str] = []
    for p in sys.path:
        p = os.getcwd() if p == "" else p
        if os.path.isdir(p) and os.path.realpath(p) not in own and p not in entries:
            entries.append(p)
    return os.pathsep.join(entries)


@contextlib.contextmanager
def _quiet_connect() -> Iterator[None]:
    """While connecting to an existing cluster: at most ~5 connection tries of at most 5 s each
    (unless the user set RAY_gcs_server_port_wait_time_s / RAY_py_gcs_connect_timeout_s) and Ray's
    native stderr output dropped (fd 2 to /dev/null)."""
    limits = {"RAY_gcs_server_port_wait_time_s": str(int(_CONNECT_TIMEOUT_S)),
              "RAY_py_gcs_connect_timeout_s": str(int(_CONNECT_TIMEOUT_S))}
    set_here = [k for k in limits if k not in os.environ]
    for k in set_here:
        os.environ[k] = limits[k]
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
        for k in set_here:
            os.environ.pop(k, None)


class _BlockWorker:
    """The Ray actor: computes blocks with a fixed thread count (one CPU each)."""

    def __init__(self, threads: int | None):
        self.threads = threads
        if threads is not None and importlib.util.find_spec("torch") is not None:
            import torch

            torch.set_num_threads(threads)

    def run(self, fn: BlockFn, job: Any, block: Block) -> list[tuple[int, Any]]:
        with fixed_threads(self.threads):
            return list(fn(job, block))


class RayExecutor(Executor):
    """Blocks on ``workers`` Ray actors of one CPU each (see the module docstring).

    Args:
        workers: concurrent workers (default: the CPUs of the cluster; a new local cluster is
            started with ``workers`` CPUs, default all of this machine's).
        address: an existing Ray cluster (``host:port``, ``ray://host:port`` or ``auto``);
            default None starts a local one (``ray.init(address="local")``), stopped by
            :meth:`close`. Connecting is checked within 5 seconds.
        threads: intra-op threads per block (default 1; must match the local run for equal results).
        gpus_per_worker: GPUs each actor reserves when the blocks run on a GPU (default: the cluster's
            GPUs shared evenly by the workers, at most 1 each; Ray hides the GPUs from an actor
            that reserves none).

    If Ray is already initialised in this process (e.g. ``ray.init(num_cpus=2)`` by the caller), that
    connection is used and left open.
    """

    name = "ray"

    def __init__(self, workers: int | None = None, address: str | None = None, *, threads: int | None = 1,
                 gpus_per_worker: float | None = None):
        _ray()  # installed?
        self.workers = None if workers is None else check_int("workers", workers, minimum=1)
        self.address = None if address is None else _check_address(address)
        self.threads = None if threads is None else check_int("threads", threads, minimum=1)
        self.gpus_per_worker = gpus_per_worker
        self._started = False
        self._actors: list[Any] = []
        self._actor_key: Any = None

    def describe(self) -> str:
        """``ray`` or ``ray, <n> workers`` (for progress bars)."""
        return "ray" if self.workers is None else f"ray, {self.workers} worker{'s' if self.workers > 1 else ''}"

    # -- cluster and actors
    def _connect(self):
        ray = _ray()
        if ray.is_initialized():
            current = ray.get_runtime_context().gcs_address
            if self.address not in (None, "auto") and self.address.split("://")[-1] != current:
                raise ValueError(f"address {self.address}: Ray is already initialised in this process with the "
                                 f"cluster at {current}; use that address or none")
            return ray
        import logging

        kw: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
        if self.address is None:
            kw.update(address="local", num_cpus=self.workers or os.cpu_count() or 1)
            quiet: Any = contextlib.nullcontext()
        else:
            kw.update(address=self.address)
            # something that accepts TCP but is not a Ray cluster: fail after a few tries (Ray's default is
            # ~20), without Ray's native per-try warnings on stderr (the error is one line)
            quiet = _quiet_connect()
        try:
            with quiet:
                ray.init(**kw)
        except (ConnectionError, TimeoutError, RuntimeError) as exc:
            where = "a local Ray cluster" if self.address is None else f"the Ray cluster at {self.address}"
            raise ValueError(f"cannot start or connect to {where}: {' '.join(str(exc).split())[:300]}") from None
        self._started = True
        return ray

    def _pool(self, ray, n: int, gpu: bool) -> list[Any]:
        gpus = 0.0
        if gpu:
            have = float(ray.cluster_resources().get("GPU", 0))
            if have <= 0:
                raise ValueError("device cuda with executor ray: the Ray cluster has no GPU")
            gpus = float(self.gpus_per_worker) if self.gpus_per_worker is not None else min(1.0, have / n)
        path = _worker_pythonpath()
        key = (n, self.threads, gpus, path)
        if self._actors and self._actor_key == key:
            return self._actors
        self._kill_actors()
        cpus = int(ray.cluster_resources().get("CPU", 0))
        if self.address is not None and self.workers is not None and self.workers > cpus:
            raise ValueError(f"workers={self.workers} but the Ray cluster at {self.address} has {cpus} CPUs")
        opts: dict[str, Any] = dict(num_cpus=1, runtime_env={"env_vars": {"PYTHONPATH": path}}, max_restarts=0)
        if gpus > 0:
            opts["num_gpus"] = gpus
        cls = ray.remote(_BlockWorker)
        self._actors = [cls.options(**opts).remote(self.threads) for _ in range(n)]
        self._actor_key = key
        return self._actors

    def _kill_actors(self) -> None:
        if self._actors:
            ray = _ray()
            for a in self._actors:
                with contextlib.suppress(Exception):
                    ray.kill(a)
        self._actors, self._actor_key = [], None

    def close(self) -> None:
        """Kill the worker actors and shut down the Ray connection this executor started (idempotent;
        a connection that was open before is left open)."""
        self._kill_actors()
        if self._started:
            self._started = False
            ray = _ray()
            with contextlib.suppress(Exception):
                ray.shutdown()

    # -- running
    def run(self, fn: BlockFn, job: Any, blocks: Sequence[Block], emit: Callable[[int, Any], None], *,
            gpu: bool = False) -> None:
        """:meth:`Executor.run` on the Ray actors: each idle actor takes the next block; a finished
        block's items are emitted here at once.

        Args:
            fn, job, blocks, emit, gpu: as in :meth:`Executor.run`.

        Raises:
            ValueError: if the cluster cannot be reached or lacks the requested CPUs or GPUs.
            ValueError, TypeError, ArithmeticError, OSError, MemoryError: a block's own error of
                that type (or torch's out-of-memory RuntimeError), naming the block, once the blocks
                finished meanwhile are emitted.
            BlockFailed: for any other error of a block, or a worker that died.
        """
        if not blocks:
            return
        ray = self._connect()
        workers = self.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        actors = self._pool(ray, workers, gpu)
        job_ref = ray.put(job)
        queue = list(reversed(blocks))
        pending: dict[Any, tuple[Any, Block]] = {}
        ok = False
        try:
            for a in actors:
                if queue:
                    b = queue.pop()
                    pending[a.run.remote(fn, job_ref, b)] = (a, b)
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                ref = done[0]
                actor, block = pending.pop(ref)
                try:
                    items = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    self._keep_finished(ray, pending, emit)
                    if isinstance(exc, ray.exceptions.RayTaskError):
                        raise _block_error(block, exc) from None
                    msg = " ".join(str(exc).split())[:300]  # the worker died (killed, out of memory, ...)
                    raise BlockFailed(f"{block.describe()} failed: its Ray worker died ({type(exc).__name__}: "
                                      f"{msg})") from None
                if queue:
                    b = queue.pop()
                    pending[actor.run.remote(fn, job_ref, b)] = (actor, b)
                for item, result in items:
                    emit(item, result)
            ok = True
        finally:
            if not ok:  # interrupted or failed: stop the blocks in flight (their work is lost)
                self._kill_actors()


    @staticmethod
    def _keep_finished(ray, pending: dict[Any, tuple[Any, Block]], emit: Callable[[int, Any], None]) -> None:
        """After a block failed: hand on the blocks that have finished meanwhile (nothing done is lost)."""
        if not pending:
            return
        done, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0)
        for ref in done:
            try:
                items = ray.get(ref)
            except ray.exceptions.RayError:
                continue
            for item, result in items:
                emit(item, result)


_KEEP_TYPE = (ValueError, TypeError, ArithmeticError, OSError, MemoryError)


def _block_error(block: Block, exc: Exception) -> Exception:
    """The error of a block that raised on a worker: the original type for input-like errors
    (and torch's out-of-memory RuntimeError), else :class:`BlockFailed`; one line naming the block."""
    cause = getattr(exc, "cause", None)
    text = " ".join(str(cause if cause is not None else exc).split())
    where = f"{block.describe()} on a Ray worker"
    if isinstance(cause, _KEEP_TYPE) or (isinstance(cause, RuntimeError) and "allocate" in text):
        try:
            return type(cause)(f"{where}: {text}")
        except Exception:  # noqa: BLE001 - an exception type with another constructor
            pass
    name = type(cause).__name__ if cause is not None else type(exc).__name__
    return BlockFailed(f"{where} failed: {name}: {text}")


def _local_block_error(block: Block, job: Any, exc: Exception) -> Exception:
    """The error of a block that raised in this process, as on a Ray worker: input-like errors
    (ValueError, TypeError, ArithmeticError, OSError, MemoryError, torch's out-of-memory) as they
    are; anything else - a bug, or user code (a model from ``--model-factory``) failing in its
    forward or backward pass - a :class:`BlockFailed` of one line naming the block and, where the
    job runs user code (``job.user_code``), that code."""
    text = " ".join(str(exc).split())
    if isinstance(exc, (*_KEEP_TYPE, BlockFailed)) or (isinstance(exc, RuntimeError) and "allocate" in text):
        return exc
    user = getattr(job, "user_code", None)
    who = f" in {user}" if user else ""
    return BlockFailed(f"{block.describe()} failed{who}: {type(exc).__name__}: {text}"[:2000])


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - no affinity on this OS
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class RunOptions:
    """How a run is executed and recorded - not what it computes (its settings do that): the
    results file and whether to continue or replace it, the block size, progress, executor and
    device. Records are the same, bit for bit, for any executor and number of workers.

    Attributes:
        out: the JSON-lines results file (:class:`rerokit.experiments.records.TrialLog`), or None.
        resume: continue ``out`` (same settings) without repeating its trials.
        overwrite: replace an existing ``out``; without it (and ``resume``) a finished file of the
            same settings is reported again and any other file is refused.
        chunk_size: trials per block (recorded in the settings); None: the run's default.
        progress: a progress bar on stderr.
        executor: ``"local"``, ``"ray"`` or an :class:`Executor`.
        workers: Ray workers, or blocks run at the same time locally (None: every CPU).
        address: an existing Ray cluster (``ray`` only).
        device: ``"cpu"``, ``"cuda"`` or ``"auto"``.
    """

    out: "str | os.PathLike | None" = None
    resume: bool = False
    overwrite: bool = False
    chunk_size: int | None = None
    progress: bool = True
    executor: Any = "local"
    workers: int | None = None
    address: str | None = None
    device: str = "cpu"

    def __post_init__(self) -> None:
        if self.resume and self.overwrite:
            raise ValueError("give resume (--resume) or overwrite (--overwrite), not both")
        if self.chunk_size is not None:
            check_int("chunk_size", self.chunk_size, minimum=1)

    def block_size(self, default: int) -> int:
        """``chunk_size``, or ``default`` when it is None."""
        return default if self.chunk_size is None else int(self.chunk_size)


def get_executor(executor: "str | Executor | None" = "local", *, workers: int | None = None,
                 address: str | None = None) -> Executor:
    """An :class:`Executor` from its name (``local`` or ``ray``) and options, or ``executor`` itself.

    Args:
        executor: ``"local"`` (default; None too), ``"ray"``, or an Executor (returned as it is).
        workers: Ray workers, or blocks run at the same time on threads by the local executor (>= 1;
            default: every CPU this process may use, :func:`usable_cpus`).
        address: an existing Ray cluster; only with ``ray``.

    Returns:
        The executor. Raises ``ValueError`` for bad options, when Ray is not installed, or when
        ``address`` cannot be reached within 5 seconds.
    """
    if isinstance(executor, Executor):
        if workers is not None or address is not None:
            raise ValueError("workers and address are options of an executor given by name; "
                             "pass them to get_executor instead")
        return executor
    name = check_choice("executor", "local" if executor is None else executor, EXECUTORS)
    if workers is not None:
        workers = check_int("workers", workers, minimum=1)
    if name == "local":
        if address is not None:
            raise ValueError("address names a Ray cluster: it needs executor ray")
        return LocalExecutor(workers=workers or usable_cpus())
    return RayExecutor(workers=workers, address=address)


@contextlib.contextmanager
def using_executor(executor: "str | Executor | None" = "local", **options: Any) -> Iterator[Executor]:
    """``with using_executor(x) as ex:`` the executor of ``x`` (:func:`get_executor`), closed at
    the end if it was made here (an Executor passed in is left open for its owner).

    Args:
        executor: a name or an Executor.
        **options: ``workers``, ``address`` (with a name).

    Returns:
        A context manager yielding the executor.
    """
    ex = get_executor(executor, **options)
    try:
        yield ex
    finally:
        if ex is not executor:
            ex.close()


@dataclass(frozen=True)
class ProgressBar:
    """The progress bar of :func:`run_blocks` (tqdm on stderr).

    Attributes:
        desc: its text (the executor is added when not local).
        unit: its unit.
        total: its end (default: the items to do).
        initial: its start.
        weight: ``weight(result)``: how many units an item counts (default 1).
        leave: keep it at the end.
    """

    desc: str = "blocks"
    unit: str = "trial"
    total: int | None = None
    initial: int = 0
    weight: Callable[[Any], int] | None = None
    leave: bool = True


def run_blocks(executor: Executor, fn: BlockFn, job: Any, blocks: Sequence[Block], sink: Callable[[int, Any], None], *,
               progress: ProgressBar | None = None, gpu: bool = False) -> None:
    """:meth:`Executor.run` with one progress bar on this process's stderr counting finished items.

    Args:
        executor: where the blocks run.
        fn, job, blocks: as for :meth:`Executor.run`.
        sink: called with every item and its result (e.g. a :class:`TrialLog`'s ``append``).
        progress: the bar (:class:`ProgressBar`), or None for none.
        gpu: the blocks run on a CUDA device.
    """
    bar = None
    weight = None if progress is None else progress.weight
    if progress is not None:
        desc, unit, total, initial, leave = progress.desc, progress.unit, progress.total, progress.initial, progress.leave
        todo = sum(len(b.todo) for b in blocks)
        if total is None:
            total = todo
        if total > 0:
            from tqdm.auto import tqdm

            text = desc if executor.describe() == "local" else f"{desc} ({executor.describe()})"
            bar = tqdm(total=total, initial=initial, desc=text, unit=unit, leave=leave, file=sys.stderr)

    def emit(item: int, result: Any) -> None:
        sink(item, result)
        if bar is not None:
            bar.update(1 if weight is None else weight(result))

    try:
        executor.run(fn, job, blocks, emit, gpu=gpu)
    finally:
        if bar is not None:
            bar.close()
