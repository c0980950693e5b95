"""The graph method (:ref:`graph`): its pseudo-label step by hand, and that
rows' similarity lifts what the bags alone teach."""

import numpy as np
import pytest
import torch

from sklearn_llp import LLPClassifier
from sklearn_llp.methods import BagBatch, Graph
from sklearn_llp.methods.functional import graph_pseudo_labels, knn_graph


def test_knn_graph_and_the_pseudo_labels_by_hand():
    assert knn_graph(
        torch.tensor([[0.0], [1.0], [3.0], [10.0]]), 1
    ).ravel().tolist() == [1, 0, 1, 2]
    # a cycle 0 -> 1 -> 2 -> 3 -> 0; alpha 0.5: q1 = p1 / 2 + p1(next) / 2 =
    # (1/3, 2/3, 2/3, 1/3) of class 1. Bag 0 (rows 0, 1) must hold 65 % of it:
    # odds 1/2 and 2 times 2 give 1/2 and 4/5 (mean 0.65); bag 1 (rows 2, 3)
    # 35 %: odds 2 and 1/2 halved give 1/2 and 1/5
    p1 = torch.tensor([0.0, 2 / 3, 2 / 3, 2 / 3])
    q = graph_pseudo_labels(
        torch.stack([1 - p1, p1], 1),
        torch.tensor([[1], [2], [3], [0]]),
        torch.tensor([0, 0, 1, 1]),
        torch.tensor([[0.35, 0.65], [0.65, 0.35]]),
        alpha=0.5,
        n_iter=1,
    )
    np.testing.assert_allclose(q[:, 1], [0.5, 0.8, 0.5, 0.2], atol=1e-5)
    np.testing.assert_allclose(q.sum(1), 1.0, atol=1e-6)


def test_the_loss_adds_the_cross_entropy_to_the_rows_pseudo_labels():
    method = Graph(beta=0.5).prepare(_bags(), None)
    method.pseudo_labels_ = torch.tensor([[1.0, 0.0], [0.2, 0.8], [0.5, 0.5]])
    logits = torch.tensor([[0.0, 0.0], [1.0, 0.0]])
    batch = BagBatch(
        torch.tensor([0, 0]),
        torch.tensor([[0.5, 0.5]]),
        torch.tensor([0]),
        rows=torch.tensor([2, 1]),
    )
    log_p = torch.log_softmax(logits, 1)
    ce = -(0.5 * log_p[0].sum() + 0.2 * log_p[1, 0] + 0.8 * log_p[1, 1]) / 2
    got = method.logit_loss(logits, batch, 0, 1) - batch.proportion_loss(logits)
    np.testing.assert_allclose(got.item(), 0.5 * ce.item(), rtol=1e-6)


def _bags():
    from sklearn_llp.core import check_bags

    return check_bags([0, 0, 1], props=[[0.5, 0.5]] * 3)


@pytest.mark.slow
def test_similar_rows_share_labels_in_few_random_bags():
    """Two tight clusters, one a class, in 4 random bags of 500: every bag's
    rate is near the prior, so DLLP learns little; the graph's pseudo-labels
    make each cluster one label."""
    rng = np.random.RandomState(0)
    y = rng.randint(0, 2, 2000)
    X = (rng.normal(size=(2000, 2)) * 0.5 + np.c_[2.0 * y, 0 * y]).astype(np.float32)
    bags = rng.permutation(np.arange(2000) % 4)
    rate = np.bincount(bags, y) / np.bincount(bags)
    props = np.c_[1 - rate, rate][bags]
    common = dict(max_epochs=20, random_state=0, verbose=0, n_threads=1)
    dllp = LLPClassifier(method="dllp", **common).fit(X, bags, props)
    graph = LLPClassifier(method="graph", **common).fit(X, bags, props)
    pseudo = graph.method_.pseudo_labels_[:, 1].numpy() > 0.5
    print(
        np.mean(dllp.predict(X) == y),
        np.mean(graph.predict(X) == y),
        np.mean(pseudo == y),
    )
