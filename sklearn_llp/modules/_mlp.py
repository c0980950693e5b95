"""The default network for tabular data."""

from torch import nn


class MLP(nn.Module):
    """Multi-layer perceptron that outputs class logits.

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

    Examples
    --------
    >>> import torch
    >>> from sklearn_llp.modules import MLP
    >>> MLP(n_features=4, n_classes=3, hidden_sizes=(8,))(torch.zeros(2, 4)).shape
    torch.Size([2, 3])
    """

    def __init__(self, n_features, n_classes, hidden_sizes=(256, 256), dropout=0.0):
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

    def forward(self, X):
        return self.layers(X)
