"""The callbacks of the bag engine: held-out errors, early stopping, guards."""

import os
import sys
from collections import deque
from copy import deepcopy

import numpy as np
import torch
from skorch.callbacks import (
    BatchScoring,
    Callback,
    EarlyStopping,
    EpochScoring,
    PrintLog,
    ProgressBar,
)
from skorch.utils import Ansi


def _higher_is_better(metric):
    return metric == "r2"


class BagValidationErrors(Callback):
    """Record the held-out bags' errors every epoch (``valid_<metric>``) and
    whether each is the best of the fit so far (``valid_<metric>_best``)."""

    def on_train_begin(self, net, **kwargs):
        self.first_epoch_ = len(net.history)

    def on_epoch_end(self, net, dataset_valid=None, **kwargs):
        outputs, net._valid_outputs_ = getattr(net, "_valid_outputs_", None), None
        if dataset_valid is None or not outputs:
            return
        logits = torch.cat([logits for logits, _ in outputs]).float().cpu()
        rows = torch.cat([rows for _, rows in outputs]).cpu().numpy()
        distinct, first = np.unique(rows, return_index=True)
        bags, _ = dataset_valid.bags.restrict(distinct)
        if torch.isfinite(logits).all():
            errors = net._bag_errors(bags, logits[torch.from_numpy(first)])
        else:  # a diverged network: no fake score
            errors = dict.fromkeys(net._bag_errors(bags, None), np.nan)
        start = getattr(self, "first_epoch_", 0)
        for name, value in errors.items():
            best = _is_best(net.history[start:-1], name, errors)
            net.history.record(f"valid_{name}", value)
            net.history.record(f"valid_{name}_best", best)


def _is_best(earlier, name, errors):
    """Better than every earlier epoch; soft error breaks hard-error ties."""
    sign = -1.0 if _higher_is_better(name) else 1.0
    tie = "soft_" + name.split("_")[1] if name.startswith("hard_") else None

    def key(row):
        return (sign * row[f"valid_{name}"], row[f"valid_{tie}"] if tie else 0.0)

    now = key({f"valid_{k}": v for k, v in errors.items()})
    if not np.isfinite(now[0]):
        return False
    earlier = [
        key(row) for row in earlier if np.isfinite(row.get(f"valid_{name}", np.nan))
    ]
    return not earlier or now < min(earlier)


class BagEarlyStopping(EarlyStopping):
    """skorch's ``EarlyStopping(load_best=True)`` on the head's held-out error.

    Active when ``do_early_stopping_``; restores ``best_epoch_``. With
    ``_stopping_noise`` it stops only on a rise beyond the curve's noise and keeps
    the middle of the 5 best epochs (:ref:`regression_early_stopping`)."""

    def __init__(self):
        super().__init__(load_best=True)

    def on_train_begin(self, net, **kwargs):
        self.active_ = bool(getattr(net, "do_early_stopping_", False))
        net.best_epoch_ = None
        self.monitor = f"valid_{net._stopping_metric}"
        self.patience = net.n_iter_no_change
        self.noise_ = getattr(net, "_stopping_noise", None)
        self.sink = print if net.verbose else _silent
        self.history_ = net.history
        self.first_epoch_ = len(net.history)
        self.recent_, self.kept_index_, self.best_index_ = deque(maxlen=5), None, None
        self.stopped_ = False
        super().on_train_begin(net, **kwargs)

    def _is_score_improved(self, score):
        return bool(self.history_[-1].get(self.monitor + "_best", False))

    def on_epoch_end(self, net, **kwargs):
        if not self.active_:
            return
        if self.noise_ is None:
            try:
                return super().on_epoch_end(net, **kwargs)
            except KeyboardInterrupt:
                self.stopped_ = True
                raise
        sign = -1.0 if _higher_is_better(self.monitor[len("valid_") :]) else 1.0
        history = net.history[self.first_epoch_ :, self.monitor]
        curve = sign * np.asarray(history, dtype=float)
        epoch = net.history[-1, "epoch"]
        self.recent_.append((epoch, deepcopy(net.module_.state_dict())))
        # a new kept epoch is the newest window's middle: among the last 5
        kept = lowest_window_epoch(curve) - 1
        if kept != self.kept_index_:
            self.kept_index_ = kept
            self.best_epoch_, self.best_model_weights_ = self.recent_[kept - len(curve)]
        if self._is_score_improved(None):
            self.best_index_ = len(curve) - 1
        best = self.best_index_
        if best is not None and tied_with_best(curve, best, self.noise_):
            self.misses_ = 0
            return
        self.misses_ += 1
        if self.misses_ == self.patience:
            self.sink(
                f"Stopping since {self.monitor} has risen beyond its noise for "
                f"{self.patience} epochs."
            )
            self.stopped_ = True
            raise KeyboardInterrupt

    def on_train_end(self, net, **kwargs):
        if self.active_ and self.best_model_weights_ is not None:
            super().on_train_end(net, **kwargs)
            net.best_epoch_ = self.best_epoch_
        self.best_model_weights_, self.recent_ = None, None


def curve_noise(curve):
    """Robust scale of a curve's epoch-to-epoch noise (the median absolute
    second difference, blind to a trend, as a standard deviation); inf under 3."""
    curve = np.asarray(curve, dtype=float)
    curve = curve[np.isfinite(curve)]
    if len(curve) < 3:
        return np.inf
    wiggle = curve[1:-1] - (curve[:-2] + curve[2:]) / 2
    return 1.4826 * float(np.median(np.abs(wiggle))) / np.sqrt(1.5)


def lowest_window_epoch(curve, width=5):
    """The middle epoch (1-based) of the ``width`` consecutive epochs of
    ``curve`` (lower is better) with the lowest mean."""
    curve = np.asarray(curve, dtype=float)
    if len(curve) <= width:
        return int(np.nanargmin(curve)) + 1 if np.isfinite(curve).any() else 1
    means = np.convolve(np.nan_to_num(curve, nan=np.inf), np.ones(width), "valid")
    return int(np.argmin(means)) + (width + 1) // 2


def tied_with_best(curve, best, z):
    """Whether the last epoch is within ``z`` noise scales of epoch ``best``."""
    last = curve[-1]
    return bool(np.isfinite(last) and last <= curve[best] + z * curve_noise(curve))


def _silent(*args, **kwargs):
    pass


class EpochTable(PrintLog):
    """skorch's epoch table; best values marked ``*`` off a terminal. With
    ``verbose >= 2`` each epoch also records and shows its optimizer steps
    (``steps``) and training rows a second (``rows_per_s``)."""

    def on_epoch_end(self, net, **kwargs):
        if net.verbose >= 2:  # after EpochTimer: skorch calls PrintLog last
            batches = net.history[-1, "batches"]
            sizes = [b["train_batch_size"] for b in batches if "train_batch_size" in b]
            net.history.record("steps", len(sizes))
            net.history.record("rows_per_s", round(sum(sizes) / net.history[-1, "dur"]))
        return super().on_epoch_end(net, **kwargs)

    def on_train_begin(self, net, **kwargs):
        reason = net.fit_plan_.reason
        if reason and net.verbose:
            name = type(net.method_).__name__
            self.sink(f"method='auto' trains {name}: {reason}.")
        return super().on_train_begin(net, **kwargs)

    def format_row(self, row, key, color):
        if getattr(sys.stdout, "isatty", bool)() and "NO_COLOR" not in os.environ:
            return super().format_row(row, key, color)
        formatted = super().format_row(row, key, color="")
        if isinstance(row.get(key + "_best"), bool) and row[key + "_best"]:
            formatted = formatted.replace(Ansi.ENDC.value, "") + "*"
        return formatted


class CallbackGuard(Callback):
    """Refuse, before the first step, callbacks that cannot work on bags."""

    def on_train_begin(self, net, X=None, y=None, **kwargs):
        for name, callback in net.callbacks_:
            per_epoch = getattr(callback, "batches_per_epoch", None)
            if isinstance(callback, ProgressBar) and per_epoch == "auto":
                raise TypeError(
                    f"callbacks: {name!r} is ProgressBar(batches_per_epoch='auto'), "
                    "ProgressBar()'s default, which takes len(X) / batch_size "
                    "as the batches of an epoch; LLP batches pack whole bags "
                    "(and hold some out), so that total would be wrong. Use "
                    "ProgressBar('count'), which counts the first epoch's "
                    "batches (that epoch's bar has no total)."
                )
            if isinstance(callback, (EpochScoring, BatchScoring)):
                raise TypeError(
                    f"callbacks: {type(callback).__name__} ({name!r}) scores instance "
                    "predictions against labels, which LLP data do not have (y holds "
                    "bag ids). Use validation_fraction: the history then records the "
                    "held-out bag errors (valid_hard_l1, ... or valid_mse, ...), "
                    "which EarlyStopping and Checkpoint can monitor."
                )
            monitor = getattr(callback, "monitor", None)
            on_valid = isinstance(monitor, str) and monitor.startswith("valid_")
            ours = isinstance(callback, BagEarlyStopping)
            if on_valid and not ours and not net.fit_plan_.held_out:
                raise ValueError(
                    f"callbacks: {type(callback).__name__} ({name!r}) monitors "
                    f"{monitor!r}, which is recorded only on held-out bags; set "
                    "validation_fraction (e.g. 0.1), or monitor a train_* record."
                )
