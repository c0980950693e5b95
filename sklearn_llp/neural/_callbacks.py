"""Per-epoch bag-level validation errors for the skorch history."""

import os
import sys

import numpy as np
import torch
from skorch.callbacks import BatchScoring, Callback, EpochScoring, PrintLog, ProgressBar
from skorch.utils import Ansi

from ..core import errors_of_pairs
from ..exceptions import FitDivergedError
from ..metrics import BAG_METRICS


class BagValidationErrors(Callback):
    """Record the four bag errors of the held-out bags every epoch.

    Validation batches hold whole bags: the callback collects the predictions
    the validation step already made and, at the end of the epoch, computes
    the errors over all held-out bags. The hard errors label the rows with
    the classifier's decision rule (``threshold``): for the prior-matched
    rule, the labels whose class rates over the held-out rows match the
    held-out bags' overall proportions, so that a model predicting one class
    everywhere by ``argmax`` is still ranked by how well it orders the rows.

    The history gets ``valid_hard_l1``, ``valid_soft_l1``, ``valid_hard_kl``
    and ``valid_soft_kl`` and, for each, ``valid_<metric>_best``: True when
    the epoch improves on every earlier one, ties on a hard error broken by
    the soft error of the same distance. Monitor them with skorch's
    ``EarlyStopping`` or ``Checkpoint`` (``monitor="valid_hard_l1_best"``).
    """

    def on_epoch_begin(self, net, **kwargs):
        self.batches_ = []

    def on_batch_end(self, net, batch=None, training=False, y_pred=None, **kwargs):
        if training:
            return
        self.batches_.append(held_out_batch(y_pred.detach(), batch[1]))

    def on_epoch_end(self, net, dataset_valid=None, **kwargs):
        if dataset_valid is None or not getattr(self, "batches_", None):
            return
        proba, segments, bag_props, weights, bag_weights = _concatenate(self.batches_)
        self.batches_ = []
        if not np.isfinite(proba).all():  # a diverged network: no fake score
            errors = dict.fromkeys(BAG_METRICS, np.nan)
        else:
            totals = np.bincount(segments, weights=weights, minlength=len(bag_props))
            prior = totals @ bag_props / totals.sum()
            pred = net._decide(proba, net._offsets(proba, prior, weights))
            errors = errors_of_pairs(
                segments, bag_props, proba, BAG_METRICS, weights, bag_weights, pred
            )
        for name, value in errors.items():
            tie_break = (
                "soft_" + name.split("_")[1] if name.startswith("hard") else None
            )
            is_best = _is_best(net.history, name, errors, tie_break)
            net.history.record(f"valid_{name}", value)
            net.history.record(f"valid_{name}_best", is_best)


def held_out_batch(pred, target):
    """What a validation batch leaves for the epoch's bag errors.

    ``(pred, segments, bag_props, weights, bag_weights)``, one row of
    ``pred`` per (bag, row) pair, kept where they are (predictions on the
    device): one host transfer an epoch, in ``on_epoch_end``, not one per
    batch. Missing weights are ones.
    """
    weights = target.get("weights")
    if "members" in target:  # overlapping bags: one row per bag member
        members = target["members"]
        pred = pred[members.to(pred.device)]
        if weights is not None:
            weights = weights[members.to(weights.device)]
    bag_weights = target.get("bag_weights")
    return (
        pred,
        target["segments"],
        target["bag_props"],
        torch.ones(len(pred)) if weights is None else weights,
        torch.ones(len(target["bag_props"])) if bag_weights is None else bag_weights,
    )


def _concatenate(batches):
    """The batches' tensors joined (one host copy each), bag numbers made
    global; probabilities of the logits in float32, as ``predict_proba``."""

    def host(tensors):
        return torch.cat([t.reshape(len(t), -1) for t in tensors]).cpu().numpy()

    offsets = np.cumsum([0] + [len(b[2]) for b in batches[:-1]])
    logits = torch.cat([b[0] for b in batches]).float()
    return (
        torch.softmax(logits, dim=1).cpu().numpy().astype(np.float64),
        np.concatenate([b[1].cpu().numpy() + o for b, o in zip(batches, offsets)]),
        host([b[2] for b in batches]).astype(np.float64),
        host([b[3] for b in batches]).ravel().astype(np.float64),
        host([b[4] for b in batches]).ravel().astype(np.float64),
    )


def _is_best(history, name, errors, tie_break):
    """Lower than every earlier epoch; on a tie, lower ``tie_break`` error."""
    key = (errors[name], errors[tie_break] if tie_break else 0.0)
    if not np.isfinite(key[0]):
        return False
    previous = [
        (row[f"valid_{name}"], row.get(f"valid_{tie_break}", 0.0) if tie_break else 0.0)
        for row in history[:-1]
        if f"valid_{name}" in row
    ]
    previous = [p for p in previous if np.isfinite(p[0])]
    return not previous or key < min(previous)


class BagEarlyStopping(Callback):
    """Stop when the held-out bag error stops improving; keep the best epoch.

    Active when the estimator's ``do_early_stopping_`` is True (its
    ``early_stopping`` resolved for the fit). After every epoch it reads the
    ``valid_<record>_best`` flag that :class:`BagValidationErrors` (or the
    estimator's own validation callback) wrote for ``net._stopping_record``
    (for the classifier ``hard_l1``, ties broken by ``soft_l1``); it copies
    the module's weights (on their device) when the epoch is the best so far,
    stops the fit after ``n_iter_no_change`` epochs without improvement, and
    at the end of training restores the best epoch's weights. The restored
    epoch is ``best_epoch_`` on the estimator (1-based, in the history).
    """

    def on_train_begin(self, net, **kwargs):
        self.active_ = bool(getattr(net, "do_early_stopping_", False))
        self.best_state_ = None
        self.best_epoch_ = None
        self.misses_ = 0
        net.best_epoch_ = None

    def on_epoch_end(self, net, **kwargs):
        if not self.active_:
            return
        row = net.history[-1]
        if row.get(f"valid_{net._stopping_record}_best", False):
            self.best_state_ = {
                name: value.detach().clone()
                for name, value in net.module_.state_dict().items()
            }
            self.best_epoch_ = row["epoch"]
            self.misses_ = 0
            return
        self.misses_ += 1
        if self.misses_ >= net.n_iter_no_change:
            # skorch's way out of the fit loop (caught by partial_fit, which
            # then runs on_train_end)
            raise KeyboardInterrupt

    def on_train_end(self, net, **kwargs):
        if not self.active_ or self.best_state_ is None:
            return
        net.module_.load_state_dict(self.best_state_)
        net.best_epoch_ = self.best_epoch_
        self.best_state_ = None


class EpochTable(PrintLog):
    """skorch's epoch table, in plain text when the output is not a terminal.

    skorch colours the best value of each column with ANSI codes, which end
    up as escape sequences in log files, pipes and notebooks' captured
    output. When standard output is not a terminal (or ``NO_COLOR`` is set),
    the best values are marked with a ``*`` instead.
    """

    def format_row(self, row, key, color):
        if _color_output():
            return super().format_row(row, key, color)
        formatted = super().format_row(row, key, color="")
        if isinstance(row.get(key + "_best"), bool) and row[key + "_best"]:
            formatted = formatted.replace(Ansi.ENDC.value, "") + "*"
        return formatted


def _color_output():
    stream = sys.stdout
    return (
        hasattr(stream, "isatty") and stream.isatty() and "NO_COLOR" not in os.environ
    )


class DivergenceGuard(Callback):
    """Stop a fit whose training loss becomes NaN or infinite.

    Raises :class:`~sklearn_llp.exceptions.FitDivergedError` at the batch
    where it happens, naming the likely causes; the estimator then counts as
    not fitted. The loss is read from skorch's history, already on the host.
    """

    def on_batch_end(self, net, batch=None, training=False, **kwargs):
        if not training:
            return
        loss = net.history[-1, "batches", -1, "train_loss"]
        if np.isfinite(loss):
            return
        epoch = len(net.history)
        batch_index = len(net.history[-1, "batches"])
        raise FitDivergedError(
            f"The training loss became {loss} at epoch {epoch}, batch "
            f"{batch_index}: the fit diverged and the network's weights are no "
            f"longer usable. Likely causes: a learning rate too large for this "
            f"network (lr={net.lr}), a method hyperparameter out of its range "
            "(method__*), or features on very different scales (standardise X). "
            "Fit again with a smaller lr."
        )


class CallbackGuard(Callback):
    """Refuse, before the first step, callbacks that cannot work on bags.

    skorch's ``EpochScoring``/``BatchScoring`` score instances against labels
    that LLP data do not have; ``ProgressBar('auto')`` counts batches of
    ``batch_size`` rows while LLP batches hold whole bags; a callback that
    monitors a ``valid_*`` record (``EarlyStopping``, ``Checkpoint``,
    ``LRScheduler``) needs held-out bags (``validation_fraction``).
    """

    def on_train_begin(self, net, X=None, y=None, **kwargs):
        for name, callback in net.callbacks_:
            if isinstance(callback, ProgressBar) and (
                callback.batches_per_epoch == "auto"
            ):
                raise TypeError(
                    f"callbacks: {name!r} is ProgressBar(batches_per_epoch='auto'), "
                    "which counts batches of batch_size rows; LLP batches hold "
                    "whole bags. Use ProgressBar('count')."
                )
            if isinstance(callback, (EpochScoring, BatchScoring)):
                raise TypeError(
                    f"callbacks: {type(callback).__name__} ({name!r}) scores "
                    "instance predictions against labels, which LLP data do not "
                    "have (y holds bag ids). Use validation_fraction: the history "
                    "then records the held-out bag errors valid_hard_l1, "
                    "valid_soft_l1, valid_hard_kl and valid_soft_kl, which "
                    "EarlyStopping and Checkpoint can monitor."
                )
            monitor = getattr(callback, "monitor", None)
            if (
                isinstance(monitor, str)
                and monitor.startswith("valid_")
                and not net._held_out_fraction()
            ):
                raise ValueError(
                    f"callbacks: {type(callback).__name__} ({name!r}) monitors "
                    f"{monitor!r}, which is recorded only on held-out bags; set "
                    "validation_fraction (e.g. 0.1), or monitor a train_* record."
                )
