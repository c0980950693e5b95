"""A few labelled rows plus bags: labelled rows as singleton bags.

The recipe of ``docs/user_guide/few_labels.rst`` helps by a margin a broken
path (labels ignored or misaligned) would not reach; how the proportion loss
weighs a singleton against a bag.
"""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import UniformBagGenerator, check_identifiability
from sklearn_llp.exceptions import IdentifiabilityWarning
from sklearn_llp.methods.functional import proportion_loss


def with_labelled_rows(X_bags, bags, props, X_labelled, y_labelled, classes):
    """The recipe: every labelled row a new bag, its one-hot label as props."""
    ids = bags.max() + 1 + np.arange(len(y_labelled))
    one_hot = (y_labelled[:, None] == classes).astype(float)
    X = np.vstack([X_bags, X_labelled])
    return X, np.concatenate([bags, ids]), np.vstack([props, one_hot])


@pytest.fixture(scope="module")
def digits_in_big_bags(digits_bags):
    """The example's setting: digits in random bags of 128, 50 labelled rows."""
    X_train, _, _, y_train, X_test, y_test = digits_bags
    order = np.random.RandomState(0).permutation(len(X_train))
    labelled, bagged = order[:50], order[100:]
    generator = UniformBagGenerator(128, drop_last=False, random_state=0)
    bags, props = generator.make_bags(X_train[bagged], y_train[bagged])
    return (
        (X_train[bagged], bags, props),
        (X_train[labelled], y_train[labelled]),
        generator.classes_,
        (X_test, y_test),
    )


def accuracy(X, bags, props, classes, test):
    clf = LLPClassifier(method="dllp", max_epochs=40, random_state=0, verbose=0)
    clf.set_params(classes=classes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IdentifiabilityWarning)  # bags alone
        clf.fit(X, bags, props)
    X_test, y_test = test
    return float(np.mean(clf.predict(X_test) == y_test))


@pytest.mark.slow
def test_labelled_singletons_improve_on_bags_alone(digits_in_big_bags):
    (X_bags, bags, props), (X_lab, y_lab), classes, test = digits_in_big_bags
    alone = accuracy(X_bags, bags, props, classes, test)
    mixed = with_labelled_rows(X_bags, bags, props, X_lab, y_lab, classes)
    X, mixed_bags, mixed_props = mixed
    mixed = accuracy(X, mixed_bags, mixed_props, classes, test)
    # measured: about 0.5 from the 10 bags alone, about 0.87 with 50 labels
    assert mixed >= alone + 0.2, (alone, mixed)
    assert mixed >= 0.75, mixed
    # the labelled rows raise what the identifiability check counts
    before = check_identifiability(X_bags, bags, props).effective_labels
    after = check_identifiability(X, mixed_bags, mixed_props).effective_labels
    assert after > before + 40


def test_a_singleton_is_cross_entropy_and_weighs_as_much_as_a_bag():
    torch.manual_seed(0)
    logits = torch.randn(129, 3)
    # one bag of 128 rows (segment 0) and one singleton (segment 1)
    segments = torch.cat([torch.zeros(128, dtype=torch.long), torch.ones(1).long()])
    bag_props = torch.tensor([[0.5, 0.3, 0.2], [0.0, 1.0, 0.0]])
    per_bag = proportion_loss(logits, segments, bag_props, reduction="none")
    # a bag of one with a one-hot "proportion" is the ordinary cross-entropy
    expected = F.cross_entropy(logits[128:], torch.tensor([1]))
    torch.testing.assert_close(per_bag[1], expected)
    # the mean over bags: the singleton counts as much as the bag of 128
    mean = proportion_loss(logits, segments, bag_props)
    torch.testing.assert_close(mean, per_bag.mean())
    # a sample weight acts within a bag: it leaves a singleton's loss alone
    weights = torch.ones(129)
    weights[128] = 10.0
    kw = dict(weights=weights, reduction="none")
    weighted = proportion_loss(logits, segments, bag_props, **kw)
    torch.testing.assert_close(weighted[1], per_bag[1])
