"""Per-epoch bag-level validation errors for the skorch history."""

import numpy as np
import torch
from skorch.callbacks import Callback

from .metrics import BAG_METRICS
from .metrics._bag_metrics import errors_of_pairs


class BagValidationErrors(Callback):
    """Record the four bag errors of the held-out bags every epoch.

    Validation batches hold whole bags, so the errors of each batch's bags
    are computed from the predictions the validation step already made and
    averaged over all held-out bags at the end of the epoch. The history gets
    ``valid_hard_l1``, ``valid_soft_l1``, ``valid_hard_kl`` and
    ``valid_soft_kl``; monitor them with skorch's ``EarlyStopping`` or
    ``Checkpoint`` (e.g. ``monitor="valid_hard_l1_best"``).
    """

    def on_epoch_begin(self, net, **kwargs):
        self.sums_ = dict.fromkeys(BAG_METRICS, 0.0)
        self.n_bags_ = 0

    def on_batch_end(self, net, batch=None, training=False, y_pred=None, **kwargs):
        if training:
            return
        target = batch[1]
        pairs = y_pred.detach()
        weights = target.get("weights")
        if "members" in target:  # overlapping bags: one row per bag member
            members = target["members"].to(pairs.device)
            pairs = pairs[members]
            if weights is not None:
                weights = weights[members.cpu()]
        proba = torch.softmax(pairs.float(), dim=1).cpu().numpy().astype(np.float64)
        bag_props = target["bag_props"].cpu().numpy().astype(np.float64)
        segments = target["segments"].cpu().numpy()
        bag_weights = target.get("bag_weights")
        bag_weights = (
            np.ones(len(bag_props))
            if bag_weights is None
            else bag_weights.cpu().numpy().astype(np.float64)
        )
        if not np.isfinite(proba).all():  # a diverged network: no fake score
            errors = dict.fromkeys(BAG_METRICS, np.nan)
        else:
            errors = errors_of_pairs(
                segments,
                bag_props,
                proba,
                weights=None if weights is None else weights.numpy().astype(float),
                bag_weights=bag_weights,
            )
        for name, value in errors.items():
            self.sums_[name] += value * bag_weights.sum()
        self.n_bags_ += bag_weights.sum()

    def on_epoch_end(self, net, dataset_valid=None, **kwargs):
        if dataset_valid is None or not self.n_bags_:
            return
        for name, total in self.sums_.items():
            is_best = _is_best(net.history, f"valid_{name}", total / self.n_bags_)
            net.history.record(f"valid_{name}", total / self.n_bags_)
            net.history.record(f"valid_{name}_best", is_best)


def _is_best(history, key, value):
    previous = [row[key] for row in history[:-1] if key in row]
    return not previous or value < min(previous)
