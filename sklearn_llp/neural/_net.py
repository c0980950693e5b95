"""``LLPNet``: what every LLP network estimator shares, on top of skorch.

As skorch splits ``NeuralNet`` from ``NeuralNetClassifier``, this module
holds the bag machinery that does not depend on what is predicted: the
method component, whole-bag batches and validation split, the runtime
(device, threads, seed), the training step and a fit that either succeeds or
leaves the estimator as it was (or unfitted). ``LLPClassifier`` adds classes
and decision rules; a regressor adds targets.
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
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import (
    Interval,
    StrOptions,
    validate_parameter_constraints,
)
from sklearn.utils.validation import validate_data
from skorch import NeuralNet
from skorch.dataset import unpack_data
from skorch.history import History
from skorch.utils import to_tensor

from ..core import refuse_sklearn_cross_val_predict, restore_on_error
from ..exceptions import ModelResetWarning
from ..methods import BagBatch, LLPMethod, make_method, method_params
from ..model_selection import BagShuffleSplit
from ..modules import MLP
from ._callbacks import (
    BagEarlyStopping,
    BagValidationErrors,
    CallbackGuard,
    DivergenceGuard,
    EpochTable,
)
from ._data import (
    ArrayDataset,
    BagBatchSampler,
    BagDataset,
    EpochBatches,
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

# Base-class parameters that have no meaning here: the method is the loss,
# batches are whole bags, validation holds out whole bags and the output
# nonlinearity is the estimator's.
_UNUSED_SKORCH_PARAMS = (
    "criterion",
    "iterator_train",
    "iterator_valid",
    "dataset",
    "train_split",
    "predict_nonlinearity",
)

# Attributes a fit sets from the data; restored if that fit fails before
# training starts, so a failed refit never leaves a half-updated model.
_DATA_ATTRIBUTES = ("n_features_in_", "feature_names_in_", "_input_shape_")

#: ``early_stopping``: the held-out fraction when ``validation_fraction`` is
#: None, and the fewest held-out bags with which ``"auto"`` turns it on.
_EARLY_STOPPING_FRACTION = 0.1
_MIN_HELD_OUT_BAGS = 5

#: ``batch_size="auto"``: fewest rows a step, and bags a step for large bags.
_MIN_BATCH_ROWS = 128
_MAX_CPU_BATCH = 2048
_BAGS_PER_STEP = 8

_UNSIZED = (
    "{name} sizes its network from the data in fit. To initialize() a model "
    "that was never fitted (e.g. before load_params), pass "
    "module__n_features=<number of columns of X> and {outputs}."
)


class _Callbacks(list):
    """The default callbacks, to which a tuple of user callbacks can be added
    (skorch concatenates ``defaults + callbacks``, which needs lists)."""

    def __add__(self, other):
        return list(self) + list(other)


class TrainValid(NamedTuple):
    """The training and held-out bags of one fit, split before training, so
    that skorch's ``get_split_datasets`` only unpacks them."""

    train: BagDataset
    valid: BagDataset | None


class LLPNet(RuntimeMixin, NeuralNet):
    """Base class of the network estimators trained on bags.

    Subclasses implement :meth:`_fit_inputs` (validated bags from the fit
    arguments), :meth:`_n_outputs` (the module's output width) and may
    override :meth:`_check_fit_problem` (checks that need the data, made
    before any training) and :meth:`_after_training` (fitted attributes that
    need the trained network). See :class:`~sklearn_llp.LLPClassifier` for
    the parameters.
    """

    # ``method`` is a component like ``module``: ``method__*`` parameters
    prefixes_ = [*NeuralNet.prefixes_, "method"]

    #: The held-out record whose ``valid_<record>_best`` flag early stopping
    #: follows (skorch records ``valid_loss_best``).
    _stopping_record = "loss"

    #: The registry ``method`` names are looked up in (a method of the other
    #: task is refused before any work).
    _method_task = "classification"

    #: Whether ``early_stopping="auto"`` also holds out rows of a supervised
    #: fit (labels or instance targets) for methods that ask for it.
    _early_stopping_supervised = False

    _parameter_constraints = {
        "module": [callable, None],
        "method": [str, LLPMethod],
        "max_bag_size": [Interval(Integral, 1, None, closed="left"), None],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither"), None],
        "early_stopping": [StrOptions({"auto"}), "boolean"],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "lr": [Interval(Real, 0, None, closed="neither")],
        "max_epochs": [Interval(Integral, 0, None, closed="left")],
        "batch_size": [
            Interval(Integral, 1, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "predict_batch_size": [Interval(Integral, 1, None, closed="left")],
        "callbacks": [list, tuple, StrOptions({"disable"}), None],
        "device": [str, torch.device, None],
        "precision": [StrOptions({"float32", "bfloat16", "float16"})],
        "n_threads": [
            Interval(Integral, 1, None, closed="left"),
            StrOptions({"auto"}),
            None,
        ],
    }

    def __init__(
        self,
        module=None,
        *,
        method,
        max_bag_size,
        validation_fraction,
        random_state,
        optimizer,
        lr,
        max_epochs,
        batch_size,
        predict_batch_size,
        callbacks,
        warm_start,
        verbose,
        device,
        n_threads,
        precision,
        early_stopping="auto",
        n_iter_no_change=10,
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

    # ------------------------------------------------------------------
    # hooks for subclasses
    # ------------------------------------------------------------------
    def _fit_inputs(self, X, y, props, sample_weight, classes, continuing):
        """Validated bags of the fit arguments and whether ``y`` held
        instance targets (a supervised fit): ``(bags, on_labels)``."""
        raise NotImplementedError

    def _n_outputs(self):
        """Output width of the module (None while unknown)."""
        raise NotImplementedError

    def _check_fit_problem(self, bags, on_labels):
        """Hook: refuse, before any training, parameters the data rule out."""

    def _after_training(self, dataset):
        """Hook: fitted attributes that need the trained network."""

    def _commit_fit_inputs(self, bags, on_labels):
        """Hook: set the fitted attributes read from the data (e.g. classes)."""

    def _warn_if_unidentifiable(self, bags, X):
        """Hook: warn when the bags cannot identify the model (see subclasses)."""

    # ------------------------------------------------------------------
    # data
    # ------------------------------------------------------------------
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
            if re.search(r"\bX\b", str(exc)):  # already names X
                raise
            message = f"X: {exc}{_non_numeric_hint(X)}"
            if isinstance(exc, TypeError):  # e.g. numpy's DTypePromotionError
                raise TypeError(message) from exc
            raise ValueError(message) from exc
        if not reset and tuple(X.shape[1:]) != self._input_shape_:
            raise ValueError(
                f"X has rows of shape {tuple(X.shape[1:])}, but the model was "
                f"fitted on rows of shape {self._input_shape_}."
            )
        return X

    def _split(self, dataset):
        """Hold out ``validation_fraction`` of the rows, in whole bags."""
        fraction = self._held_out_fraction()
        if not fraction:
            return TrainValid(dataset, None)
        splitter = BagShuffleSplit(
            n_splits=1, test_size=fraction, random_state=self._split_seed_
        )
        try:  # LLP needs at least 2 training bags
            train, valid = next(splitter.split_bags(dataset.bags, min_train_bags=2))
        except ValueError as exc:
            stopping = " (early_stopping=True)" if self.do_early_stopping_ else ""
            raise ValueError(
                f"validation_fraction={fraction}{stopping}: {exc}"
            ) from None
        return TrainValid(dataset.select_bags(train), dataset.select_bags(valid))

    def _held_out_fraction(self):
        """``validation_fraction``, or its early-stopping default of 0.1."""
        if self.validation_fraction is None and getattr(
            self, "do_early_stopping_", False
        ):
            return _EARLY_STOPPING_FRACTION
        return self.validation_fraction

    def _resolve_early_stopping(self, bags, on_labels, method):
        """Whether this fit stops early (``early_stopping`` resolved).

        ``"auto"`` is on for the methods whose ``early_stopping_default`` is
        True (those that overfit their loss as training goes on) when they
        train on bags (not labels, nor bags of one row: the same data) and
        enough are held out to rank epochs: at least
        ``_MIN_HELD_OUT_BAGS`` bags (groups of connected bags) in
        ``validation_fraction`` of them.
        """
        if self.early_stopping != "auto":
            return bool(self.early_stopping)
        # labels and bags of one row are the same data (a supervised fit)
        supervised = on_labels or bags.sizes.max(initial=0) <= 1
        if supervised and not self._early_stopping_supervised:
            return False
        if not getattr(method, "early_stopping_default", False):
            return False
        fraction = self.validation_fraction or _EARLY_STOPPING_FRACTION
        n_groups = len(np.unique(bags.components))
        return n_groups * fraction >= _MIN_HELD_OUT_BAGS

    def _resolve_batch_size(self, bags):
        """``batch_size="auto"``: room for about 8 typical bags a step.

        A bag at least as large as the batch is a step of its own, and the
        proportion gradient of one bag is noisy: on Fashion-MNIST in bags of
        256, one bag a step reached 74.6 % held-out accuracy in 40 epochs and
        8 bags a step 82.4 % (``benchmarks/results/tuning.md``). Smaller bags
        share the minimum batch already, and a larger batch would cut the
        steps of small data sets (digits in bags of 64 with 8 bags a step:
        80.6 % against 86.5 % with 128 rows). Large data sets keep at least
        512 steps an epoch with wider batches (up to 2048 rows on the CPU):
        1.6M rows in bags of 64 trained twice as fast with 2048 rows a step
        as with 128, at the same accuracy.
        """
        if self.batch_size != "auto":
            return self.batch_size
        sizes = bags.sizes
        if self.max_bag_size is not None:
            sizes = np.minimum(sizes, self.max_bag_size)
        typical = int(np.median(sizes))
        rows = int(sizes.sum())
        if device_type(self._resolved_device()) != "cpu":  # a GPU: wider steps
            minimum = int(np.clip(rows // 32, _MIN_BATCH_ROWS, 1024))
        else:  # wider steps where they stay plentiful (>= 512 an epoch)
            minimum = int(np.clip(rows // 512, _MIN_BATCH_ROWS, _MAX_CPU_BATCH))
        if typical < minimum:
            return minimum
        return _BAGS_PER_STEP * typical

    def _train_sampler(self, dataset):
        return BagBatchSampler(
            dataset.pair_bags,
            self.batch_size_,
            max_bag_size=self.max_bag_size,
            shuffle=True,
            random_state=self._seed_,
        )

    # ------------------------------------------------------------------
    # skorch's getters: pure, the work is done before training
    # ------------------------------------------------------------------
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
                ("divergence_guard", DivergenceGuard()),
            ]
        )

    def get_dataset(self, X, y=None):
        """Our datasets pass through; anything else is wrapped for prediction."""
        if isinstance(X, (BagDataset, ArrayDataset, TrainValid)):
            return X
        return ArrayDataset(as_tensor(X))

    def get_split_datasets(self, X, y=None, **fit_params):
        """The training and held-out bags, split by ``fit`` (see :meth:`_split`)."""
        if isinstance(X, TrainValid):
            return X.train, X.valid
        return self.get_dataset(X), None

    def get_iterator(self, dataset, training=False):
        """Whole-bag batches for bag datasets, large row batches otherwise."""
        if not isinstance(dataset, BagDataset):
            return array_loader(dataset, self.predict_batch_size)
        if training:
            sampler = self._train_sampler(dataset)
        else:
            sampler = BagBatchSampler(
                dataset.pair_bags, self.batch_size_, shuffle=False
            )
        return EpochBatches(dataset, sampler, device=self._resolved_device())

    # ------------------------------------------------------------------
    # initialisation
    # ------------------------------------------------------------------
    def initialize_module(self):
        """Build the module, sized from the data where it asks for it.

        A module class is instantiated with the ``module__*`` parameters. A
        module *instance* is a template, never modified: every ``fit`` (unless
        ``warm_start``) trains a copy whose parameters are reset
        (``reset_parameters()`` of every submodule that has one, under the
        fit's seed), so two seeded fits are identical and estimators sharing
        the instance are independent. An instance given with ``module__*``
        parameters is rebuilt from its class with them (skorch's rule).
        """
        kwargs = self.get_params_for("module")
        module = MLP if self.module is None else self.module
        if isinstance(module, torch.nn.Module):
            if not kwargs:
                self.module_ = _reset_copy(module)
                return self
            # skorch's rule: module__* parameters build a new instance of the
            # class, sized from the data like a class
            module = type(module)
        accepted = inspect.signature(module).parameters
        shape = getattr(self, "_input_shape_", None)
        if "n_features" in accepted and "n_features" not in kwargs:
            if shape is None:
                raise ValueError(self._unsized_message())
            if len(shape) != 1:
                raise ValueError(
                    f"The default MLP takes 2-D X; X has rows of shape "
                    f"{shape}. Pass a module for it."
                )
            kwargs["n_features"] = shape[0]
        if "n_classes" in accepted and "n_classes" not in kwargs:
            if self._n_outputs() is None:
                raise ValueError(self._unsized_message())
            kwargs["n_classes"] = self._n_outputs()
        self.module_ = module(**kwargs)
        return self

    def _unsized_message(self):
        return _UNSIZED.format(
            name=type(self).__name__, outputs="module__n_classes=<outputs>"
        )

    def initialize_criterion(self):
        """No criterion: the loss is the method (:meth:`initialize_method`)."""
        return self

    def initialize_method(self):
        """Build ``method_`` from ``method`` and the ``method__*`` parameters.

        Called at the start of every ``fit`` and ``partial_fit`` (a fresh
        method each time), before the data are validated, so that a bad
        ``method__*`` value fails before any work; override it to build a
        method in another way.
        """
        self.method_ = make_method(
            self.method, self.get_params_for("method"), task=self._method_task
        )
        return self

    def initialize(self):
        with self._on_device():
            return super().initialize()

    def get_metadata_routing(self):
        """Request ``props`` for ``fit``, ``partial_fit`` and ``score`` only.

        skorch's own routing also exposes its internal splitter, which would
        route ``groups`` into the module; here validation is by whole bags.
        """
        return super(NeuralNet, self).get_metadata_routing()

    # ------------------------------------------------------------------
    # training
    # ------------------------------------------------------------------
    def _check_params(self):
        validate_parameter_constraints(
            self._parameter_constraints,
            self.get_params(deep=False),
            caller_name=type(self).__name__,
        )
        check_device(self.device)

    def _fit(self, X, y, props, sample_weight, fit_params, partial, classes=None):
        """Validate everything, then train; a failure leaves no half-fit.

        Before training nothing is changed until every check has passed. A
        failure during training (a callback, a checkpoint, a diverged loss)
        leaves the estimator unfitted: its weights are half-trained.
        """
        refuse_sklearn_cross_val_predict(props)
        self._check_params()
        previous_method = vars(self).get("method_")
        self.initialize_method()  # a bad method__* value fails here
        method, self.method_ = self.method_, previous_method
        fitted = self.__sklearn_is_fitted__()
        continuing = fitted and (partial or self.warm_start)
        with restore_on_error(self, _DATA_ATTRIBUTES):
            X = self._validate_X(X, reset=not continuing)
            bags, on_labels = self._fit_inputs(
                X, y, props, sample_weight, classes, continuing
            )
            self._check_fit_problem(bags, on_labels)
            batch_size = (
                self.batch_size_ if continuing else self._resolve_batch_size(bags)
            )
        if not on_labels and not continuing:
            self._warn_if_unidentifiable(bags, X)
        early_stopping = self._resolve_early_stopping(bags, on_labels, method)
        # every check has passed: commit
        self._input_shape_ = tuple(X.shape[1:])
        self._commit_fit_inputs(bags, on_labels)
        self._fit_on_labels_ = on_labels
        self.method_ = method
        self.batch_size_ = batch_size
        self.do_early_stopping_ = early_stopping
        if self.precision == "float16" and not (
            continuing and hasattr(self, "grad_scaler_")
        ):
            self.grad_scaler_ = torch.amp.GradScaler(
                device_type(self._resolved_device())
            )
        if not continuing:
            self.n_train_steps_ = 0
            self._split_seed_ = None  # one validation split per fit
        self._seed_ = draw_seed(self.random_state, self.n_train_steps_)
        if self._split_seed_ is None:
            self._split_seed_ = (
                self._seed_
                if self._seed_ is not None
                else int(check_random_state(None).randint(np.iinfo(np.int32).max))
            )
        dataset = BagDataset(resident(as_tensor(X), self._resolved_device()), bags)
        stale = getattr(self, "_weights_stale_", False)
        # predictable while it trains (callbacks may predict); unfitted if
        # training fails
        self._weights_stale_ = False
        try:
            with (
                self._threads(),
                self._on_device(),
                self._seeded(),
                # CUDA: no kernel whose accumulation order varies
                deterministic(device_type(self.device) == "cuda"),
            ):
                if not continuing and not (partial and self.initialized_ and not stale):
                    self.initialize()
                datasets = self._split(dataset)
                self._record_train_bags(datasets.train.bags, on_labels, continuing)
                self.method_.prepare(
                    datasets.train.bags, np.random.RandomState(self._seed_)
                )
                if not (continuing and partial) or self.total_steps_ is None:
                    steps = len(self._train_sampler(datasets.train))
                    self.total_steps_ = steps * self.max_epochs
                self._epoch_of_fit_ = 0
                super().partial_fit(datasets, None, **fit_params)
                self._after_training(datasets.train)
        except BaseException:
            self._weights_stale_ = True
            raise
        return self

    def _record_train_bags(self, bags, on_labels, continuing):
        """``train_bag_ids_``: the bags trained on (accumulated by partial
        fits), so that a bag scorer can warn when it scores one of them."""
        if on_labels:
            self.train_bag_ids_ = None
            return
        ids = np.asarray(bags.ids)
        previous = getattr(self, "train_bag_ids_", None) if continuing else None
        if previous is not None and previous.dtype.kind == ids.dtype.kind:
            ids = np.union1d(previous, ids)
        self.train_bag_ids_ = ids

    def on_epoch_begin(self, net, dataset_train=None, dataset_valid=None, **kwargs):
        super().on_epoch_begin(
            net, dataset_train=dataset_train, dataset_valid=dataset_valid, **kwargs
        )
        self.method_.on_epoch_begin(self._epoch_of_fit_)
        self._epoch_of_fit_ += 1

    def _bag_batch(self, target):
        target = to_tensor(target, device=self.device)
        return BagBatch(
            target["segments"],
            target["bag_props"],
            target["bag_index"],
            target.get("members"),
            target.get("weights"),
            target.get("bag_weights"),
        )

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
        self._check_output(y_pred, bags.bag_props.shape[1])
        if not training:
            return self._validation_loss(y_pred, bags)
        return self.method_.get_loss(
            self.module_, X, y_pred, bags, self.n_train_steps_, self.total_steps_
        )

    def _validation_loss(self, y_pred, bags):
        """Hook: the ``valid_loss`` of a batch of held-out bags."""
        return bags.proportion_loss(y_pred)

    def train_step_single(self, batch, **fit_params):
        """One forward/backward pass on a batch of whole bags."""
        self._set_training(True)
        Xi, target = unpack_data(batch)
        Xi = self.augment_batch(to_tensor(Xi, device=self.device))
        with self._autocast():
            logits = self.infer(Xi, **fit_params)
            loss = self.get_loss(logits, target, X=Xi, training=True)
        self._backward(loss)
        return {"loss": loss, "y_pred": logits}

    def _backward(self, loss):
        """Hook: back-propagate the loss of a training step."""
        if self.precision == "float16":  # scaled, so small gradients survive
            self.grad_scaler_.scale(loss).backward()
        else:
            loss.backward()

    def _autocast(self):
        """Mixed precision of ``precision``: the network's passes in a low
        precision dtype, the weights, losses and bag means in float32."""
        if self.precision == "float32":
            return nullcontext()
        return torch.autocast(
            device_type(self.device), dtype=getattr(torch, self.precision)
        )

    def _step_optimizer(self, step_fn):
        if self.precision != "float16":
            return super()._step_optimizer(step_fn)
        # a grad scaler steps without a closure: one pass, then scaled steps
        step_fn()
        for name in self._optimizers:
            self.grad_scaler_.step(getattr(self, name + "_"))
        self.grad_scaler_.update()
        return None

    def augment_batch(self, X):
        """Hook: transform a training batch on the device; identity here.

        Override it in a subclass for data augmentation (e.g. random crops
        and flips of images); every pass of the method (clean, perturbed)
        then sees the same augmented batch, and bag structure is unchanged.
        """
        return X

    def train_step(self, batch, **fit_params):
        step = super().train_step(batch, **fit_params)
        self.n_train_steps_ += 1
        return step

    def _forward_outputs(self, X):
        """The module's outputs for ``X`` (validated), in large batches."""
        # the DataLoader draws a base seed from torch's global RNG: fork it so
        # that predicting leaves the caller's random stream as it was
        with self._threads(), self._on_device(), torch.random.fork_rng(devices=[]):
            outputs = self.forward(ArrayDataset(as_tensor(X)), training=False)
        self._check_output(outputs, self._n_outputs())
        return outputs

    def forward_iter(self, X, training=False, device="cpu"):
        with self._on_device():
            yield from super().forward_iter(X, training=training, device=device)

    # ------------------------------------------------------------------
    # parameters, persistence and scikit-learn plumbing
    # ------------------------------------------------------------------
    def get_params(self, deep=True, **kwargs):
        params = super().get_params(deep=deep, **kwargs)
        if deep:
            # the hyperparameters the method will be built with
            try:
                defaults = method_params(self.method)
            except ValueError:  # an unknown name fails in fit, not here
                defaults = {}
            effective = {**defaults, **self.get_params_for("method")}
            params.update({f"method__{k}": v for k, v in effective.items()})
        return params

    def set_params(self, **kwargs):
        """Set parameters; ``method__*`` apply from the next ``fit``.

        ``device`` moves a fitted network and its optimizer state to the new
        device. ``module__*`` (and ``module``, ``compile``) re-initialise a
        fitted network, as in skorch: a
        :class:`~sklearn_llp.exceptions.ModelResetWarning` says so and the
        model counts as not fitted until the next ``fit``.

        Returns
        -------
        self : estimator
        """
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
        """Load parameters saved by ``save_params`` or a ``Checkpoint``.

        ``load_params(checkpoint=cp)`` loads the files of a skorch
        ``Checkpoint`` (there is no criterion to load). On a model that was
        never fitted, call ``initialize()`` first with ``module__n_features``
        set and the output size known (see the subclass), so that the network
        can be built before its weights are loaded; the model then predicts
        with the loaded weights.
        """
        if checkpoint is not None:
            if not self.initialized_:
                self.initialize()
            if kwargs.get("f_history") is None and checkpoint.f_history is not None:
                # the file names are formatted with the checkpoint's history
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
        # skorch lists every public-looking attribute; its private
        # bookkeeping (``_params_to_validate``) is not a parameter.
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
    """Name the columns of a DataFrame that a network cannot take as they are."""
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
