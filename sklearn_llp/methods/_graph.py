"""Graph: DLLP, then pseudo-labels smoothed over a k-NN graph of the rows."""

from numbers import Integral, Real

import numpy as np
import torch
from sklearn.utils._param_validation import Interval

from ._base import DLLP, perturbation_mode
from ._rot import sinkhorn_pseudo_labels
from ._segments import weighted_mean
from ._vat import _input_units


@torch.no_grad()
def knn_graph(X, n_neighbors, chunk=1024):
    """Indices ``(n, n_neighbors)`` of every row's nearest other rows
    (Euclidean), ``chunk`` rows at a time on ``X``'s device.

    Examples
    --------
    >>> from torch import tensor
    >>> from sklearn_llp.methods.functional import knn_graph
    >>> knn_graph(tensor([[0.0], [1.0], [3.0], [10.0]]), 1).ravel().tolist()
    [1, 0, 1, 2]
    """
    found = []
    for start in range(0, len(X), chunk):
        distances = torch.cdist(X[start : start + chunk], X)
        own = torch.arange(len(distances), device=X.device)
        distances[own, own + start] = float("inf")
        found.append(distances.topk(n_neighbors, largest=False).indices)
    return torch.cat(found)


@torch.no_grad()
def graph_pseudo_labels(probs, neighbors, segments, bag_props, alpha=0.9, n_iter=20):
    """Class probabilities smoothed over a graph, bags' counts kept (:ref:`graph`).

    ``n_iter`` times: ``q = (1 - alpha) probs + alpha mean(q of the row's
    neighbors)``, then the rows of every bag rescaled to its proportions
    (:func:`sinkhorn_pseudo_labels` at ``reg=1``: one factor per bag and
    class, as the bag's logits shifted by one constant).

    Examples
    --------
    >>> from torch import tensor
    >>> from sklearn_llp.methods.functional import graph_pseudo_labels
    >>> q = graph_pseudo_labels(tensor([[0.5, 0.5], [0.5, 0.5]]), tensor([[1], [0]]),
    ...                         tensor([0, 0]), tensor([[0.2, 0.8]]))
    >>> [round(v, 4) for v in q[:, 1].tolist()]
    [0.8, 0.8]
    """
    tiny = torch.finfo(probs.dtype).tiny
    q = probs
    for _ in range(n_iter):
        q = (1 - alpha) * probs + alpha * q[neighbors].mean(1)
        q = sinkhorn_pseudo_labels(q.clamp_min(tiny).log(), segments, bag_props)
    return q


class Graph(DLLP):
    """DLLP, then also pseudo-labels of a k-NN graph of the rows (:ref:`graph`).

    After LLP-BP (Havaldar et al., ICLR 2024), with label propagation for
    belief propagation. The first ``warm_up`` share of the epochs trains DLLP;
    then the network's predictions on the training rows are smoothed over the
    ``n_neighbors``-nearest-neighbour graph of the rows (in the default
    MLP's standardised units), each bag held at its proportions
    (:func:`~sklearn_llp.methods.functional.graph_pseudo_labels`), and the
    rest trains on DLLP's loss plus ``beta`` times the cross-entropy to them
    (``pseudo_labels_``). Dense ``X`` with a row in one bag at most; other
    data trains DLLP alone.

    Parameters
    ----------
    n_neighbors : int, default=30
        Neighbours of every row in the graph.
    alpha : float, default=0.9
        Weight of the neighbours against the row's own prediction.
    n_iter : int, default=20
        Rounds of smoothing, each followed by the bags' proportions.
    beta : float, default=1.0
        Weight of the pseudo-labels' cross-entropy.
    warm_up : float, default=0.5
        Share of the epochs before the pseudo-labels.

    Examples
    --------
    >>> from sklearn_llp import LLPClassifier
    >>> clf = LLPClassifier(method="graph", method__n_neighbors=10)
    """

    reads_bag_means = False
    _parameter_constraints = {
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "alpha": [Interval(Real, 0, 1, closed="both")],
        "n_iter": [Interval(Integral, 1, None, closed="left")],
        "beta": [Interval(Real, 0, None, closed="left")],
        "warm_up": [Interval(Real, 0, 1, closed="neither")],
    }

    def __init__(self, n_neighbors=30, alpha=0.9, n_iter=20, beta=1.0, warm_up=0.5):
        self.n_neighbors = n_neighbors
        self.alpha = alpha
        self.n_iter = n_iter
        self.beta = beta
        self.warm_up = warm_up

    def prepare(self, bags, random_state):
        self.pseudo_labels_ = None
        return super().prepare(bags, random_state)

    def on_epoch_data(self, epoch, net, dataset):
        X, bags = getattr(dataset, "X", None), getattr(dataset, "bags", None)
        if epoch != max(1, round(self.warm_up * net.max_epochs)):
            return
        if bags is None or bags.overlapping or not isinstance(X, torch.Tensor):
            return  # sparse, streamed or overlapping: DLLP alone
        rows = np.flatnonzero(bags.codes >= 0)
        X = X[torch.as_tensor(rows, device=X.device)].float()
        module, chunks = net.module_, torch.split(X, 4096)
        with torch.no_grad(), perturbation_mode(module):
            probs = torch.cat([module(c).float().softmax(1) for c in chunks])
        mean, scale = _input_units(module)
        neighbors = knn_graph((X - mean) / scale, min(self.n_neighbors, len(X) - 1))
        on = neighbors.device
        labels = graph_pseudo_labels(
            probs.to(on),
            neighbors,
            torch.as_tensor(bags.codes[rows], device=on),
            dataset.bag_props.to(on),
            self.alpha,
            self.n_iter,
        )
        self.pseudo_labels_ = labels.new_zeros(bags.n_samples, labels.shape[1])
        self.pseudo_labels_[torch.as_tensor(rows, device=on)] = labels
        # a fresh network learns them: the warm-up's ranking is in the labels
        for layer in module.modules():
            if hasattr(layer, "reset_parameters"):
                layer.reset_parameters()
        net.optimizer_.state.clear()

    def logit_loss(self, logits, bags, step, total_steps):
        loss = bags.proportion_loss(logits)
        if self.pseudo_labels_ is None or bags.rows is None or self.beta == 0:
            return loss
        targets = self.pseudo_labels_.to(logits.device)[bags.rows]
        ce = -(targets * torch.log_softmax(logits.float(), 1)).sum(1)
        return loss + self.beta * weighted_mean(ce, bags.weights)
