"""``LLPClassifier``: a scikit-learn classifier trained from label proportions."""

import inspect
import math
import re
import warnings
from contextlib import contextmanager
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import (
    Interval,
    StrOptions,
    validate_parameter_constraints,
)
from sklearn.utils.validation import (
    _num_samples,
    check_is_fitted,
    validate_data,
)
from skorch import NeuralNet
from skorch.callbacks import BatchScoring, EpochScoring, ProgressBar
from skorch.dataset import unpack_data
from skorch.utils import to_tensor

from ._base import LLPClassifierMixin, refuse_sklearn_cross_val_predict
from ._callbacks import BagValidationErrors, EpochTable
from ._data import (
    ArrayDataset,
    BagBatchSampler,
    BagDataset,
    array_loader,
    as_tensor,
    bag_loader,
    subset_rows,
)
from ._decision import class_prior
from .bags._identifiability import check_identifiability, warn_if_unidentifiable
from .exceptions import FitDivergedError, ModelResetWarning
from .methods import BagBatch, LLPMethod, make_method, method_params
from .model_selection import BagShuffleSplit
from .modules import MLP
from .utils import Bags, check_bags
from .utils._validation import check_labels

# Base-class parameters that have no meaning here: the method is the loss,
# batches are whole bags, validation holds out whole bags and probabilities
# are always a softmax of the module's logits.
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


#: ``batch_size="auto"``: fewest rows a step, and bags a step for large bags.
_MIN_BATCH_ROWS = 128
_BAGS_PER_STEP = 8


def resolve_device(device):
    """``"auto"`` is CUDA when available, else the CPU."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


class _Callbacks(list):
    """The default callbacks, to which a tuple of user callbacks can be added
    (skorch concatenates ``defaults + callbacks``, which needs lists)."""

    def __add__(self, other):
        return list(self) + list(other)


class LLPClassifier(LLPClassifierMixin, NeuralNet):
    """Instance classifier learned from bags and their label proportions.

    A PyTorch network trained with skorch on bags of instances, each bag
    labelled only by the proportions of its classes (Learning from Label
    Proportions). ``fit(X, bags, props)`` takes one bag id per row and the
    bags' proportions; ``predict`` then labels single instances. Every batch
    holds whole bags; bag means are segment reductions on the device.

    Parameters
    ----------
    module : torch.nn.Module class or instance, default=None
        The network; it maps a batch of ``X`` to class logits. ``None`` uses
        :class:`~sklearn_llp.modules.MLP`. A class whose ``__init__`` takes
        ``n_features`` and/or ``n_classes`` gets them from the data unless set
        as ``module__n_features``/``module__n_classes``; other arguments are
        ``module__*`` parameters (e.g. ``module__hidden_sizes=(64,)``).
    method : str or LLPMethod, default="vat"
        The training loss, a component like ``module``: ``"dllp"``
        (proportion loss only), ``"vat"`` (LLP-VAT: proportion loss plus
        virtual adversarial consistency), ``"pi"`` (Pi-model consistency),
        ``"rot"`` (optimal-transport pseudo-labels), ``"llpfc"`` (forward
        correction of bag-position labels), ``"easyllp"`` (debiased instance
        loss), ``"noisy"`` (bags weighted by the likelihood of noisy counts)
        or an :class:`~sklearn_llp.methods.LLPMethod` instance. Its hyperparameters
        are ``method__*`` parameters, e.g. ``method__alpha=0.1``; they
        override an instance's own values (the instance itself is cloned,
        never modified) and are validated before any training. A fresh
        method is built once per ``fit``/``partial_fit``.
    classes : array-like, default=None
        Class labels in the column order of ``props``; default: the columns
        of a per-bag table, else ``0..n_classes-1``.
    threshold : {"auto", "prior", "argmax"} or float, default="auto"
        How ``predict`` turns probabilities into labels (``predict_proba`` is
        the same for every choice). ``"argmax"``: the most probable class.
        ``"prior"``: prior matching, without instance labels: the decision
        (for two classes, a threshold on the probability of ``classes_[1]``)
        at which the predicted class rates on the training rows equal the
        class rates of the bags (their size-weighted mean proportions). A
        model trained on proportions matches every bag's mean probability but
        can predict the common class for every row when no bag holds a
        majority of the rare class; prior matching recovers such decisions.
        A float in (0, 1): a fixed threshold on the probability of
        ``classes_[1]`` (two classes). ``"auto"``: ``"prior"`` for two classes
        fitted on bags, ``"argmax"`` otherwise (more classes, or labels); see
        ``benchmarks/results/threshold.md``. Fitted: ``decision_offsets_`` and
        ``threshold_``.
    max_bag_size : int, default=1024
        Bags with more instances are subsampled afresh every epoch to this
        many, so the memory of a step is bounded while every instance is used
        over the epochs. None never subsamples.
    validation_fraction : float, default=None
        Fraction of the **rows** held out for validation, in whole bags (whole
        groups of connected bags when bags overlap), drawn by
        :class:`~sklearn_llp.model_selection.BagShuffleSplit`: the held-out
        rows exceed the fraction by less than one bag. Every epoch the history
        records ``valid_loss`` (proportion loss) and the bag errors
        ``valid_hard_l1``, ``valid_soft_l1``, ``valid_hard_kl`` and
        ``valid_soft_kl`` (see :mod:`sklearn_llp.metrics`), which skorch's
        ``EarlyStopping``/``Checkpoint`` can monitor. None trains on all bags.
        The split is drawn once per ``fit`` and kept by ``partial_fit``.
    random_state : int, RandomState instance or None, default=None
        Seeds the network's initialisation, the bag shuffling, the validation
        split and the random perturbations; an int makes a CPU fit
        reproducible for a given number of torch threads.
    optimizer : torch optimizer class, default=torch.optim.Adam
    lr : float, default=1e-3
        Learning rate.
    max_epochs : int, default=100
        Epochs per ``fit`` (and per ``partial_fit``).
    batch_size : int or "auto", default="auto"
        Target number of instances per batch; whole bags are packed until it
        is reached, so a batch may exceed it by less than one bag. ``"auto"``
        (the fitted ``batch_size_``) is 128 rows when the median bag (capped
        at ``max_bag_size``) is smaller, else 8 median bags: a bag at least as
        large as the batch is a step of its own, and the proportion gradient
        of a single bag is noisy (Fashion-MNIST in bags of 256: 74.6 %
        held-out accuracy with one bag a step, 82.4 % with 8). On a GPU the
        minimum is raised to ``n_rows / 32`` (at most 1024).
    predict_batch_size : int, default=4096
        Rows per forward pass in ``predict`` and ``predict_proba``.
    callbacks : list or tuple of skorch callbacks, default=None
        Extra callbacks, e.g. ``skorch.callbacks.ProgressBar("count")``.
        skorch's ``EpochScoring``/``BatchScoring`` score instances against
        labels, which LLP data do not have, and are refused; the bag errors
        of ``validation_fraction`` are recorded instead.
    warm_start : bool, default=False
        Continue from the current weights on ``fit``; the data must have the
        fitted model's classes and features (else ``fit`` raises and the
        model is left as it was).
    verbose : int, default=1
        1 prints skorch's epoch table; 0 is silent.
    device : str, default="auto"
        ``"auto"`` trains on CUDA when available, else on the CPU; or any
        torch device string. ``set_params(device=...)`` on a fitted model
        moves its network and optimizer state there.
    n_threads : int, "auto" or None, default="auto"
        Torch intra-op threads during ``fit`` and ``predict`` on the CPU,
        restored afterwards (torch's setting is process-wide). ``"auto"`` is 1:
        for the networks this package trains, one thread is the robust
        choice -- on an idle 2-core machine a second thread made a DLLP epoch
        1.3 times faster, but with one other busy process it made a VAT fit
        33 times slower (79 s against 2.4 s), as the threads wait for each
        other. Give more threads for large networks (CNNs) on an otherwise
        idle machine; None leaves torch's setting. Results on the CPU are
        bit-for-bit reproducible for a given number of threads, not across
        thread counts.
    **kwargs
        ``method__*``, ``module__*``, ``optimizer__*`` and ``callbacks__*``
        parameters, as in skorch.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels, from ``props`` or ``classes``, never from the bag ids.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names of a DataFrame ``X``.
    module_ : torch.nn.Module
        The trained network.
    method_ : LLPMethod
        The method object that computed the loss.
    history_ : skorch.History
        Per-epoch and per-batch records (``train_loss``, ``valid_loss``,
        ``dur``...), also as ``history``.
    batch_size_ : int
        The batch size used (``batch_size`` resolved from the bag sizes).
    decision_offsets_ : ndarray of shape (n_classes,)
        Log-probability offsets of the decision rule: ``predict`` is the class
        of ``argmax(log proba + decision_offsets_)`` (zeros for ``argmax``).
    threshold_ : float or None
        With two classes, the probability of ``classes_[1]`` from which
        ``predict`` says ``classes_[1]`` (0.5 for ``argmax``); None otherwise.
        Usable in ``sklearn.model_selection.FixedThresholdClassifier``.
    n_train_steps_ : int
        Optimizer steps taken so far.
    total_steps_ : int
        Optimizer steps planned by the ``fit`` that started training; the
        consistency ramp-up is a fraction of it.

    See Also
    --------
    sklearn_llp.methods.VAT : The LLP-VAT loss.
    sklearn_llp.methods.DLLP : The proportion loss alone.

    Notes
    -----
    ``fit`` checks whether the bags can identify an instance classifier
    (:func:`~sklearn_llp.bags.check_identifiability`: enough bags whose
    proportions differ, for the classes and features) and issues an
    :class:`~sklearn_llp.exceptions.IdentifiabilityWarning` when they may
    not: fits from different seeds then match every bag yet disagree on
    instances. A fit whose loss becomes NaN or infinite stops with
    :class:`~sklearn_llp.exceptions.FitDivergedError`. ``set_params`` of
    ``module__*`` on a fitted model re-initialises the network (skorch's
    behaviour): a :class:`~sklearn_llp.exceptions.ModelResetWarning` says so
    and the model counts as not fitted until the next ``fit``.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn_llp import LLPClassifier
    >>> from sklearn_llp.bags import UniformBagGenerator
    >>> X, y = load_digits(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> bags, props = UniformBagGenerator(16, random_state=0).make_bags(X, y)
    >>> keep = bags >= 0  # the last, incomplete bag is dropped
    >>> clf = LLPClassifier(max_epochs=20, verbose=0, random_state=0)
    >>> clf = clf.fit(X[keep], bags[keep], props[keep])
    >>> clf.predict(X[:5]).shape
    (5,)
    >>> clf.score(X[keep], bags[keep], props[keep]) > 0.8
    True
    """

    __metadata_request__fit = {"props": True}
    __metadata_request__partial_fit = {"props": True}
    __metadata_request__score = {"props": True}

    # ``method`` is a component like ``module``: ``method__*`` parameters
    prefixes_ = [*NeuralNet.prefixes_, "method"]

    _parameter_constraints = {
        "module": [callable, None],
        "method": [str, LLPMethod],
        "classes": ["array-like", None],
        "threshold": [
            StrOptions({"auto", "prior", "argmax"}),
            Interval(Real, 0, 1, closed="neither"),
        ],
        "max_bag_size": [Interval(Integral, 1, None, closed="left"), None],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither"), None],
        "random_state": ["random_state"],
        "lr": [Interval(Real, 0, None, closed="neither")],
        "max_epochs": [Interval(Integral, 0, None, closed="left")],
        "batch_size": [
            Interval(Integral, 1, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "predict_batch_size": [Interval(Integral, 1, None, closed="left")],
        "callbacks": [list, tuple, StrOptions({"disable"}), None],
        "device": [str, torch.device],
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
        method="vat",
        classes=None,
        threshold="auto",
        max_bag_size=1024,
        validation_fraction=None,
        random_state=None,
        optimizer=torch.optim.Adam,
        lr=1e-3,
        max_epochs=100,
        batch_size="auto",
        predict_batch_size=4096,
        callbacks=None,
        warm_start=False,
        verbose=1,
        device="auto",
        n_threads="auto",
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
        self.classes = classes
        self.threshold = threshold
        self.max_bag_size = max_bag_size
        self.validation_fraction = validation_fraction
        self.random_state = random_state
        self.predict_batch_size = predict_batch_size
        self.n_threads = n_threads

    # ------------------------------------------------------------------
    # context: device, seeds, rollback
    # ------------------------------------------------------------------
    @contextmanager
    def _on_device(self):
        """Let skorch see the resolved device while it works, keep ``"auto"``."""
        requested = self.device
        resolved = resolve_device(requested)
        self.device = resolved
        try:
            yield
        finally:
            if self.device == resolved:  # unless set_params changed it inside
                self.device = requested

    @contextmanager
    def _threads(self):
        """Use ``n_threads`` torch threads on the CPU, restored afterwards."""
        wanted = 1 if self.n_threads == "auto" else self.n_threads
        if wanted is None or resolve_device(self.device) != "cpu":
            yield
            return
        previous = torch.get_num_threads()
        torch.set_num_threads(wanted)
        try:
            yield
        finally:
            torch.set_num_threads(previous)

    @contextmanager
    def _seeded(self):
        """Seed a fork of torch's RNG, so a fit is reproducible and the
        caller's global RNG state is left as it was."""
        if self._seed_ is None:
            yield
            return
        devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(self._seed_)
            yield

    def _draw_seed(self):
        if self.random_state is None:
            self._seed_ = None
        else:
            rng = check_random_state(self.random_state)
            steps = getattr(self, "n_train_steps_", 0)
            self._seed_ = int(rng.randint(np.iinfo(np.int32).max) + steps) % (2**31)

    @contextmanager
    def _rollback_on_error(self):
        """Restore the data attributes if validation fails half-way."""
        saved = {
            name: vars(self)[name] for name in _DATA_ATTRIBUTES if name in vars(self)
        }
        try:
            yield
        except BaseException:
            for name in _DATA_ATTRIBUTES:
                vars(self).pop(name, None)
            vars(self).update(saved)
            raise

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
        except ValueError as exc:
            if re.search(r"\bX\b", str(exc)):  # already names X
                raise
            raise ValueError(f"X: {exc}") from exc
        if not reset and tuple(X.shape[1:]) != self._input_shape_:
            raise ValueError(
                f"X has rows of shape {tuple(X.shape[1:])}, but the model was "
                f"fitted on rows of shape {self._input_shape_}."
            )
        return X

    def _label_bags(self, y, n_samples, classes, sample_weight):
        """Supervised data: every row its own bag, with a one-hot proportion."""
        classes, codes = check_labels(y, n_samples, classes)
        onehot = np.eye(len(classes))[codes]
        bags = check_bags(np.arange(n_samples), sample_weight=sample_weight)
        rows = bags.ids  # rows of weight 0 are dropped
        bags.props = onehot[rows]
        bags.classes = classes
        if bags.weights is not None:
            # each row is its own bag: its weight weighs its cross-entropy
            bags.bag_weights = bags.weights[rows]
            if np.count_nonzero(bags.props.sum(axis=0)) < 2:
                raise ValueError(
                    "sample_weight leaves rows of a single class with a positive "
                    "weight; at least 2 classes are needed."
                )
        return bags

    def _training_bags(self, X, y, props, sample_weight, classes):
        """Validate bags and proportions (or labels) against ``X``."""
        n_samples = _num_samples(X)
        if props is None and not isinstance(y, Bags):
            if y is None:
                raise ValueError(
                    f"{type(self).__name__} requires y to be passed, but the target "
                    "y is None: pass bag ids as y with props, or class labels as y."
                )
            return self._label_bags(y, n_samples, classes, sample_weight), True
        bags = check_bags(
            y,
            props,
            n_samples=n_samples,
            classes=classes,
            sample_weight=sample_weight,
            require_props=True,
            min_bags=2,
        )
        return bags, False

    def _continued_bags(self, X, y, props, sample_weight):
        """Bags for a fit that continues the fitted network: its classes."""
        try:
            bags, on_labels = self._training_bags(
                X, y, props, sample_weight, classes=self.classes_
            )
        except ValueError as exc:
            raise ValueError(
                f"{exc} The fitted model has classes {self.classes_.tolist()}; "
                "warm_start=True and partial_fit continue training it, so new data "
                "must have the same classes (set warm_start=False to train "
                "afresh)."
            ) from exc
        if len(bags.classes) != len(self.classes_) or np.any(
            bags.classes != self.classes_
        ):
            raise ValueError(
                f"props has classes {bags.classes.tolist()} but the model was "
                f"fitted on {self.classes_.tolist()}."
            )
        return bags, on_labels

    @property
    def _default_callbacks(self):
        callbacks = [
            (name, EpochTable() if name == "print_log" else callback)
            for name, callback in super()._default_callbacks
        ]
        return _Callbacks([*callbacks, ("valid_bag_errors", BagValidationErrors())])

    def get_dataset(self, X, y=None):
        """Our datasets pass through; anything else is wrapped for prediction."""
        if isinstance(X, (BagDataset, ArrayDataset)):
            return X
        return ArrayDataset(as_tensor(X))

    def get_split_datasets(self, X, y=None, **fit_params):
        """Hold out ``validation_fraction`` of the rows, in whole bags.

        Called once per ``fit``/``partial_fit``; the method then sees the
        training bags (:meth:`LLPMethod.prepare`).
        """
        dataset = self.get_dataset(X)
        if not isinstance(dataset, BagDataset):
            return dataset, None
        dataset_train, dataset_valid = dataset, None
        if self.validation_fraction:
            splitter = BagShuffleSplit(
                n_splits=1,
                test_size=self.validation_fraction,
                random_state=self._split_seed_,
            )
            try:
                train, valid = next(splitter.split_bags(dataset.bags))
            except ValueError as exc:
                raise ValueError(
                    f"validation_fraction={self.validation_fraction}: {exc}"
                ) from None
            dataset_train = dataset.select_bags(train)
            dataset_valid = dataset.select_bags(valid)
        self.method_.prepare(dataset_train.bags, np.random.RandomState(self._seed_))
        return dataset_train, dataset_valid

    def get_iterator(self, dataset, training=False):
        """Whole-bag batches for bag datasets, large row batches otherwise."""
        if not isinstance(dataset, BagDataset):
            return array_loader(dataset, self.predict_batch_size)
        sampler = BagBatchSampler(
            dataset.pair_bags,
            self.batch_size_,
            max_bag_size=self.max_bag_size if training else None,
            shuffle=training,
            random_state=self._seed_,
        )
        if training and self.total_steps_ is None:
            self.total_steps_ = len(sampler) * self.max_epochs
        return bag_loader(dataset, sampler)

    # ------------------------------------------------------------------
    # initialisation
    # ------------------------------------------------------------------
    def _n_classes_known(self):
        if hasattr(self, "classes_"):
            return len(self.classes_)
        if self.classes is not None:
            return len(self.classes)
        return None

    def initialize_module(self):
        """Build the module, sized from the data where it asks for it."""
        kwargs = self.get_params_for("module")
        module = MLP if self.module is None else self.module
        if not isinstance(module, torch.nn.Module):
            accepted = inspect.signature(module).parameters
            shape = getattr(self, "_input_shape_", None)
            if "n_features" in accepted and "n_features" not in kwargs:
                if shape is None:
                    raise ValueError(_UNSIZED.format(name=type(self).__name__))
                if len(shape) != 1:
                    raise ValueError(
                        f"The default MLP takes 2-D X; X has rows of shape "
                        f"{shape}. Pass a module for it."
                    )
                kwargs["n_features"] = shape[0]
            if "n_classes" in accepted and "n_classes" not in kwargs:
                if self._n_classes_known() is None:
                    raise ValueError(_UNSIZED.format(name=type(self).__name__))
                kwargs["n_classes"] = self._n_classes_known()
        self.module_ = self.initialized_instance(module, kwargs)
        return self

    def initialize_criterion(self):
        """No criterion: the loss is the method, built by :meth:`initialize_method`."""
        return self

    def initialize_method(self):
        """Build ``method_`` from ``method`` and the ``method__*`` parameters.

        Called once at the start of every ``fit`` and ``partial_fit``;
        override it to build a method in another way.
        """
        self.method_ = make_method(self.method, self.get_params_for("method"))
        return self

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

    def fit(self, X, y=None, props=None, sample_weight=None, **fit_params):
        """Train from bags and proportions, or from labels if ``props=None``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Instances (numeric; use a ``ColumnTransformer`` for categorical
            columns). Rows of higher-dimensional arrays go to a custom module.
        y : array-like, DataFrame, sparse matrix, list of arrays or Bags
            The bag of every row: an id (int, str, bool, timestamp) or a
            composite key (a tuple, or a DataFrame of key columns); the id
            ``-1`` is refused, it marks rows in no bag. Bags that overlap are
            given as a sparse ``(n_samples, n_bags)`` membership matrix or a
            list of ``n_bags`` arrays of row indices. A
            :class:`~sklearn_llp.utils.Bags` (from
            :func:`~sklearn_llp.utils.check_bags`) carries its proportions.
            With ``props=None`` (and no ``Bags``), ``y`` holds the class label
            of every row (ordinary supervised learning).
        props : array-like, DataFrame, Series or dict, default=None
            Label proportions: sample-aligned ``(n_samples, n_classes)``
            (each row its bag's proportions), a 1-D positive-class fraction
            for two classes, or a per-bag table indexed by bag id (a pandas
            object with the default index ``0..n-1`` is read by row); with
            overlapping bags, one row per bag ``(n_bags, n_classes)``. Rows
            must sum to 1 within ``sklearn_llp.utils.PROPS_SUM_TOL`` (0.01).
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of every row (e.g. survey weights): a bag's predicted
            proportions are the weighted mean of its rows' probabilities
            (an integer weight counts as that many copies of the row), and
            the consistency losses are weighted means; every bag counts once.
            ``props`` are taken as the bags' (weighted) proportions as given.
        **fit_params
            Passed to the module's ``forward``.

        Returns
        -------
        self : LLPClassifier
        """
        return self._fit(X, y, props, sample_weight, fit_params, partial=False)

    def partial_fit(
        self, X, y=None, props=None, classes=None, sample_weight=None, **fit_params
    ):
        """Train ``max_epochs`` more epochs without re-initialising.

        Parameters
        ----------
        X, y, props, sample_weight
            As in :meth:`fit`; the data must have the fitted model's classes
            and features.
        classes : array-like, default=None
            Accepted for scikit-learn's API; must match ``classes_`` if the
            model is fitted, else it is used like the ``classes`` parameter.
        **fit_params
            Passed to the module's ``forward``.

        Returns
        -------
        self : LLPClassifier
        """
        if isinstance(X, BagDataset):  # called back by NeuralNet.fit
            return super().partial_fit(X, y, **fit_params)
        if (
            classes is not None
            and self.__sklearn_is_fitted__()
            and not np.array_equal(classes, self.classes_)
        ):
            raise ValueError("classes must match classes_ of the fitted model.")
        return self._fit(X, y, props, sample_weight, fit_params, True, classes)

    def _fit(self, X, y, props, sample_weight, fit_params, partial, classes=None):
        refuse_sklearn_cross_val_predict(props)
        self._check_params()
        method = make_method(self.method, self.get_params_for("method"))
        fitted = self.__sklearn_is_fitted__()
        continuing = fitted and (partial or self.warm_start)
        with self._rollback_on_error():
            X = self._validate_X(X, reset=not continuing)
            if continuing:
                bags, on_labels = self._continued_bags(X, y, props, sample_weight)
            else:
                classes = self.classes if classes is None else classes
                bags, on_labels = self._training_bags(
                    X, y, props, sample_weight, classes
                )
                if len(bags.classes) < 2:
                    raise ValueError("y holds a single class; at least 2 are needed.")
            # everything is valid: commit
            self._input_shape_ = tuple(X.shape[1:])
        if not on_labels and not continuing:
            # fit(...) -> _fit -> here: point the warning at the user's call
            warn_if_unidentifiable(check_identifiability(bags, None, X), 3)
        dataset = BagDataset(_resident(as_tensor(X), self.device), bags)
        self.classes_ = bags.classes
        self._fit_on_labels_ = on_labels
        self._weights_stale_ = False
        self.method_ = method
        if not continuing:
            self.batch_size_ = self._resolve_batch_size(bags)
            self.n_train_steps_ = 0
            self._split_seed_ = None  # one validation split per fit
        if not (continuing and partial):
            self.total_steps_ = None  # planned by the first training iterator
        self._draw_seed()
        if self._split_seed_ is None:
            self._split_seed_ = (
                self._seed_
                if self._seed_ is not None
                else int(check_random_state(None).randint(np.iinfo(np.int32).max))
            )
        with self._threads(), self._on_device(), self._seeded():
            if not continuing and not (partial and self.initialized_):
                self.initialize()
            super().partial_fit(dataset, None, **fit_params)
            self._fit_decision(dataset)
        return self

    def _resolve_batch_size(self, bags):
        """``batch_size="auto"``: room for about 8 typical bags a step.

        A bag at least as large as the batch is a step of its own, and the
        proportion gradient of one bag is noisy: on Fashion-MNIST in bags of
        256, one bag a step reached 74.6 % held-out accuracy in 40 epochs and
        8 bags a step 82.4 % (``benchmarks/results/tuning.md``). Smaller bags
        share the minimum batch already, and a larger batch would cut the
        steps of small data sets (digits in bags of 64 with 8 bags a step:
        80.6 % against 86.5 % with 128 rows).
        """
        if self.batch_size != "auto":
            return self.batch_size
        sizes = bags.sizes
        if self.max_bag_size is not None:
            sizes = np.minimum(sizes, self.max_bag_size)
        typical = int(np.median(sizes))
        minimum = _MIN_BATCH_ROWS
        if resolve_device(self.device) != "cpu":  # a GPU wants wider steps
            minimum = int(np.clip(sizes.sum() // 32, _MIN_BATCH_ROWS, 1024))
        if typical < minimum:
            return minimum
        return _BAGS_PER_STEP * typical

    def on_train_begin(self, net, X=None, y=None, **kwargs):
        for name, callback in self.callbacks_:
            if (
                isinstance(callback, ProgressBar)
                and callback.batches_per_epoch == "auto"
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

    def on_batch_end(self, net, batch=None, training=False, **kwargs):
        # the loss is already on the host (skorch's history), no extra copy
        if not training:
            return
        loss = self.history[-1, "batches", -1, "train_loss"]
        if math.isfinite(loss):
            return
        epoch = len(self.history)
        batch_index = len(self.history[-1, "batches"])
        self._weights_stale_ = True  # unusable: not fitted any more
        raise FitDivergedError(
            f"The training loss became {loss} at epoch {epoch}, batch "
            f"{batch_index}: the fit diverged and the network's weights are no "
            f"longer usable. Likely causes: a learning rate too large for this "
            f"network (lr={self.lr}), a method hyperparameter out of its range "
            "(method__*), or features on very different scales (standardise X). "
            "Fit again with a smaller lr."
        )

    def _bag_batch(self, target):
        target = to_tensor(target, device=self.device)
        return BagBatch(
            target["segments"],
            target["bag_props"],
            target.get("members"),
            target.get("weights"),
            target.get("bag_weights"),
            target.get("bag_index"),
        )

    def get_loss(self, y_pred, y_true, X=None, training=False):
        """The method's loss in training, the proportion loss in validation."""
        bags = self._bag_batch(y_true)
        if y_pred.shape[1] != bags.bag_props.shape[1]:
            raise ValueError(
                f"The module outputs {y_pred.shape[1]} logits per instance but "
                f"there are {bags.bag_props.shape[1]} classes."
            )
        if not training:
            return bags.proportion_loss(y_pred)
        return self.method_.get_loss(
            self.module_, X, y_pred, bags, self.n_train_steps_, self.total_steps_
        )

    def train_step_single(self, batch, **fit_params):
        """One forward/backward pass on a batch of whole bags."""
        self._set_training(True)
        Xi, target = unpack_data(batch)
        Xi = self.augment_batch(to_tensor(Xi, device=self.device))
        logits = self.infer(Xi, **fit_params)
        loss = self.get_loss(logits, target, X=Xi, training=True)
        loss.backward()
        return {"loss": loss, "y_pred": logits}

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

    # ------------------------------------------------------------------
    # prediction
    # ------------------------------------------------------------------
    def predict_proba(self, X):
        """Class probabilities, in the order of ``classes_``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        with self._threads(), self._on_device():
            logits = self.forward(ArrayDataset(as_tensor(X)), training=False)
        proba = torch.softmax(logits.float(), dim=1).numpy()
        if not np.isfinite(proba).all():
            raise ValueError(
                "The network predicts NaN or infinite probabilities: its weights "
                "are not finite (a diverged fit, or weights loaded from one). "
                "Fit again, e.g. with a smaller lr."
            )
        return proba

    def predict(self, X):
        """Class of every row by the fitted decision rule (``threshold``).

        With ``threshold="argmax"`` the most probable class; with the
        prior-matched rule the class of ``argmax(log proba + decision_offsets_)``
        (for two classes: ``proba[:, 1] >= threshold_``).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        proba = self.predict_proba(X)  # checks that the model is fitted
        return self.classes_[self._decide(proba)]

    # ------------------------------------------------------------------
    # decision rule
    # ------------------------------------------------------------------
    def _fit_decision(self, dataset):
        """The decision rule from the training rows (see ``threshold``)."""

        bags = dataset.bags
        rows = np.unique(bags.members)

        def training_proba():
            with self._on_device():
                logits = self.forward(ArrayDataset(subset_rows(dataset.X, rows)))
            return torch.softmax(logits.float(), dim=1).numpy().astype(np.float64)

        weights = None if bags.weights is None else bags.weights[rows]
        self._fit_decision_rule(training_proba, class_prior(bags), weights)

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
        self : LLPClassifier
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

    def _move_to_device(self):
        """Move the network and the optimizer state to ``device``."""
        device = resolve_device(self.device)
        for name in self._modules:
            getattr(self, name + "_").to(device)
        for name in self._optimizers:
            optimizer = getattr(self, name + "_", None)
            if optimizer is not None:
                # load_state_dict casts the state to the parameters' devices
                optimizer.load_state_dict(optimizer.state_dict())

    def initialize(self):
        with self._on_device():
            return super().initialize()

    def forward_iter(self, X, training=False, device="cpu"):
        with self._on_device():
            yield from super().forward_iter(X, training=training, device=device)

    def load_params(self, *args, **kwargs):
        """Load parameters saved by ``save_params`` (see skorch).

        On a model that was never fitted, call ``initialize()`` first with
        ``module__n_features`` and ``classes`` (or ``module__n_classes``)
        set, so that the network can be built before its weights are loaded;
        the model then predicts with the loaded weights.
        """
        with self._on_device():
            super().load_params(*args, **kwargs)
        if kwargs.get("f_params") is not None or kwargs.get("checkpoint") is not None:
            self._weights_stale_ = False
        if not hasattr(self, "classes_"):
            n_features = self.get_params_for("module").get("n_features")
            if n_features is not None and not hasattr(self, "n_features_in_"):
                self.n_features_in_ = n_features
            if not hasattr(self, "_input_shape_") and n_features is not None:
                self._input_shape_ = (n_features,)
            self.classes_ = (
                np.asarray(self.classes)
                if self.classes is not None
                else np.arange(self._n_classes_known() or _module_outputs(self))
            )
            self._fit_on_labels_ = False
            steps = [row.get("train_batch_count", 0) for row in self.history]
            self.n_train_steps_ = int(sum(steps))
            self.total_steps_ = None
        return self

    def __setstate__(self, state):
        requested = state.get("device", "auto")
        state["device"] = resolve_device(requested)
        super().__setstate__(state)
        self.device = requested

    def _get_param_names(self):
        # skorch lists every public-looking attribute; its private
        # bookkeeping (``_params_to_validate``) is not a parameter.
        return [name for name in super()._get_param_names() if name[0] != "_"]

    def __sklearn_is_fitted__(self):
        return (
            bool(self.initialized_)
            and hasattr(self, "classes_")
            and not getattr(self, "_weights_stale_", False)
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.non_deterministic = self.random_state is None
        return tags


def _resident(X, device):
    """``X`` moved once to a GPU when it takes at most half its free memory.

    Batches are then gathered by index on the device: one transfer per fit
    instead of one per step. Sparse ``X`` stays on the host (densified per
    batch), as does ``X`` too large for the device.
    """
    device = torch.device(resolve_device(device))
    if device.type != "cuda" or not torch.is_tensor(X):
        return X
    free, _ = torch.cuda.mem_get_info(device)
    if X.element_size() * X.nelement() > free // 2:
        return X
    return X.to(device)


def _module_outputs(net):
    """Number of logits of the module: the classes of a loaded model."""
    last = [p for p in net.module_.parameters() if p.dim() >= 1][-1]
    return int(last.shape[0])


_UNSIZED = (
    "{name} sizes its network from the data in fit. To initialize() a model "
    "that was never fitted (e.g. before load_params), pass "
    "module__n_features=<number of columns of X> and classes=[...] (or "
    "module__n_classes=<number of classes>)."
)
