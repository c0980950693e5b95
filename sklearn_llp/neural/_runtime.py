"""Where and how a network runs: the device, and the torch state a fit sets."""

import multiprocessing
import os
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
from sklearn.utils import check_random_state


def resolve_device(device):
    """``"auto"`` is CUDA when available, else the CPU; anything else as is."""
    if isinstance(device, str) and device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def check_device(device):
    """Refuse a ``device`` torch cannot use here, naming the parameter."""
    if resolve_device(device) is None:
        return
    try:
        parsed = torch.device(resolve_device(device))
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
    """``"cpu"``, ``"cuda"``...; None is torch's default device."""
    device = resolve_device(device)
    if device is None:
        default = getattr(torch, "get_default_device", None)  # torch >= 2.3
        return default().type if default is not None else "cpu"
    return torch.device(device).type


def resident(X, device):
    """``X`` moved once to a GPU if it takes at most half the free memory."""
    device = resolve_device(device)
    if device is None or not torch.is_tensor(X) or torch.device(device).type != "cuda":
        return X
    free, _ = torch.cuda.mem_get_info(torch.device(device))
    return X if X.element_size() * X.nelement() > free // 2 else X.to(device)


def draw_seed(random_state, offset=0):
    """A torch seed from ``random_state`` (None: none), shifted by ``offset``."""
    if random_state is None:
        return None
    rng = check_random_state(random_state)
    return int(rng.randint(np.iinfo(np.int32).max) + offset) % (2**31)


_CGROUP = Path("/sys/fs/cgroup")


def _cgroup_quota():
    """Cores a cgroup CPU quota allows (v2 ``cpu.max``, else v1), or None."""
    for names in (["cpu.max"], ["cpu/cpu.cfs_quota_us", "cpu/cpu.cfs_period_us"]):
        try:
            text = " ".join((_CGROUP / name).read_text() for name in names)
            quota, period = (float(v) for v in text.replace("max", "-1").split()[:2])
        except (OSError, ValueError):
            continue
        return quota / period if quota > 0 and period > 0 else None
    return None


def available_cores():
    """The process's CPU affinity, capped by a cgroup quota (rounded down)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    quota = _cgroup_quota()
    return max(min(cores, int(quota)) if quota is not None else cores, 1)


def in_worker():
    """Whether this runs in a joblib, loky or Dask worker."""
    try:  # in any joblib worker, the active backend is a nested one
        backend, _ = sys.modules["joblib.parallel"].get_active_backend()
        if getattr(backend, "nesting_level", None):
            return True
    except Exception:  # joblib not imported, or its internals changed
        pass
    try:
        sys.modules["distributed"].get_worker()  # ValueError outside a worker
        return True
    except Exception:
        pass
    return multiprocessing.current_process().name.startswith("LokyProcess")


def auto_threads():
    """The threads of ``n_threads="auto"``, read from no load, so a seeded fit
    gives the same model whatever else runs (:ref:`reproducibility`)."""
    if in_worker():
        return 1
    return max(min(available_cores(), torch.get_num_threads()), 1)


#: cuBLAS workspace settings with which cuBLAS is deterministic (CUDA >= 10.2).
_CUBLAS_DETERMINISTIC = (":4096:8", ":16:8")


@contextmanager
def deterministic(enabled=True):
    """Deterministic torch algorithms and cuBLAS workspace, the caller's mode
    restored on exit; ``enabled=False`` is a no-op (:ref:`reproducibility`).

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
    """Contexts that make torch use an estimator's device, threads and seed."""

    def _resolved_device(self):
        """``device`` with ``"auto"`` resolved (a hook for wrappers)."""
        return resolve_device(self.device)

    @contextmanager
    def _on_device(self):
        """Let skorch see the resolved device while it works, keep ``"auto"``."""
        requested, resolved = self.device, self._resolved_device()
        self.device = resolved
        try:
            yield
        finally:
            if self.device == resolved:  # unless set_params changed it inside
                self.device = requested

    @contextmanager
    def _threads(self):
        """``n_threads`` torch threads on the CPU, restored afterwards."""
        wanted = self.n_threads
        if wanted is None or device_type(self._resolved_device()) != "cpu":
            yield
            return
        previous = torch.get_num_threads()
        torch.set_num_threads(auto_threads() if wanted == "auto" else wanted)
        try:
            yield
        finally:
            torch.set_num_threads(previous)

    @contextmanager
    def _seeded(self):
        """Seed a fork of torch's RNG, leaving the caller's as it was."""
        seed, device = getattr(self, "_seed_", None), self._resolved_device()
        cuda = device_type(device) == "cuda"
        devices = [torch.device(device).index or 0] if cuda else []
        with torch.random.fork_rng(devices=devices, enabled=seed is not None):
            if seed is not None:
                torch.manual_seed(seed)
            yield

    def _move_to_device(self):
        """Move the network and optimizer state to ``device`` (None: stay)."""
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
