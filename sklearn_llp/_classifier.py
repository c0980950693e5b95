"""``LLPClassifier``: a scikit-learn classifier trained from label proportions."""

import inspect
import re
from contextlib import contextmanager
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, validate_parameter_constraints
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _num_samples,
    check_is_fitted,
    column_or_1d,
    validate_data,
)
from skorch import NeuralNet
from skorch.dataset import unpack_data
from skorch.utils import to_tensor

from ._callbacks import BagValidationErrors
from ._data import (
    ArrayDataset,
    BagBatchSampler,
    BagDataset,
    array_loader,
    as_tensor,
    bag_loader,
)
from .methods import BagBatch, LLPMethod, make_method, proportion_loss
from .metrics import hard_l1_error
from .modules import MLP
from .utils import check_bag_membership

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


def resolve_device(device):
    """``"auto"`` is CUDA when available, else the CPU."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


class LLPClassifier(ClassifierMixin, NeuralNet):
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
        The training loss: ``"dllp"`` (proportion loss only), ``"vat"``
        (LLP-VAT: proportion loss plus virtual adversarial consistency),
        ``"pi"`` (Pi-model consistency), ``"rot"`` (optimal-transport
        pseudo-labels) or an :class:`~sklearn_llp.methods.LLPMethod`
        instance, which carries its own hyperparameters.
    alpha : float, default=None
        Maximum consistency weight of ``"vat"`` and ``"pi"``; None keeps the
        method's default (0.05 for VAT, 1.0 for Pi).
    eps : float, default=None
        VAT perturbation radius in input units; None keeps VAT's default 1.0.
    rampup : float, default=None
        Fraction of the planned optimizer steps over which the consistency
        weight ramps up as ``alpha * exp(-5 (1 - t/T)^2)``; None keeps the
        method's default 0.4.
    noise_std : float, default=None
        Gaussian input noise of ``"pi"``; None keeps its default 0.15.
    rot_alpha : float, default=None
        Weight of the proportion loss in ``"rot"``; None keeps its default.
        A hyperparameter the chosen method does not use, or any of these set
        beside a method object, is ignored with a warning.
    classes : array-like, default=None
        Class labels in the column order of ``props``; default: the columns
        of a per-bag table, else ``0..n_classes-1``.
    max_bag_size : int, default=1024
        Bags with more instances are subsampled afresh every epoch to this
        many, so the memory of a step is bounded while every instance is used
        over the epochs. None never subsamples.
    validation_fraction : float, default=None
        Fraction of the bags held out (whole) for validation: every epoch the
        history records ``valid_loss`` (proportion loss) and the bag errors
        ``valid_hard_l1``, ``valid_soft_l1``, ``valid_hard_kl`` and
        ``valid_soft_kl`` (see :mod:`sklearn_llp.metrics`), which skorch's
        ``EarlyStopping``/``Checkpoint`` can monitor. None trains on all bags.
        The paper selects models by the hard L1 error of held-out bags but
        warns against early stopping on it; both are opt-in here. Bags that
        share instances are held out together (whole connected groups); the
        split is drawn once per ``fit`` and kept by ``partial_fit``.
    random_state : int, RandomState instance or None, default=None
        Seeds the network's initialisation, the bag shuffling and the random
        perturbations; an int makes a CPU fit reproducible.
    optimizer : torch optimizer class, default=torch.optim.Adam
    lr : float, default=1e-3
        Learning rate.
    max_epochs : int, default=100
        Epochs per ``fit`` (and per ``partial_fit``).
    batch_size : int, default=128
        Target number of instances per batch; whole bags are packed until it
        is reached, so a batch may exceed it by less than one bag. With
        large bags, make room for several bags per step (e.g. 8 times the bag
        size): a bag at least as large as ``batch_size`` is a step of its
        own, and the proportion gradient of a single bag is noisy. On
        Fashion-MNIST in bags of 256, one bag per step reached 74.6 % held-out
        accuracy in 40 epochs, 8 bags per step (``batch_size=2048``) 82.4 %
        (``benchmarks/tune.py``). Random bags gain most, their proportions
        differing little; for groups of similar rows (K-means bags) the
        default did as well as packing 8 bags.
    predict_batch_size : int, default=4096
        Rows per forward pass in ``predict`` and ``predict_proba``.
    callbacks : list of skorch callbacks, default=None
        Extra callbacks, e.g. ``skorch.callbacks.ProgressBar("count")``.
    warm_start : bool, default=False
        Continue from the current weights on ``fit``.
    verbose : int, default=1
        1 prints skorch's epoch table; 0 is silent.
    device : str, default="auto"
        ``"auto"`` trains on CUDA when available, else on the CPU; or any
        torch device string.
    **kwargs
        ``module__*``, ``optimizer__*`` and ``callbacks__*`` parameters, as in
        skorch.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels, from ``props`` or ``classes``, never from the bag ids.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names of a DataFrame ``X``.
    module_ : torch.nn.Module
        The trained network.
    method_ : LLPMethod
        The method object that computed the loss.
    history_ : skorch.History
        Per-epoch and per-batch records (``train_loss``, ``valid_loss``,
        ``dur``...), also as ``history``.
    n_train_steps_ : int
        Optimizer steps taken so far.
    total_steps_ : int
        Optimizer steps planned by the ``fit`` that started training; the
        consistency ramp-up is a fraction of it.

    See Also
    --------
    sklearn_llp.methods.VAT : The LLP-VAT loss.
    sklearn_llp.methods.DLLP : The proportion loss alone.

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

    _parameter_constraints = {
        "module": [callable, None],
        "method": [str, LLPMethod],
        "alpha": [Interval(Real, 0, None, closed="left"), None],
        "eps": [Interval(Real, 0, None, closed="left"), None],
        "rampup": [Interval(Real, 0, 1, closed="both"), None],
        "noise_std": [Interval(Real, 0, None, closed="left"), None],
        "rot_alpha": [Interval(Real, 0, 1, closed="both"), None],
        "classes": ["array-like", None],
        "max_bag_size": [Interval(Integral, 1, None, closed="left"), None],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither"), None],
        "random_state": ["random_state"],
        "lr": [Interval(Real, 0, None, closed="neither")],
        "max_epochs": [Interval(Integral, 0, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "predict_batch_size": [Interval(Integral, 1, None, closed="left")],
        "device": [str, torch.device],
    }

    def __init__(
        self,
        module=None,
        *,
        method="vat",
        alpha=None,
        eps=None,
        rampup=None,
        noise_std=None,
        rot_alpha=None,
        classes=None,
        max_bag_size=1024,
        validation_fraction=None,
        random_state=None,
        optimizer=torch.optim.Adam,
        lr=1e-3,
        max_epochs=100,
        batch_size=128,
        predict_batch_size=4096,
        callbacks=None,
        warm_start=False,
        verbose=1,
        device="auto",
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
        self.alpha = alpha
        self.eps = eps
        self.rampup = rampup
        self.noise_std = noise_std
        self.rot_alpha = rot_alpha
        self.classes = classes
        self.max_bag_size = max_bag_size
        self.validation_fraction = validation_fraction
        self.random_state = random_state
        self.predict_batch_size = predict_batch_size

    # ------------------------------------------------------------------
    # context: device and seeds
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

    def _training_dataset(self, X, y, props, reset, classes=None):
        """Validate ``X``, bags and proportions into a :class:`BagDataset`."""
        X = self._validate_X(X, reset)
        classes = classes if reset else self.classes_
        if props is None:
            if y is None:
                raise ValueError(
                    f"{type(self).__name__} requires y to be passed, but the target "
                    "y is None: pass bag ids as y with props, or class labels as y."
                )
            labels = column_or_1d(y, warn=True)
            check_classification_targets(labels)
            if labels.shape[0] != X.shape[0]:
                raise ValueError(
                    f"y must hold one class label per row of X when props is None; "
                    f"got shape {labels.shape} for {X.shape[0]} rows."
                )
            label_classes, codes = np.unique(labels, return_inverse=True)
            if classes is None:
                classes = label_classes
            bag_props = (np.asarray(classes)[:, None] == label_classes).T * 1.0
            bag_props = bag_props[codes.ravel()]
            if np.any(bag_props.sum(1) != 1):
                raise ValueError("y holds labels that are not in classes.")
            members = np.arange(X.shape[0])
            indptr = np.arange(X.shape[0] + 1)
            classes = np.asarray(classes)
        else:
            indptr, members, _, bag_props, classes = check_bag_membership(
                y, props, X.shape[0], classes=classes
            )
        if reset:
            self.classes_ = classes
        elif len(classes) != len(self.classes_) or np.any(classes != self.classes_):
            raise ValueError(
                f"props has classes {list(classes)} but the model was fitted on "
                f"{list(self.classes_)}."
            )
        if reset and len(self.classes_) < 2:
            raise ValueError("y holds a single class; at least 2 are needed.")
        return BagDataset(as_tensor(X), indptr, members, bag_props)

    @property
    def _default_callbacks(self):
        return [
            *super()._default_callbacks,
            ("valid_bag_errors", BagValidationErrors()),
        ]

    def get_dataset(self, X, y=None):
        """Our datasets pass through; anything else is wrapped for prediction."""
        if isinstance(X, (BagDataset, ArrayDataset)):
            return X
        return ArrayDataset(as_tensor(X))

    def get_split_datasets(self, X, y=None, **fit_params):
        """Hold out ``validation_fraction`` of the bags, whole."""
        dataset = self.get_dataset(X)
        if not self.validation_fraction or not isinstance(dataset, BagDataset):
            return dataset, None
        n_bags = len(dataset.bag_props)
        n_valid = int(round(self.validation_fraction * n_bags))
        if not 1 <= n_valid < n_bags:
            raise ValueError(
                f"validation_fraction={self.validation_fraction} of {n_bags} bags "
                f"holds out {n_valid}; at least one bag must be on each side."
            )
        # bags that share instances (overlapping bags) go to one side together
        component = dataset.bag_components()
        order = np.random.RandomState(self._split_seed_).permutation(
            component.max() + 1
        )
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        bag_order = np.argsort(rank[component], kind="stable")
        valid = np.zeros(n_bags, dtype=bool)
        valid[bag_order[:n_valid]] = True
        # never cut a component: take all of the last one reached
        valid |= np.isin(component, component[valid])
        if valid.all():
            raise ValueError(
                f"validation_fraction={self.validation_fraction}: the bags form "
                "too few groups of connected (overlapping) bags to hold some out."
            )
        return dataset.select_bags(~valid), dataset.select_bags(valid)

    def get_iterator(self, dataset, training=False):
        """Whole-bag batches for bag datasets, large row batches otherwise."""
        if not isinstance(dataset, BagDataset):
            return array_loader(dataset, self.predict_batch_size)
        sampler = BagBatchSampler(
            dataset.pair_bags,
            self.batch_size,
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
    def initialize_module(self):
        """Build the module, sized from the data where it asks for it."""
        kwargs = self.get_params_for("module")
        module = MLP if self.module is None else self.module
        if not isinstance(module, torch.nn.Module):
            accepted = inspect.signature(module).parameters
            if "n_features" in accepted and "n_features" not in kwargs:
                if len(self._input_shape_) != 1:
                    raise ValueError(
                        f"The default MLP takes 2-D X; X has rows of shape "
                        f"{self._input_shape_}. Pass a module for it."
                    )
                kwargs["n_features"] = self._input_shape_[0]
            if "n_classes" in accepted and "n_classes" not in kwargs:
                kwargs["n_classes"] = len(self.classes_)
        self.module_ = self.initialized_instance(module, kwargs)
        return self

    def initialize_criterion(self):
        """The loss comes from the method object."""
        self.method_ = make_method(
            self.method,
            alpha=self.alpha,
            eps=self.eps,
            rampup=self.rampup,
            noise_std=self.noise_std,
            rot_alpha=self.rot_alpha,
        )
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
        make_method(self.method)  # unknown names fail before any work

    def fit(self, X, y=None, props=None, **fit_params):
        """Train from bags and proportions, or from labels if ``props=None``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Instances (numeric; use a ``ColumnTransformer`` for categorical
            columns). Rows of higher-dimensional arrays go to a custom module.
        y : array-like of shape (n_samples,), sparse matrix or list of arrays
            The bag id (int or str) of every row; with ``props=None``, the
            class label of every row (ordinary supervised learning). Bags
            that overlap are given as a sparse ``(n_samples, n_bags)``
            membership matrix or a list of ``n_bags`` arrays of row indices.
        props : array-like, DataFrame, Series or dict, default=None
            Label proportions: sample-aligned ``(n_samples, n_classes)``
            (each row its bag's proportions), a 1-D positive-class fraction
            for two classes, or a per-bag table indexed by bag id; with
            overlapping bags, one row per bag ``(n_bags, n_classes)`` or a
            table keyed by ``0..n_bags-1``. Rows must sum to 1 within
            ``sklearn_llp.utils.PROPS_SUM_TOL`` (0.01).
        **fit_params
            Passed to the module's ``forward``.

        Returns
        -------
        self : LLPClassifier
        """
        return self._fit(X, y, props, self.classes, fit_params)

    def _fit(self, X, y, props, classes, fit_params):
        self._check_params()
        dataset = self._training_dataset(X, y, props, reset=True, classes=classes)
        self._input_shape_ = tuple(dataset.X.shape[1:])
        if not self.warm_start or not self.initialized_:
            self.n_train_steps_ = 0
        self.total_steps_ = None
        self._draw_seed()
        # one validation split per fit, kept by partial_fit
        self._split_seed_ = (
            self._seed_
            if self._seed_ is not None
            else int(check_random_state(None).randint(np.iinfo(np.int32).max))
        )
        with self._on_device(), self._seeded():
            # a warm start skips initialize(): rebuild the method anyway, so
            # set_params(method=..., alpha=...) always takes effect
            self.initialize_criterion()
            return super().fit(dataset, None, **fit_params)

    def partial_fit(self, X, y=None, props=None, classes=None, **fit_params):
        """Train ``max_epochs`` more epochs without re-initialising.

        Takes the same data as :meth:`fit`; the consistency ramp-up goes on
        from the steps already taken. ``classes`` is accepted for
        scikit-learn's API and must match ``classes_`` if given.

        Returns
        -------
        self : LLPClassifier
        """
        if isinstance(X, BagDataset):  # called back by NeuralNet.fit
            return super().partial_fit(X, y, **fit_params)
        self._check_params()
        fitted = self.initialized_ and hasattr(self, "classes_")
        if (
            classes is not None
            and fitted
            and not np.array_equal(classes, self.classes_)
        ):
            raise ValueError("classes must match classes_ of the fitted model.")
        if not fitted:
            classes = self.classes if classes is None else classes
            return self._fit(X, y, props, classes, fit_params)
        dataset = self._training_dataset(X, y, props, reset=False)
        self._draw_seed()
        with self._on_device(), self._seeded():
            self.initialize_criterion()
            return super().partial_fit(dataset, None, **fit_params)

    def _bag_batch(self, target):
        target = to_tensor(target, device=self.device)
        return BagBatch(target["segments"], target["bag_props"], target.get("members"))

    def get_loss(self, y_pred, y_true, X=None, training=False):
        """The method's loss in training, the proportion loss in validation."""
        bags = self._bag_batch(y_true)
        if y_pred.shape[1] != bags.bag_props.shape[1]:
            raise ValueError(
                f"The module outputs {y_pred.shape[1]} logits per instance but "
                f"there are {bags.bag_props.shape[1]} classes."
            )
        if not training:
            return proportion_loss(bags.take(y_pred), bags.segments, bags.bag_props)
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
        with self._on_device():
            logits = self.forward(ArrayDataset(as_tensor(X)), training=False)
        return torch.softmax(logits.float(), dim=1).numpy()

    def score(self, X, y, props=None, sample_weight=None):
        """``1 - hard_L1 / 2`` on the bags of ``X``; accuracy if ``props=None``.

        The hard L1 error is the mean over bags of ``||p - p_hat||_1`` where
        ``p_hat`` is the fraction of the bag's instances predicted as each
        class (the paper's model-selection criterion); when every bag is a
        single instance the score equals the accuracy. With ``props=None``,
        ``y`` holds class labels and the score is the accuracy.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Bag ids (with ``props``) or class labels (without).
        props : array-like, DataFrame, Series or dict, default=None
            Label proportions in any form :meth:`fit` accepts.
        sample_weight : None
            Accepted for scikit-learn's API with ``props=None`` only.

        Returns
        -------
        score : float
            In [0, 1], greater is better.
        """
        if props is None:
            return super().score(X, y, sample_weight=sample_weight)
        if not sp.issparse(y) and not isinstance(y, (list, tuple)):
            if len(y) != _num_samples(X):
                raise ValueError(
                    f"bags has {len(y)} entries but X has {_num_samples(X)} rows."
                )
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported with props.")
        error = hard_l1_error(y, props, self.predict_proba(X), classes=self.classes_)
        return 1.0 - error / 2.0

    def predict(self, X):
        """Most probable class of every row.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        proba = self.predict_proba(X)
        return self.classes_[proba.argmax(axis=1)]

    # ------------------------------------------------------------------
    # persistence and scikit-learn plumbing
    # ------------------------------------------------------------------
    def initialize(self):
        with self._on_device():
            return super().initialize()

    def forward_iter(self, X, training=False, device="cpu"):
        with self._on_device():
            yield from super().forward_iter(X, training=training, device=device)

    def set_params(self, **kwargs):
        if "device" in kwargs:
            super().set_params(device=kwargs.pop("device"))
        with self._on_device():  # skorch may re-initialise the module here
            return super().set_params(**kwargs)

    def load_params(self, *args, **kwargs):
        with self._on_device():
            return super().load_params(*args, **kwargs)

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
        return bool(self.initialized_) and hasattr(self, "classes_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.non_deterministic = self.random_state is None
        return tags
