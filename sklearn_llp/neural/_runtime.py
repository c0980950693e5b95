"""Where and how a network runs: device, torch threads, seeding, residency.

One place for the process-wide torch state an estimator touches while it
fits or predicts, always restored afterwards, and for the device rules
(``"auto"``, strings and ``torch.device`` objects mean the same thing).
"""

import math
import multiprocessing
import os
import sys
import threading
import time
from contextlib import contextmanager
from functools import lru_cache

import numpy as np
import torch
from sklearn.utils import check_random_state


def resolve_device(device):
    """``"auto"`` is CUDA when available, else the CPU; anything else as given.

    None stays None: placement is left to someone else (skorch's
    ``AccelerateMixin`` lets the accelerator place the network); tensors
    are then not moved.
    """
    if isinstance(device, str) and device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def check_device(device):
    """Refuse a ``device`` torch cannot use here, naming the parameter.

    ``"auto"`` and None always pass; a CUDA device must exist (CUDA
    available, its index below the device count).
    """
    resolved = resolve_device(device)
    if resolved is None:
        return
    try:
        parsed = torch.device(resolved)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise ValueError(
            f"device={device!r} is not a torch device: use 'auto', 'cpu', "
            f"'cuda' or 'cuda:<index>' ({exc})."
        ) from None
    if parsed.type != "cuda":
        return
    if not torch.cuda.is_available():
        raise ValueError(
            f"device={device!r}, but CUDA is not available here "
            "(torch.cuda.is_available() is False): use device='auto' or 'cpu'."
        )
    count = torch.cuda.device_count()
    if parsed.index is not None and parsed.index >= count:
        raise ValueError(
            f"device={device!r}, but this machine has {count} CUDA device(s) "
            f"(cuda:0 to cuda:{count - 1})."
        )


def device_type(device):
    """``"cpu"``, ``"cuda"``...: the same for ``"cpu"`` and ``torch.device("cpu")``;
    None is torch's default device (where unmoved tensors are made)."""
    device = resolve_device(device)
    if device is None:
        default = getattr(torch, "get_default_device", None)  # torch >= 2.3
        return default().type if default is not None else "cpu"
    return torch.device(device).type


def resident(X, device):
    """``X`` moved once to a GPU when it takes at most half its free memory.

    Batches are then gathered by index on the device: one transfer per fit
    instead of one per step. Sparse ``X`` stays on the host (densified per
    batch), as does ``X`` too large for the device, or when ``device`` is
    None (placement left to someone else).
    """
    device = resolve_device(device)
    if device is None or not torch.is_tensor(X):
        return X
    device = torch.device(device)
    if device.type != "cuda":
        return X
    free, _ = torch.cuda.mem_get_info(device)
    if X.element_size() * X.nelement() > free // 2:
        return X
    return X.to(device)


def draw_seed(random_state, offset=0):
    """A torch seed from ``random_state`` (None: no seeding), shifted by
    ``offset`` so that successive ``partial_fit`` calls draw new numbers."""
    if random_state is None:
        return None
    rng = check_random_state(random_state)
    return int(rng.randint(np.iinfo(np.int32).max) + offset) % (2**31)


# ----------------------------------------------------------------------
# n_threads="auto"
# ----------------------------------------------------------------------
#: Time constant (s) of the kernel's 1-minute load average.
_LOAD_WINDOW = 60.0
_own_load_state = {}
_own_load_lock = threading.Lock()


def _process_age():
    """Seconds since this process started (Linux), or None."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"), 0.0)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def own_load():
    """This process's share of the 1-minute load average, estimated.

    The kernel's load average is the number of running threads filtered
    with a time constant of one minute; the same filter is applied here to
    the CPU time of this process (all its threads) between two calls, the
    first call covering the time since the process started. The estimate
    errs low when the process was idle long and then busy between two calls,
    which counts its own work as other load: fewer threads, never more.
    """
    now, cpu = time.monotonic(), time.process_time()
    with _own_load_lock:
        state = _own_load_state
        if not state:
            age = _process_age()
            state.update(wall=now - (age or 0.0), cpu=0.0, load=0.0)
        elapsed = now - state["wall"]
        if elapsed > 0:
            usage = max(cpu - state["cpu"], 0.0) / elapsed
            decay = math.exp(-elapsed / _LOAD_WINDOW)
            state["load"] = state["load"] * decay + usage * (1.0 - decay)
        state.update(wall=now, cpu=cpu)
        return state["load"]


def _own_running_threads():
    """Threads of this process that are runnable now (Linux)."""
    running = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/stat") as f:
                running += f.read().rsplit(")", 1)[1].split()[0] == "R"
        except (OSError, IndexError):  # a thread that just ended
            pass
    return max(running, 1)  # this one, at least


def running_others(samples=3):
    """Threads of other processes runnable right now, or None (not Linux).

    The kernel's count of runnable threads (``/proc/loadavg``) less this
    process's own, the median of ``samples`` snapshots. Unlike the 1-minute
    load average, it sees at once a busy process that has just started.
    """
    counts = []
    try:
        for _ in range(samples):
            with open("/proc/loadavg") as f:
                running = int(f.read().split()[3].split("/")[0])
            counts.append(max(running - _own_running_threads(), 0))
    except (OSError, ValueError, IndexError):
        return None
    return sorted(counts)[len(counts) // 2]


#: ``busy_now``: the window it measures over, and how long a measurement is
#: reused (fits and predictions in a loop measure once a second at most).
_BUSY_WINDOW = 0.1
_BUSY_REUSE = 1.0
_busy_state = {}


def busy_now(window=_BUSY_WINDOW):
    """Cores that other processes kept busy over the last ``window`` seconds.

    From the machine's CPU counters (``/proc/stat``) over a short window,
    less this process's CPU time in it; None where unknown (not Linux).
    Unlike the 1-minute load average, it falls to 0 as soon as a process
    ends, so that a fit started right after another one (a script run twice,
    a benchmark's next variant) sees an idle machine as idle. Reused for
    ``_BUSY_REUSE`` seconds.
    """
    now = time.monotonic()
    if _busy_state and now - _busy_state["at"] < _BUSY_REUSE:
        return _busy_state["busy"]
    try:
        ticks = os.sysconf("SC_CLK_TCK")
        first, cpu0 = _cpu_ticks(), time.process_time()
        time.sleep(window)
        second, cpu1 = _cpu_ticks(), time.process_time()
    except (OSError, ValueError, AttributeError):
        return None
    elapsed = max(time.monotonic() - now, 1e-3)
    busy = (second - first) / ticks / elapsed - (cpu1 - cpu0) / elapsed
    _busy_state.update(at=time.monotonic(), busy=max(busy, 0.0))
    return _busy_state["busy"]


def _cpu_ticks():
    """Busy clock ticks of all CPUs since boot (all but idle and iowait)."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    return sum(fields) - fields[3] - (fields[4] if len(fields) > 4 else 0)


@lru_cache(maxsize=1)
def _cgroup_cpu_limit():
    """Cores allowed by a cgroup CPU quota (containers), or None."""
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:  # cgroup v2: "quota period"
            quota, period = f.read().split()[:2]
        if quota != "max":
            return float(quota) / float(period)
    except (OSError, ValueError):
        pass
    try:  # cgroup v1
        with open("/sys/fs/cgroup/cpu/cpu.cfs_quota_us") as f:
            quota = float(f.read())
        with open("/sys/fs/cgroup/cpu/cpu.cfs_period_us") as f:
            period = float(f.read())
        if quota > 0 and period > 0:
            return quota / period
    except (OSError, ValueError):
        pass
    return None


def available_cores():
    """Cores this process may run on: its CPU affinity, capped by a cgroup
    CPU quota (a container's ``--cpus``)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = _cgroup_cpu_limit()
    if quota is not None:
        cores = min(cores, max(int(quota), 1))
    return max(cores, 1)


def in_worker():
    """Whether this code runs inside a parallel worker that shares the cores.

    True inside a joblib worker (any backend: its nested backend has
    ``nesting_level > 0``), a loky worker process, or a Dask worker
    (``distributed.get_worker()``). Modules are only looked at if already
    imported.
    """
    joblib_parallel = sys.modules.get("joblib.parallel")
    if joblib_parallel is not None:
        try:
            backend, _ = joblib_parallel.get_active_backend()
            if (getattr(backend, "nesting_level", None) or 0) > 0:
                return True
        except Exception:  # pragma: no cover - joblib internals changed
            pass
    if multiprocessing.current_process().name.startswith("LokyProcess"):
        return True
    distributed = sys.modules.get("distributed")
    if distributed is not None:
        try:
            distributed.get_worker()
            return True
        except Exception:  # ValueError outside a worker
            pass
    return False


def auto_threads(
    cores=None, load=None, own=None, worker=None, limit=None, running=None, now=None
):
    """The torch threads of ``n_threads="auto"``: the free cores, or 1.

    ``busy = max(min(load - own, now), min(running, floor(now + 0.75)))``,
    the cores other processes use -- by the 1-minute load average, unless
    the CPU counters of the last 0.1 s (``now``) show less (the average lags
    a minute behind a process that has ended), and by the threads runnable
    right now, which see at once a process the average has not caught up
    with, unless the counters show it used less than a quarter of a core
    (a snapshot artefact) -- and
    ``threads = clip(round(cores - busy), 1, min(cores, limit))``: the cores
    not busy, a core counting as free when less than half of it is busy;
    1 inside a parallel worker. Every input is detected when None, and may
    be given (tests, what-ifs).

    Parameters
    ----------
    cores : int, default=None
        Cores the process may use (:func:`available_cores`: CPU affinity,
        cgroup quota).
    load : float, default=None
        The 1-minute load average (``os.getloadavg()[0]``); where there is
        none (Windows), the machine counts as busy: 1 thread.
    own : float, default=None
        This process's share of ``load`` (:func:`own_load`).
    worker : bool, default=None
        Whether this runs in a joblib, loky or Dask worker (:func:`in_worker`),
        whose siblings share the cores: then 1.
    limit : int, default=None
        The most threads allowed: ``torch.get_num_threads()``, which follows
        ``torch.set_num_threads``, ``OMP_NUM_THREADS`` (joblib's loky workers
        set it) and ``threadpoolctl.threadpool_limits``.
    running : int, default=None
        Threads of other processes runnable now (:func:`running_others`);
        0 where unknown.
    now : float, default=None
        Cores other processes kept busy over the last 0.1 s
        (:func:`busy_now`); where unknown the load average stands alone.

    Returns
    -------
    int, at least 1

    Examples
    --------
    >>> from sklearn_llp.neural._runtime import auto_threads
    >>> idle = dict(cores=2, own=0.0, worker=False, limit=2)
    >>> auto_threads(load=0.1, running=0, **idle)
    2
    >>> auto_threads(load=1.05, running=1, now=1.0, **idle)  # one busy process
    1
    >>> auto_threads(load=0.1, running=1, now=1.0, **idle)  # ... just started
    1
    >>> auto_threads(load=0.1, running=1, now=0.0, **idle)  # ... used no CPU
    2
    >>> auto_threads(load=1.05, running=0, now=0.0, **idle)  # ... that has ended
    2
    """
    if worker is None:
        worker = in_worker()
    if worker:
        return 1
    if limit is None:
        limit = torch.get_num_threads()
    if cores is None:
        cores = available_cores()
    cap = max(min(int(cores), int(limit)), 1)
    if cap == 1:
        return 1
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):
            return 1
    if own is None:
        own = own_load()
    if running is None:
        running = running_others() or 0
    others = load - own
    if others > 0.5 or running > 0:  # busy by the average or a snapshot: still?
        if now is None:
            now = busy_now()
        if now is not None:
            others = min(others, now)
            # a runnable thread that used no CPU in the window is a snapshot
            # artefact (often this process's own spinning OpenMP thread,
            # counted at another instant), not a busy process
            if math.isfinite(now):
                running = min(running, math.floor(now + 0.75))
    free = cores - max(others, running, 0.0)
    return int(min(max(math.floor(free + 0.5), 1), cap))


# ----------------------------------------------------------------------
# deterministic CUDA
# ----------------------------------------------------------------------
#: cuBLAS workspace settings with which cuBLAS is deterministic (CUDA >= 10.2).
_CUBLAS_DETERMINISTIC = (":4096:8", ":16:8")


@contextmanager
def deterministic(enabled=True):
    """Run torch with deterministic algorithms only, restoring the caller's mode.

    Inside, ``torch.use_deterministic_algorithms(True)`` is on (an operation
    with no deterministic implementation raises) and the environment
    variable ``CUBLAS_WORKSPACE_CONFIG`` is ``":4096:8"`` unless it already
    holds a deterministic setting; both, and the warn-only flag, are
    restored on exit, also when the body raises. Meant for CUDA fits (the
    package's own reductions are deterministic anyway): torch reads the
    variable when it checks a cuBLAS call under deterministic mode, but
    sizes the cuBLAS workspace from it once per process, so for multi-stream
    work set it before CUDA is first used.

    Parameters
    ----------
    enabled : bool, default=True
        False makes the context a no-op.

    Examples
    --------
    >>> import torch
    >>> from sklearn_llp.neural._runtime import deterministic
    >>> with deterministic():
    ...     torch.are_deterministic_algorithms_enabled()
    True
    >>> torch.are_deterministic_algorithms_enabled()
    False
    """
    if not enabled:
        yield
        return
    mode = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    env = os.environ.get("CUBLAS_WORKSPACE_CONFIG")
    try:
        if env not in _CUBLAS_DETERMINISTIC:
            os.environ["CUBLAS_WORKSPACE_CONFIG"] = _CUBLAS_DETERMINISTIC[0]
        torch.use_deterministic_algorithms(True)
        yield
    finally:
        torch.use_deterministic_algorithms(mode, warn_only=warn_only)
        if env is None:
            os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)
        else:
            os.environ["CUBLAS_WORKSPACE_CONFIG"] = env


class RuntimeMixin:
    """Context managers for the device, threads and seed of an estimator.

    The estimator has ``device``, ``n_threads`` and a drawn ``_seed_``; these
    contexts make torch use them while it works and restore the caller's
    settings afterwards.
    """

    def _resolved_device(self):
        """The device the estimator computes on: ``device`` with ``"auto"``
        resolved. Hook: a subclass whose ``device=None`` leaves placement to
        a wrapper (an accelerator) returns the wrapper's device."""
        return resolve_device(self.device)

    @contextmanager
    def _on_device(self):
        """Let skorch see the resolved device while it works, keep ``"auto"``."""
        requested = self.device
        resolved = self._resolved_device()
        self.device = resolved
        try:
            yield
        finally:
            if self.device == resolved:  # unless set_params changed it inside
                self.device = requested

    @contextmanager
    def _threads(self):
        """Use ``n_threads`` torch threads on the CPU, restored afterwards
        (``"auto"``: :func:`auto_threads`, decided once on entering)."""
        wanted = self.n_threads
        if wanted is None or device_type(self._resolved_device()) != "cpu":
            yield
            return
        if wanted == "auto":
            wanted = auto_threads()
        previous = torch.get_num_threads()
        torch.set_num_threads(wanted)
        try:
            yield
        finally:
            torch.set_num_threads(previous)

    @contextmanager
    def _seeded(self):
        """Seed a fork of torch's RNG, so a fit is reproducible and the
        caller's global RNG state is left as it was. CUDA's generator is
        forked only for a CUDA fit (forking it creates a CUDA context)."""
        if getattr(self, "_seed_", None) is None:
            yield
            return
        devices = []
        device = self._resolved_device()
        if device_type(device) == "cuda":
            devices = [torch.device(device).index or 0]
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(self._seed_)
            yield

    def _move_to_device(self):
        """Move the network and the optimizer state to ``device`` (None:
        they stay where they are)."""
        device = self._resolved_device()
        if device is None:
            return
        for name in self._modules:
            getattr(self, name + "_").to(device)
        for name in self._optimizers:
            optimizer = getattr(self, name + "_", None)
            if optimizer is not None:
                # load_state_dict casts the state to the parameters' devices
                optimizer.load_state_dict(optimizer.state_dict())

    def __setstate__(self, state):
        # a model pickled on a GPU loads on a machine without one
        requested = state.get("device", "auto")
        state["device"] = resolve_device(requested)
        super().__setstate__(state)
        self.device = requested
