"""The fit plan: every ``"auto"`` of a fit, decided once from its validated bags."""

import warnings
from typing import NamedTuple

import numpy as np
from sklearn.base import clone

from ..exceptions import FewBagsWarning
from ..methods import AutoMethod, LLPMethod, MixBag
from ._runtime import device_type

#: held-out fraction of early stopping, and the fewest held-out groups for "auto"
EARLY_STOPPING_FRACTION = 0.1
MIN_HELD_OUT_GROUPS = 5
#: batch_size="auto": fewest rows a step, widest CPU step, bags a step
_MIN_BATCH_ROWS = 128
_MAX_CPU_BATCH = 2048
_BAGS_PER_STEP = 8


class FitPlan(NamedTuple):
    """What a fit trains with, decided from its bags before the first step.

    Kept as ``fit_plan_``; ``method_``, ``batch_size_`` and
    ``do_early_stopping_`` are its ``method``, ``batch_size`` and
    ``early_stopping``. ``reason``: why ``method="auto"`` chose ``method``
    (None otherwise); ``held_out``: the fraction of rows held out in whole
    bags (None: none); ``refit``: whether a fit that never stopped is refit
    on every bag (``LLPRegressor``'s ``"auto"``).
    """

    method: LLPMethod
    reason: str | None
    mixbag: MixBag | None
    early_stopping: bool
    held_out: float | None
    batch_size: int
    refit: bool


def plan_fit(net, bags, method, continuing, every=None):
    """The :class:`FitPlan` of ``net`` on validated ``bags`` (held out from),
    ``every`` the bags of a streamed fit; ``method``: ``net.method`` built.
    A continued fit keeps the method and batch size it had."""
    every = bags if every is None else every
    kept = getattr(net, "fit_plan_", None) if continuing else None
    reason = None
    if isinstance(method, AutoMethod):
        method, reason = (clone(kept.method), None) if kept else method.choose(every)
    mixbag = _mixbag(getattr(net, "mixbag", False), method, net.method)
    fraction = net.validation_fraction or EARLY_STOPPING_FRACTION
    early = net.early_stopping
    if early == "auto":
        supervised = bags.sizes.max(initial=0) <= 1  # labels, in any form
        early = getattr(method, "early_stopping_default", False) and (
            net._early_stopping_supervised or not supervised
        )
        if early and bags.n_groups * fraction < MIN_HELD_OUT_GROUPS:
            groups = f"{bags.n_groups} bags"
            if bags.overlapping:  # a split holds out connected groups whole
                groups = f"{bags.n_groups} group(s) of overlapping bags"
            warnings.warn(
                f"early_stopping='auto' stays off: {groups} are too "
                f"few to hold out {MIN_HELD_OUT_GROUPS} at validation_fraction="
                f"{fraction}, and method={net.method!r} can overfit its bag loss "
                "without it. Keep max_epochs small, or pass early_stopping=False "
                "to fit without this warning.",
                FewBagsWarning,
                stacklevel=5,  # fit -> _fit -> _validate_and_train -> here
            )
            early = False
    early = bool(early)
    auto_refit = net.early_stopping == "auto" and net.validation_fraction is None
    return FitPlan(
        method=method,
        reason=reason,
        mixbag=mixbag,
        early_stopping=early,
        held_out=net.validation_fraction or (fraction if early else None),
        batch_size=kept.batch_size if kept else _batch_size(net, every),
        refit=early and auto_refit and net._refits and not continuing,
    )


def _mixbag(value, method, name):
    """``mixbag`` (a bool, NumPy's too, an ``n_mixed`` or a MixBag) as a
    validated MixBag or None."""
    mixbag = value
    if isinstance(value, (bool, np.bool_)):
        mixbag = MixBag() if value else None
    elif not isinstance(value, MixBag):
        mixbag = MixBag(n_mixed=float(value))
    if mixbag is None:
        return None
    mixbag._validate_params()
    if not method.labels_mini_bags:
        name = name if isinstance(name, str) else type(method)
        raise ValueError(
            f"mixbag={value!r} adds mixed bags, which only the methods of bag "
            f"means take (dllp, vat, pi, rot, hybrid); method={name!r} "
            f"({type(method).__name__}) reads whole bags. Pass mixbag=False or "
            "one of those methods."
        )
    return mixbag


def _batch_size(net, bags):
    """``batch_size="auto"`` (see :ref:`gpu_scaling`)."""
    if net.batch_size != "auto":
        return net.batch_size
    sizes = bags.sizes
    if net.max_bag_size is not None:
        sizes = np.minimum(sizes, net.max_bag_size)
    typical, rows = int(np.median(sizes)), int(sizes.sum())
    if device_type(net._resolved_device()) != "cpu":
        minimum = int(np.clip(rows // 32, _MIN_BATCH_ROWS, 1024))
    else:  # at least 512 steps an epoch
        minimum = int(np.clip(rows // 512, _MIN_BATCH_ROWS, _MAX_CPU_BATCH))
    return minimum if typical < minimum else _BAGS_PER_STEP * typical
