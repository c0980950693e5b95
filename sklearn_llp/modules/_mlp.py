"""The default network for tabular data."""

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.preprocessing import StandardScaler
from torch import nn


class MLP(nn.Module):
    """Multi-layer perceptron that outputs class logits, on standardised inputs.

    ``n_features`` and ``n_classes`` are filled in at ``fit``; set the rest as
    ``module__*``, e.g. ``LLPClassifier(module__hidden_sizes=(64,))``.

    Parameters
    ----------
    n_features : int
        Number of input features.
    n_classes : int
        Number of classes (output logits).
    hidden_sizes : tuple of int, default=(256, 256)
        Width of every hidden layer; ``()`` gives a linear model.
    dropout : float, default=0.0
        Dropout probability after every hidden layer.
    standardize : bool, default=True
        Feed ``(X - input_mean) / input_scale`` (buffers, saved with the
        weights) to the first layer; the estimators fill them from the
        training rows (:meth:`standardize_from`), so ``X``, ``X / 255`` and
        ``255 * X`` train alike, and VAT's and the Pi-model's perturbations
        are in standardised units. ``False`` feeds ``X`` as given.

    Examples
    --------
    >>> import torch
    >>> from sklearn_llp.modules import MLP
    >>> MLP(n_features=4, n_classes=3, hidden_sizes=(8,))(torch.zeros(2, 4)).shape
    torch.Size([2, 3])
    """

    def __init__(
        self,
        n_features,
        n_classes,
        hidden_sizes=(256, 256),
        dropout=0.0,
        standardize=True,
    ):
        super().__init__()
        layers = []
        width = n_features
        for hidden in hidden_sizes:
            layers += [nn.Linear(width, hidden), nn.ReLU()]
            if dropout:
                layers.append(nn.Dropout(dropout))
            width = hidden
        layers.append(nn.Linear(width, n_classes))
        self.layers = nn.Sequential(*layers)
        self.standardize = standardize
        if standardize:
            self.register_buffer("input_mean", torch.zeros(n_features))
            self.register_buffer("input_scale", torch.ones(n_features))

    def standardize_from(self, X, sample_weight=None, chunk=8192):
        """Set ``input_mean``/``input_scale`` to the columns' means and
        standard deviations (weighted; float64, ``chunk`` rows at a time).
        Sparse ``X`` alike (the network sees dense batches, so centring costs
        nothing); a constant column is scaled by 1; a 0/1 column (a one-hot
        level) is kept: a rare level would reach ``1 / sqrt(frequency)``.

        Examples
        --------
        >>> import numpy as np
        >>> net = MLP(n_features=3, n_classes=2).standardize_from(
        ...     np.array([[0.0, 5.0, 0.0], [2.0, 5.0, 1.0]]))
        >>> net.input_mean.tolist(), net.input_scale.tolist()
        ([1.0, 5.0, 0.0], [1.0, 1.0, 1.0])
        """
        if not self.standardize:
            return self
        w = sample_weight
        if w is not None:  # rows of weight 0 count for nothing
            X, w = X[w > 0], w[w > 0]
        scaler = StandardScaler(with_mean=False)  # still finds mean_; takes CSR
        indicator = np.ones(X.shape[1], dtype=bool)
        for i in range(0, X.shape[0], chunk):  # no float64 copy of X
            rows = X[i : i + chunk]
            scaler.partial_fit(rows, None, None if w is None else w[i : i + chunk])
            indicator &= ~_other_than_0_1(rows)
        mean = np.where(indicator, 0, scaler.mean_)
        scale = np.where(indicator, 1, scaler.scale_)
        with torch.no_grad():
            self.input_mean.copy_(torch.as_tensor(mean))
            self.input_scale.copy_(torch.as_tensor(scale))
        return self

    def forward(self, X):
        if self.standardize:
            X = (X - self.input_mean) / self.input_scale
        return self.layers(X)


def unwrapped(module):
    """The module inside ``torch.compile`` and data-parallel wrappers."""
    parallel = (nn.DataParallel, nn.parallel.DistributedDataParallel)
    while isinstance(module, parallel) or isinstance(
        getattr(module, "_orig_mod", None), nn.Module
    ):
        module = module.module if isinstance(module, parallel) else module._orig_mod
    return module


def _other_than_0_1(rows):
    """Columns of ``rows`` (dense or CSR) holding a value other than 0 and 1."""
    if not sp.issparse(rows):
        return ((rows != 0) & (rows != 1)).any(axis=0)
    found = np.zeros(rows.shape[1], dtype=bool)
    found[rows.indices[(rows.data != 0) & (rows.data != 1)]] = True
    return found
