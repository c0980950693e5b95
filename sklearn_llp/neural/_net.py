"""``LLPNet``: the task-independent bag engine of the network estimators.

Method, whole-bag batches, held-out bags, runtime, training step and a fit
that validates before it changes state; a head adds its own through hooks.
"""

import copy
import inspect
import re
import warnings
from contextlib import nullcontext
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import pandas as pd
import torch
from sklearn.base import BaseEstimator, clone
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import (
    Interval,
    StrOptions,
    validate_parameter_constraints,
)
from sklearn.utils.validation import check_is_fitted, validate_data
from skorch import NeuralNet
from skorch.callbacks import Callback
from skorch.dataset import unpack_data
from skorch.history import History
from skorch.utils import to_tensor

from ..core import (
    check_fit_inputs,
    is_dask,
    num_rows,
    refuse_meaningless_cv,
    restore_on_error,
)
from ..exceptions import FewBagsWarning, FitDivergedError, ModelResetWarning
from ..methods import (
    AutoMethod,
    BagBatch,
    LLPMethod,
    MixBag,
    make_method,
    method_params,
)
from ..model_selection import BagShuffleSplit
from ..modules import MLP
from ..modules._mlp import unwrapped
from ._callbacks import BagEarlyStopping, BagValidationErrors, CallbackGuard, EpochTable
from ._data import (
    ArrayDataset,
    BagBatchSampler,
    BagDataset,
    EpochBatches,
    _capped,
    array_loader,
    as_tensor,
)
from ._runtime import (
    RuntimeMixin,
    check_device,
    deterministic,
    device_type,
    draw_seed,
    resident,
)
from ._stream import DaskSource, StreamedBags, StreamedEpochs, system_allocation

# skorch parameters with no meaning here: the method is the loss, batches are
# whole bags, validation holds out whole bags, the head owns the output.
_UNUSED_SKORCH_PARAMS = (
    "criterion iterator_train iterator_valid dataset train_split predict_nonlinearity"
).split()
# set by a fit from the data; restored if that fit is refused
_DATA_ATTRIBUTES = ("n_features_in_", "feature_names_in_", "_input_shape_")
#: held-out fraction of early stopping, and the fewest held-out groups for "auto"
_STOPPING_FRACTION, _MIN_HELD_OUT_GROUPS = 0.1, 5
#: batch_size="auto": fewest rows a step, widest CPU step, bags a step, and the
#: fewest steps an epoch of a method of bag means on two classes
_MIN_BATCH_ROWS, _MAX_CPU_BATCH, _BAGS_PER_STEP, _MIN_STEPS = 128, 2048, 8, 8
_POSITIVE = Interval(Integral, 1, None, closed="left")

MODULE_PARAMETER = """
    module : torch.nn.Module class or instance, default=None
        The network (default :class:`~sklearn_llp.modules.MLP`, which
        standardises ``X``; other modules see it as given); a class taking
        ``n_features``/``n_classes`` is sized from the data. An instance is a
        template: every fit trains a reset copy."""

KEY_PARAMETERS = """
    max_epochs : int, default=100
        Epochs per ``fit`` (and per ``partial_fit``).
    lr : float, default=1e-3
        Learning rate.
    batch_size : int or "auto", default="auto"
        Rows per step; whole bags are packed until it is reached. ``"auto"``
        (``batch_size_``): 128 rows, or 8 median bags when bags are larger
        (fewer for a method of bag means on fewer than 64 bags of two
        classes: 8 steps an epoch), wider on large data
        (:ref:`training_settings`).
    random_state : int, RandomState instance or None, default=None
        Seeds initialisation, shuffling, the held-out split and perturbations;
        an int makes a fit reproducible on a given machine.
    verbose : int, default=1
        1 prints the epoch table; 2 adds each epoch's optimizer steps and
        training rows a second (``steps``, ``rows_per_s``); 0 is silent.
    device : str, torch.device or None, default="auto"
        ``"auto"``: CUDA when available, else the CPU. None leaves the module
        and the data where they are (skorch's).
"""

MORE_PARAMETERS = """
    validation_fraction : float, default=None
        Fraction of rows held out in whole bags; the history then records the
        held-out bag errors every epoch (``valid_<metric>``). None: none held
        out unless early stopping is on (then 0.1).
    early_stopping : "auto" or bool, default="auto"
        Stop when the held-out bags' error has not improved for
        ``n_iter_no_change`` epochs and restore the best epoch
        (``best_epoch_``). ``"auto"``: on for the methods that overfit their
        loss (``early_stopping_default``) when bags hold several rows and at
        least 5 bags (groups of overlapping ones) are held out; else off, with
        a warning. Decided before training, in ``fit_plan_``.
        ``LLPRegressor`` stops on a rise beyond the held-out curve's noise
        and refits (its Notes).
    n_iter_no_change : int, default=10
        Patience of early stopping, in epochs.
    max_bag_size : int, default=1024
        A larger bag trains whole, the network run on this many rows at a
        time: the exact whole-bag gradient in bounded memory, for a second
        forward pass (:ref:`mini_bags`). None runs every batch in one pass.
    optimizer : torch optimizer class, default=torch.optim.Adam
    predict_batch_size : int, default=4096
        Rows per forward pass when predicting.
    callbacks : list or tuple of skorch callbacks, default=None
        Extra callbacks, e.g. ``ProgressBar("count")``.
    warm_start : bool, default=False
        Continue from the current weights on ``fit``.
    n_threads : int, "auto" or None, default="auto"
        Torch threads on the CPU during ``fit`` and ``predict``. ``"auto"``:
        the cores this process may use, at most ``torch.get_num_threads()``,
        1 inside a joblib, loky or Dask worker. None leaves torch's setting
        (:ref:`reproducibility`).
    precision : {"float32", "bfloat16", "float16"}, default="float32"
        Precision of the training passes (``torch.autocast``); weights, losses
        and bag means stay float32.
    compile : bool, default=False
        ``torch.compile`` the module (skorch's parameter).
    use_caching : "auto" or bool, default="auto"
        skorch's parameter (caching for its scoring callbacks).
    torch_load_kwargs : dict, default=None
        skorch's parameter: keyword arguments of ``torch.load`` in
        ``load_params``.
    **kwargs
        ``method__*``, ``module__*``, ``optimizer__*`` and ``callbacks__*``
        parameters, as in skorch.
"""


class _Callbacks(list):
    """Default callbacks to which a tuple of user callbacks can be added."""

    def __add__(self, other):
        return list(self) + list(other)


class TrainValid(NamedTuple):
    """The training and held-out bags of one fit, split before training."""

    train: BagDataset
    valid: BagDataset | None


class FitPlan(NamedTuple):
    """Every ``"auto"`` of a fit, decided from its bags before the first step
    (``fit_plan_``); ``held_out``: the fraction of rows held out in whole bags."""

    method: LLPMethod
    reason: str | None
    mixbag: MixBag | None
    early_stopping: bool
    held_out: float | None
    batch_size: int
    refit: bool


def plan_fit(net, bags, method, continuing, every):
    """The :class:`FitPlan` of ``bags`` (``every``: a streamed fit's all)."""
    kept = getattr(net, "fit_plan_", None) if continuing else None
    reason = None
    if isinstance(method, AutoMethod):
        method, reason = (clone(kept.method), None) if kept else method.choose(every)
    mixbag = _mixbag(getattr(net, "mixbag", False), method, net.method)
    fraction, early = net.validation_fraction or _STOPPING_FRACTION, net.early_stopping
    if early == "auto":
        supervised = bags.sizes.max(initial=0) <= 1  # labels, in any form
        early = getattr(method, "early_stopping_default", False) and (
            net._early_stopping_supervised or not supervised
        )
        if early and bags.n_groups * fraction < _MIN_HELD_OUT_GROUPS:
            groups = "groups of overlapping bags" if bags.overlapping else "bags"
            warnings.warn(
                f"early_stopping='auto' stays off: {bags.n_groups} {groups} are "
                f"too few to hold out {_MIN_HELD_OUT_GROUPS} at validation_fraction"
                f"={fraction}, and method={net.method!r} can overfit its bag loss "
                "without it. Keep max_epochs small, or pass early_stopping=False "
                "to fit without this warning.",
                FewBagsWarning,
                stacklevel=5,  # fit -> _fit -> _validate_and_train -> here
            )
            early = False
    auto = net.early_stopping == "auto" and not net.validation_fraction
    refit = bool(net._refits and early and auto and not continuing)
    held_out = net.validation_fraction or (fraction if early else None)
    batch_size = kept.batch_size if kept else _batch_size(net, every, method)
    return FitPlan(method, reason, mixbag, bool(early), held_out, batch_size, refit)


def _mixbag(value, method, name):
    """``mixbag`` (a bool, NumPy's too, a number or a MixBag): a MixBag or None."""
    if isinstance(value, (bool, np.bool_)):
        mixbag = MixBag() if value else None
    else:
        mixbag = value if isinstance(value, MixBag) else MixBag(n_mixed=float(value))
    if mixbag is not None:
        mixbag._validate_params()
    if mixbag is not None and not method.reads_bag_means:
        name = name if isinstance(name, str) else type(method)
        raise ValueError(
            f"mixbag={value!r} adds mixed bags, which only the methods of bag "
            f"means take (dllp, vat, pi, rot); method={name!r} "
            f"({type(method).__name__}) reads whole bags. Pass mixbag=False or "
            "one of those methods."
        )
    return mixbag


def _batch_size(net, bags, method):
    """``batch_size="auto"`` (see :ref:`training_settings`)."""
    if net.batch_size != "auto":
        return net.batch_size
    sizes = _capped(bags.sizes, net.max_bag_size)  # as batches are packed
    typical, rows = int(np.median(sizes)), int(sizes.sum())
    if device_type(net._resolved_device()) != "cpu":
        minimum = int(np.clip(rows // 32, _MIN_BATCH_ROWS, 1024))
    else:  # at least 512 steps an epoch
        minimum = int(np.clip(rows // 512, _MIN_BATCH_ROWS, _MAX_CPU_BATCH))
    if typical < minimum:
        return minimum
    per_step = _BAGS_PER_STEP
    # Few bags of two classes: 8 a step would leave a method of bag means too
    # few steps. With more classes one bag a step is too noisy (measured).
    if method.reads_bag_means and bags.n_classes == 2:
        per_step = int(np.clip(len(sizes) // _MIN_STEPS, 1, _BAGS_PER_STEP))
    return per_step * typical


def declare_parameters(head):
    """Give ``head.__init__`` its own then LLPNet's parameters (for sklearn),
    and fill in the shared parameters of its docstring."""
    head.__doc__ = (
        head.__doc__.replace("{module}", MODULE_PARAMETER)
        .replace("{key}", KEY_PARAMETERS.rstrip())
        .replace("{more}", MORE_PARAMETERS)
    )
    own = inspect.signature(head.__init__).parameters
    shared = inspect.signature(LLPNet.__init__).parameters
    kinds = inspect.Parameter
    params = [p for p in own.values() if p.kind != kinds.VAR_KEYWORD]
    params += [
        p
        for name, p in shared.items()
        if name not in own and p.kind == kinds.KEYWORD_ONLY
    ]
    params.append(shared["kwargs"])
    head.__init__.__signature__ = inspect.Signature(params)
    return head


class _EstimatorAPI(type):
    """``help()`` and ``dir()`` show the API, not skorch's training plumbing."""

    _API = set(
        "fit partial_fit predict predict_proba score get_params set_params "
        "save_params load_params initialize history __init__".split()
    )

    def __dir__(cls):
        ours, theirs = set(), set()
        for klass in cls.__mro__:
            library = klass.__module__.startswith(("skorch", "sklearn.", "builtins"))
            (theirs if library else ours).update(vars(klass))
        shown = (ours - theirs) | cls._API
        return sorted(
            n for n in shown if hasattr(cls, n) and not n.endswith("_request")
        )


class LLPNet(RuntimeMixin, NeuralNet, metaclass=_EstimatorAPI):
    """Base class of the network estimators trained on bags.

    A head sets ``_task``, ``_stopping_metric`` and implements
    :meth:`_commit_fit_inputs`, :meth:`_n_outputs` and :meth:`_bag_errors`;
    it may override :meth:`_check_fit_problem`, :meth:`_warn_if_unidentifiable`
    and :meth:`_after_training`.
    """

    prefixes_ = [*NeuralNet.prefixes_, "method"]  # method__* parameters

    #: "classification" or "regression": the values the bags carry.
    _task = None
    #: The held-out error early stopping follows (lower is better but "r2").
    _stopping_metric = None
    #: Whether "auto" early stopping also holds out rows on instance targets.
    _early_stopping_supervised = False
    _refits = False  # whether "auto" early stopping that never stopped refits

    _parameter_constraints = {
        "module": [callable, None],
        "method": [str, LLPMethod],
        "max_bag_size": [_POSITIVE, None],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither"), None],
        "early_stopping": [StrOptions({"auto"}), "boolean"],
        "n_iter_no_change": [_POSITIVE],
        "random_state": ["random_state"],
        "lr": [Interval(Real, 0, None, closed="neither")],
        "max_epochs": [Interval(Integral, 0, None, closed="left")],
        "batch_size": [_POSITIVE, StrOptions({"auto"})],
        "predict_batch_size": [_POSITIVE],
        "callbacks": [list, tuple, StrOptions({"disable"}), None],
        "device": [str, torch.device, None],
        "precision": [StrOptions({"float32", "bfloat16", "float16"})],
        "n_threads": [_POSITIVE, StrOptions({"auto"}), None],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        module=None,
        *,
        method=None,
        max_epochs=100,
        lr=1e-3,
        batch_size="auto",
        random_state=None,
        verbose=1,
        device="auto",
        validation_fraction=None,
        early_stopping="auto",
        n_iter_no_change=10,
        max_bag_size=1024,
        optimizer=torch.optim.Adam,
        predict_batch_size=4096,
        callbacks=None,
        warm_start=False,
        n_threads="auto",
        precision="float32",
        compile=False,
        use_caching="auto",
        torch_load_kwargs=None,
        **kwargs,
    ):
        for name in _UNUSED_SKORCH_PARAMS:
            kwargs.pop(name, None)
        super().__init__(
            module,
            criterion=None,
            optimizer=optimizer,
            lr=lr,
            max_epochs=max_epochs,
            batch_size=batch_size,
            callbacks=callbacks,
            warm_start=warm_start,
            verbose=verbose,
            device=device,
            compile=compile,
            use_caching=use_caching,
            torch_load_kwargs=torch_load_kwargs,
            **kwargs,
        )
        for name in _UNUSED_SKORCH_PARAMS:
            delattr(self, name)
        self.method = method
        self.max_bag_size = max_bag_size
        self.validation_fraction = validation_fraction
        self.random_state = random_state
        self.predict_batch_size = predict_batch_size
        self.n_threads = n_threads
        self.precision = precision
        self.early_stopping = early_stopping
        self.n_iter_no_change = n_iter_no_change

    # --- hooks of a head ---
    def _commit_fit_inputs(self, bags, on_labels, continuing):
        """Set the fitted attributes read from the data (classes, scale)."""

    def _n_outputs(self):
        """Output width of the module (None while unknown)."""
        raise NotImplementedError

    def _bag_errors(self, bags, logits):
        """``{metric: error}`` of the held-out ``bags`` from their logits."""
        raise NotImplementedError

    def _check_fit_problem(self, bags):
        """Refuse, before training, parameters the data rule out."""

    def _warn_if_unidentifiable(self, bags, X):
        """Warn when the bags cannot identify the model."""

    def _after_training(self, dataset):
        """Fitted attributes that need the trained network."""

    def _validation_loss(self, y_pred, bags):
        """The ``valid_loss`` of a batch of held-out bags."""
        raise NotImplementedError

    def _values_of(self, bags):
        """The per-bag values a batch carries (the regressor standardises)."""
        return bags.values

    # --- the fit ---
    def _check_params(self):
        validate_parameter_constraints(
            self._parameter_constraints,
            self.get_params(deep=False),
            caller_name=type(self).__name__,
        )
        check_device(self.device)

    def _fit(self, X, y, values, sample_weight, fit_params, partial, classes=None):
        """Validate everything, then train; a refused fit changes nothing."""
        with system_allocation() if is_dask(X) else nullcontext():
            return self._validate_and_train(
                X, y, values, sample_weight, fit_params, partial, classes
            )

    def _validate_and_train(
        self, X, y, values, sample_weight, fit_params, partial, classes
    ):
        """The body of :meth:`_fit`."""
        refuse_meaningless_cv(self, values, self._task)
        self._check_params()
        previous_method = vars(self).get("method_")
        self.initialize_method()  # a bad method__* value fails here
        method, self.method_ = self.method_, previous_method
        continuing = self.__sklearn_is_fitted__() and (partial or self.warm_start)
        source = None
        with restore_on_error(self, _DATA_ATTRIBUTES):
            if is_dask(X):  # streamed: X below is a sample of its partitions
                source = self._dask_source(
                    X, y, values, sample_weight, classes, continuing
                )
                X, y = source.load(source.sample())
                y, values, sample_weight = source.bags_of(y)[0], None, None
            X = self._validate_X(X, reset=not continuing)
            bags, on_labels = self._read_fit_inputs(
                X, y, values, sample_weight, classes, continuing
            )
            every = bags if source is None else source.bags
            self._check_fit_problem(every)
            plan = plan_fit(self, bags, method, continuing, every)
        if not (on_labels or continuing):
            self._warn_if_unidentifiable(bags, X)
        # every check has passed: commit
        self._input_shape_ = tuple(X.shape[1:])
        self._commit_fit_inputs(every, on_labels, continuing)
        self._fit_on_labels_ = on_labels
        self.fit_plan_, self.method_ = plan, plan.method
        if self.precision == "float16" and not (
            continuing and hasattr(self, "grad_scaler_")
        ):
            self.grad_scaler_ = torch.amp.GradScaler(
                device_type(self._resolved_device())
            )
        if not continuing:
            self.n_train_steps_ = 0
            self._split_seed_ = None  # one held-out split per fit
        self._seed_ = draw_seed(self.random_state, self.n_train_steps_)
        if self._split_seed_ is None:
            self._split_seed_ = (
                self._seed_
                if self._seed_ is not None
                else int(check_random_state(None).randint(np.iinfo(np.int32).max))
            )
        dataset = BagDataset(
            resident(as_tensor(X), self._resolved_device()), bags, self._values_of(bags)
        )
        stale = getattr(self, "_weights_stale_", False)
        self._weights_stale_ = False  # callbacks may predict while it trains
        try:
            with (
                self._threads(),
                self._on_device(),
                self._seeded(),
                deterministic(device_type(self.device) == "cuda"),
            ):
                if not continuing and not (partial and self.initialized_ and not stale):
                    self.initialize()
                    self._standardize_inputs(X, bags.weights)
                datasets = sample = self._split(dataset)
                if source is not None:
                    datasets = TrainValid(self._streamed(source, sample), sample.valid)
                self._record_train_bags(datasets.train.bags, on_labels, continuing)
                self.method_.prepare(
                    datasets.train.bags, np.random.RandomState(self._seed_)
                )
                if not (continuing and partial) or self.total_steps_ is None:
                    steps = len(self.get_iterator(datasets.train, training=True))
                    self.total_steps_ = steps * self.max_epochs
                self._epoch_of_fit_ = 0
                super().partial_fit(datasets, None, **fit_params)
                self._after_training(sample.train)
        except BaseException:
            self._weights_stale_ = True
            raise
        return self

    def _dask_source(self, X, y, values, sample_weight, classes, continuing):
        """The partitions of a Dask fit, their bags read in one pass."""
        return DaskSource(
            X,
            y,
            values,
            task=self._task,
            classes=self._reading_classes(classes, continuing),
            sample_weight=sample_weight,
            seed=draw_seed(self.random_state),
        )

    def _reading_classes(self, classes, continuing):
        """The classes values are read with: the fitted ones when continuing,
        else ``classes`` (``partial_fit``'s) or the estimator's parameter."""
        fitted = getattr(self, "classes_", None) if continuing else None
        if fitted is not None:
            return fitted
        return vars(self).get("classes") if classes is None else classes

    def _streamed(self, source, sample):
        """Every bag but the held-out ones, read a window at a time."""
        held_out = [] if sample.valid is None else sample.valid.bags.ids
        return StreamedBags(
            source,
            held_out,
            read_X=lambda X: self._validate_X(X, reset=False),
            values_of=self._values_of,
        )

    def _read_fit_inputs(self, X, y, values, sample_weight, classes, continuing):
        """Bags from the fit's arguments: ``(bags, on_labels)``."""
        return check_fit_inputs(
            y,
            values,
            task=self._task,
            n_samples=num_rows(X),
            sample_weight=sample_weight,
            classes=self._reading_classes(classes, continuing),
        )

    def _record_train_bags(self, bags, on_labels, continuing):
        """``train_bag_ids_``: the bags trained on, for the scorers' check."""
        if on_labels:
            self.train_bag_ids_ = None
            return
        ids = np.asarray(bags.ids)
        previous = getattr(self, "train_bag_ids_", None) if continuing else None
        if previous is not None and previous.dtype.kind == ids.dtype.kind:
            ids = np.union1d(previous, ids)
        self.train_bag_ids_ = ids

    def _validate_X(self, X, reset):
        try:
            X = validate_data(
                self,
                X,
                reset=reset,
                accept_sparse="csr",
                dtype=np.float32,
                allow_nd=True,
                ensure_min_samples=2 if reset else 1,
            )
        except (TypeError, ValueError) as exc:
            if re.search(r"\bX\b", str(exc)):
                raise
            message = f"X: {exc}{_non_numeric_hint(X)}"
            if isinstance(exc, TypeError):
                raise TypeError(message) from exc
            raise ValueError(message) from exc
        if not reset and tuple(X.shape[1:]) != self._input_shape_:
            raise ValueError(
                f"X has rows of shape {tuple(X.shape[1:])}, but the model was "
                f"fitted on rows of shape {self._input_shape_}."
            )
        return X

    def _split(self, dataset):
        """Hold out a fraction of the rows, in whole bags."""
        fraction = self.fit_plan_.held_out
        if not fraction:
            return TrainValid(dataset, None)
        splitter = BagShuffleSplit(
            n_splits=1, test_size=fraction, random_state=self._split_seed_
        )
        try:
            train, valid = next(splitter.split_bags(dataset.bags, min_train_bags=2))
        except ValueError as exc:
            stopping = " (early_stopping=True)" if self.do_early_stopping_ else ""
            raise ValueError(
                f"validation_fraction={fraction}{stopping}: {exc}"
            ) from None
        return TrainValid(dataset.select_bags(train), dataset.select_bags(valid))

    def _train_sampler(self, dataset, random_state=None):
        return BagBatchSampler(
            dataset.pair_bags,
            self.batch_size_,
            max_bag_size=self.max_bag_size,
            shuffle=True,
            random_state=self._seed_ if random_state is None else random_state,
            mixbag=self.fit_plan_.mixbag,
        )

    # --- skorch's getters: pure, the work is done before training ---
    @property
    def _default_callbacks(self):
        callbacks = [
            (name, EpochTable() if name == "print_log" else callback)
            for name, callback in super()._default_callbacks
        ]
        return _Callbacks(
            [
                ("callback_guard", CallbackGuard()),
                *callbacks,
                ("valid_bag_errors", BagValidationErrors()),
                ("early_stopping", BagEarlyStopping()),
            ]
        )

    def get_dataset(self, X, y=None):
        if isinstance(X, (BagDataset, ArrayDataset, TrainValid)):
            return X
        return ArrayDataset(as_tensor(X))

    def get_split_datasets(self, X, y=None, **fit_params):
        if isinstance(X, TrainValid):
            return X.train, X.valid
        return self.get_dataset(X), None

    def get_iterator(self, dataset, training=False):
        """Whole-bag batches for bag datasets, large row batches otherwise."""
        if isinstance(dataset, StreamedBags):
            return StreamedEpochs(
                dataset,
                lambda window, rng: self._train_sampler(window, random_state=rng),
                BagBatchSampler.count(
                    dataset.bags.sizes,
                    self.batch_size_,
                    self.max_bag_size,
                    self.fit_plan_.mixbag,
                ),
                device=self._resolved_device(),
                seed=self._seed_,
            )
        if not isinstance(dataset, BagDataset):
            return array_loader(dataset, self.predict_batch_size)
        if training:
            sampler = self._train_sampler(dataset)
        else:  # held-out bags, in order
            sampler = BagBatchSampler(
                dataset.pair_bags, self.batch_size_, shuffle=False
            )
        return EpochBatches(dataset, sampler, self._resolved_device())

    def get_metadata_routing(self):
        """Request the bags' values for ``fit``, ``partial_fit`` and ``score``."""
        return super(NeuralNet, self).get_metadata_routing()

    # --- initialisation ---
    def initialize_module(self):
        """Size a module class from the data; reset a copy of an instance."""
        kwargs = self.get_params_for("module")
        module = MLP if self.module is None else self.module
        if isinstance(module, torch.nn.Module):
            if not kwargs:
                self.module_ = _reset_copy(module)
                return self
            module = type(module)
        accepted = inspect.signature(module).parameters
        shape = getattr(self, "_input_shape_", None)
        if "n_features" in accepted and "n_features" not in kwargs:
            if shape is None:
                raise ValueError(self._unsized_message())
            if len(shape) != 1:
                raise ValueError(
                    f"The default MLP takes 2-D X; X has rows of shape {shape}. "
                    "Pass a module for it."
                )
            kwargs["n_features"] = shape[0]
        if "n_classes" in accepted and "n_classes" not in kwargs:
            if self._n_outputs() is None:
                raise ValueError(self._unsized_message())
            kwargs["n_classes"] = self._n_outputs()
        self.module_ = module(**kwargs)
        return self

    def _standardize_inputs(self, X, sample_weight):
        """An MLP's input statistics from the rows (Dask: the sample)."""
        module = unwrapped(self.module_)  # compile=True, an nn.DataParallel
        if isinstance(module, MLP):
            module.standardize_from(X, sample_weight)

    def _unsized_message(self):
        outputs = "classes=[...] (or module__n_classes=<classes>)"
        if self._n_outputs() == 1:  # a regressor
            outputs = "nothing else (the network has one output)"
        return (
            f"{type(self).__name__} sizes its network from the data in fit. To "
            "initialize() a model that was never fitted (e.g. before "
            "load_params), pass module__n_features=<number of columns of X> and "
            f"{outputs}."
        )

    def initialize_criterion(self):
        """No criterion: the loss is the method."""
        return self

    def initialize_method(self):
        """Build ``method_`` from ``method`` and the ``method__*`` parameters."""
        self.method_ = make_method(
            self.method, self.get_params_for("method"), task=self._task
        )
        return self

    def initialize(self):
        self.initialized_ = False  # a fit says why it starts afresh, not skorch
        with self._on_device():
            return super().initialize()

    batch_size_ = property(lambda self: self.fit_plan_.batch_size)
    do_early_stopping_ = property(lambda self: self.fit_plan_.early_stopping)

    # --- the step ---
    def on_epoch_begin(self, net, dataset_train=None, dataset_valid=None, **kwargs):
        super().on_epoch_begin(
            net, dataset_train=dataset_train, dataset_valid=dataset_valid, **kwargs
        )
        self.method_.on_epoch_begin(self._epoch_of_fit_)
        self._epoch_of_fit_ += 1

    def _check_output(self, y_pred, n_outputs):
        """A clear error for a module whose output is not (n, n_outputs)."""
        if not torch.is_tensor(y_pred):
            raise TypeError(
                f"module returned a {type(y_pred).__name__}; it must return one "
                f"tensor of shape (n_rows, {n_outputs}) (the first output of a "
                "tuple is not taken: return the logits only)."
            )
        if y_pred.ndim != 2 or y_pred.shape[1] != n_outputs:
            raise ValueError(
                f"module returned a tensor of shape {tuple(y_pred.shape)}; it "
                f"must be (n_rows, {n_outputs}): one column per "
                f"{'class' if n_outputs > 1 else 'output'}."
            )

    def get_loss(self, y_pred, y_true, X=None, training=False):
        """The method's loss in training, :meth:`_validation_loss` otherwise."""
        bags = self._bag_batch(y_true)
        self._check_output(y_pred, self._n_outputs())
        if not training:
            return self._validation_loss(y_pred, bags)
        return self.method_.get_loss(
            self.module_, X, y_pred, bags, self.n_train_steps_, self.total_steps_
        )

    def _bag_batch(self, target):
        # the batches are made on the device
        return BagBatch._make(map(target.get, BagBatch._fields))

    def train_step_single(self, batch, **fit_params):
        """One forward/backward pass on a batch of whole bags (in chunks above
        ``max_bag_size`` rows)."""
        self._set_training(True)
        Xi, target = unpack_data(batch)
        Xi = self.augment_batch(to_tensor(Xi, device=self.device))
        cap = self.max_bag_size
        if cap is not None and target.get("largest_bag", 0) > cap:
            return self._chunked_step(Xi, target, cap, **fit_params)
        with self._autocast():
            logits = self.infer(Xi, **fit_params)
            loss = self.get_loss(logits, target, X=Xi, training=True)
        self._backward(loss)
        return {"loss": loss, "y_pred": logits}

    def _chunked_step(self, Xi, target, cap, **fit_params):
        """The batch's exact gradient, the module run on ``cap`` rows at a time.

        A first pass without gradient gives the logits ``z``; ``g``, the
        gradient of the method's ``logit_loss`` at ``z``; every chunk then
        backpropagates ``<z_chunk, g_chunk>`` plus its rows' share of the
        ``row_loss`` (a weighted mean over rows), the gradients adding up."""
        method = self.method_
        if type(method).get_loss is not LLPMethod.get_loss:
            raise ValueError(
                f"A bag of {len(Xi)} rows is above max_bag_size={cap}: it trains "
                f"in chunks, on the method's logit_loss and row_loss, and "
                f"{type(method).__name__} overrides get_loss. Split its loss "
                "into them, or pass max_bag_size=None (every bag in one pass)."
            )
        chunks = [slice(i, i + cap) for i in range(0, len(Xi), cap)]
        with torch.no_grad(), self._autocast():
            logits = torch.cat([self.infer(Xi[c], **fit_params) for c in chunks])
        self._check_output(logits, self._n_outputs())
        bags, steps = self._bag_batch(target), (self.n_train_steps_, self.total_steps_)
        leaf = logits.detach().float().requires_grad_()
        with self._autocast():
            loss = method.logit_loss(leaf, bags, *steps)
        (grad,) = torch.autograd.grad(loss, leaf)
        weights, loss = bags.weights, loss.detach()
        for c in chunks:
            with self._autocast():
                part = self.infer(Xi[c], **fit_params)
                surrogate = (part.float() * grad[c]).sum()
                w, share = self._chunk_share(weights, c, len(Xi), len(part))
                rows = method.row_loss(self.module_, Xi[c], part, w, *steps)
            if rows is not None:
                rows = rows * share
                surrogate, loss = surrogate + rows, loss + rows.detach()
            self._backward(surrogate)
        return {"loss": loss, "y_pred": logits}

    @staticmethod
    def _chunk_share(weights, chunk, n_rows, n_chunk):
        """A chunk's row weights and its share of the batch's, without a read of
        the device; a chunk of zero weight: a finite mean times a zero share."""
        if weights is None:
            return None, n_chunk / n_rows
        mass = weights[chunk].sum()
        own = torch.where(mass > 0, weights[chunk], torch.ones_like(weights[chunk]))
        return own, mass / weights.sum()

    def train_step(self, batch, **fit_params):
        """The bare step: zero_grad, forward, loss, backward, step; skorch's where
        a callback, the optimizer or float16 needs it (:ref:`how_training_works`)."""
        optimizers = getattr(self, "_lean_", None)
        if optimizers is None:
            step = super().train_step(batch, **fit_params)
        else:
            for optimizer in optimizers:
                optimizer.zero_grad()
            step = self.train_step_single(batch, **fit_params)
            for optimizer in optimizers:
                optimizer.step()
        self.n_train_steps_ += 1
        return step

    def run_single_epoch(self, iterator, training, prefix, step_fn, **fit_params):
        """skorch's epoch, its losses read from the device once, at its end.

        ``on_batch_*`` callbacks run, and the loss is read every batch, only
        when the net or a callback overrides them (:ref:`how_training_works`);
        the history records every batch as in skorch. Held-out outputs are
        kept for ``BagValidationErrors``; a non-finite training loss
        raises :class:`~sklearn_llp.exceptions.FitDivergedError`.
        """
        if iterator is None:
            return
        hooks = self._overridden_hooks()
        events = bool({"on_batch_begin", "on_batch_end"} & hooks)
        self._set_training(training)
        self._mode_ = None if events else training  # set once: see _set_training
        # the bare step where it is skorch's: no gradient hook, grad scaler or
        # closure (torch's optimizers but LBFGS step without one)
        optimizers = [getattr(self, name + "_") for name in self._optimizers]
        plain = all(type(o).__module__.startswith("torch.optim.") for o in optimizers)
        plain = plain and not any(isinstance(o, torch.optim.LBFGS) for o in optimizers)
        bare = plain and training and self.precision != "float16"
        self._lean_ = optimizers if bare and "on_grad_computed" not in hooks else None
        losses, sizes, outputs = [], [], []
        try:
            for batch in iterator:
                if events:
                    self.notify("on_batch_begin", batch=batch, training=training)
                step = step_fn(batch, **fit_params)
                sizes.append(len(batch[0]))
                losses.append(step["loss"].detach())
                if not training:
                    outputs.append((step["y_pred"].detach(), batch[1]["rows"]))
                if events:
                    self.history.record_batch(prefix + "_loss", losses[-1].item())
                    self.history.record_batch(prefix + "_batch_size", sizes[-1])
                    self.notify("on_batch_end", batch=batch, training=training, **step)
        finally:  # the epoch's one read of the device
            self._mode_ = self._lean_ = None
            values = torch.stack(losses).tolist() if losses else []
            for loss, size in zip([] if events else values, sizes):
                self.history.new_batch()
                self.history.record_batch(prefix + "_loss", loss)
                self.history.record_batch(prefix + "_batch_size", size)
            if not training:
                self._valid_outputs_ = outputs
        self.history.record(prefix + "_batch_count", len(sizes))
        bad = np.flatnonzero(~np.isfinite(values)) if training else ()
        if len(bad):
            raise FitDivergedError(
                f"The training loss became {values[bad[0]]} at epoch "
                f"{len(self.history)}, batch {bad[0] + 1}: the fit diverged and "
                "the network's weights are no longer usable. Likely causes: a "
                f"learning rate too large for this network (lr={self.lr}), a "
                "method hyperparameter out of its range (method__*), or features "
                "on very different scales (standardise X). Fit again with a "
                "smaller lr."
            )

    def _overridden_hooks(self):
        """The per-batch hooks that the net or a callback overrides."""
        names = ("on_batch_begin", "on_batch_end", "on_grad_computed")
        pairs = [(type(c), Callback) for _, c in self.callbacks_]
        pairs.append((type(self), NeuralNet))
        return {
            n for k, b in pairs for n in names if getattr(k, n) is not getattr(b, n)
        }

    def _set_training(self, training=True):
        # skorch sets the mode every step, a walk of the modules; an epoch
        # without batch events sets it once
        if getattr(self, "_mode_", None) is not training:
            super()._set_training(training)

    def _backward(self, loss):
        if self.precision == "float16":  # scaled, so small gradients survive
            self.grad_scaler_.scale(loss).backward()
        else:
            loss.backward()

    def _autocast(self):
        if self.precision == "float32":
            return nullcontext()
        return torch.autocast(
            device_type(self.device), dtype=getattr(torch, self.precision)
        )

    def _step_optimizer(self, step_fn):
        if self.precision != "float16":
            return super()._step_optimizer(step_fn)
        step_fn()  # a grad scaler steps without a closure
        for name in self._optimizers:
            self.grad_scaler_.step(getattr(self, name + "_"))
        self.grad_scaler_.update()
        return None

    def augment_batch(self, X):
        """Hook: transform a training batch on the device (identity)."""
        return X

    def _forward_outputs(self, X, transform, what):
        """``transform`` of the module's float outputs for ``X``, refused unless
        finite (``what`` they are); torch's RNG left as it was."""
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        with self._threads(), self._on_device(), torch.random.fork_rng(devices=[]):
            outputs = self.forward(ArrayDataset(as_tensor(X)), training=False)
        self._check_output(outputs, self._n_outputs())
        outputs = transform(outputs.float())
        if not np.isfinite(outputs).all():
            raise ValueError(
                f"The network predicts NaN or infinite {what}: its weights are "
                "not finite (a diverged fit, or weights loaded from one). Fit "
                "again, e.g. with a smaller lr."
            )
        return outputs

    def forward(self, X, training=False, device="cpu"):
        """skorch's ``forward``, each batch's output written into one tensor
        as it comes: a list of small outputs kept between the batches' large
        activations fragments the heap (1 KB a row of 16M rows, measured)."""
        out, start = None, 0
        for batch in self.forward_iter(X, training=training, device=device):
            if not torch.is_tensor(batch):  # several outputs: skorch's way
                return super().forward(X, training=training, device=device)
            if out is None:
                out = batch.new_empty((len(X), *batch.shape[1:]))
            out[start : start + len(batch)] = batch
            start += len(batch)
        return out[:start] if out is not None else super().forward(X, training, device)

    def forward_iter(self, X, training=False, device="cpu"):
        with self._on_device():
            yield from super().forward_iter(X, training=training, device=device)

    # --- parameters, persistence, scikit-learn plumbing ---
    def __repr__(self):
        # scikit-learn's: the parameters that differ from the defaults
        return BaseEstimator.__repr__(self)

    def get_params(self, deep=True, **kwargs):
        """Parameters, with ``method__*`` as the method will be built."""
        params = super().get_params(deep=deep, **kwargs)
        hidden = {f"callbacks__{name}" for name, _ in self._default_callbacks}
        params = {
            k: v
            for k, v in params.items()
            if "__".join(k.split("__")[:2]) not in hidden
        }
        if deep:  # the hyperparameters the method will be built with
            try:
                defaults = method_params(self.method, task=self._task)
            except ValueError:  # an unknown name fails in fit, not here
                defaults = {}
            effective = {**defaults, **self.get_params_for("method")}
            params.update({f"method__{k}": v for k, v in effective.items()})
        return params

    def set_params(self, **kwargs):
        """Set parameters: ``method__*`` apply from the next ``fit``, ``device``
        moves a fitted network, ``module__*`` re-initialise it (with a warning)."""
        for key in [k for k in kwargs if k == "method" or k.startswith("method__")]:
            setattr(self, key, kwargs.pop(key))
            if key != "method":
                self._params_to_validate.add(key)
        fitted = self.__sklearn_is_fitted__()
        resets = sorted(
            k
            for k in kwargs
            if k.split("__")[0] in (*self._modules, "module", "compile")
        )
        if "device" in kwargs:
            super().set_params(device=kwargs.pop("device"))
            if self.initialized_:
                self._move_to_device()
        with self._on_device():  # skorch may re-initialise the module here
            super().set_params(**kwargs)
        if fitted and resets and self.initialized_:
            self._weights_stale_ = True
            warnings.warn(
                f"set_params({', '.join(resets)}) re-initialised the trained "
                "network (skorch re-creates the module): the model is no longer "
                "fitted. Call fit again, or set these parameters before fitting.",
                ModelResetWarning,
                stacklevel=2,
            )
        return self

    def save_params(self, *args, **kwargs):
        """Save parameters (see skorch); there is no criterion to save."""
        kwargs.pop("f_criterion", None)
        with self._on_device():
            return super().save_params(*args, **kwargs)

    def load_params(self, *args, checkpoint=None, **kwargs):
        """Load parameters saved by ``save_params`` or a ``Checkpoint``."""
        if checkpoint is not None:
            if not self.initialized_:
                self.initialize()
            if kwargs.get("f_history") is None and checkpoint.f_history is not None:
                self.history = History.from_file(checkpoint.f_history_)
            files = checkpoint.get_formatted_files(self)
            files.pop("f_criterion", None)
            kwargs = {**files, **{k: v for k, v in kwargs.items() if v is not None}}
        kwargs.pop("f_criterion", None)
        with self._on_device():
            super().load_params(*args, **kwargs)
        if kwargs.get("f_params") is not None:
            self._weights_stale_ = False
        return self

    def _get_param_names(self):
        # skorch lists every public-looking attribute; its bookkeeping is not
        return [name for name in super()._get_param_names() if name[0] != "_"]

    def __sklearn_is_fitted__(self):
        return (
            bool(self.initialized_)
            and hasattr(self, "_fit_on_labels_")
            and not getattr(self, "_weights_stale_", False)
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.non_deterministic = self.random_state is None
        return tags


def _non_numeric_hint(X):
    """Name the columns of a DataFrame that a network cannot take."""
    dtypes = getattr(X, "dtypes", None)
    if dtypes is None or not hasattr(dtypes, "items"):
        return ""
    bad = [
        f"{name!r} ({dtype})"
        for name, dtype in dtypes.items()
        if not pd.api.types.is_numeric_dtype(dtype)
    ]
    if not bad:
        return ""
    return (
        f" (non-numeric columns {', '.join(bad)}: encode them first, e.g. with "
        "a ColumnTransformer in a Pipeline)"
    )


def _reset_copy(template):
    """A copy of a module instance with its parameters re-initialised."""
    module = copy.deepcopy(template)
    for submodule in module.modules():
        reset = getattr(submodule, "reset_parameters", None)
        if callable(reset):
            reset()
    return module
