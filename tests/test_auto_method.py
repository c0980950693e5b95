"""``method="auto"``: the method it chooses by bag regime, and what it trains."""

import warnings

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import expand_proportions, label_proportions
from sklearn_llp.core import check_bags
from sklearn_llp.exceptions import FewBagsWarning
from sklearn_llp.methods import DLLP, VAT, AutoMethod, EasyLLP

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def few_large_bags(n_bags=10, size=1000, seed=0, d=8):
    """Two classes, rows dealt at random into ``n_bags`` equal bags: every
    bag's rate is close to the prior. Training and test rows."""
    rng = np.random.RandomState(seed)
    w = rng.normal(size=d)

    def draw(n):
        X = rng.normal(size=(n, d)).astype(np.float32)
        return X, (X @ w + 0.5 * rng.normal(size=n) > 1.0).astype(int)

    X, y = draw(n_bags * size)
    bags = rng.permutation(np.arange(len(y)) % n_bags)
    props = expand_proportions(label_proportions(bags, y, classes=[0, 1]), bags)
    return X, bags, props, *draw(2000)


def chosen(ids, props):
    return type(AutoMethod().choose(check_bags(ids, props=props))[0])


def test_auto_chooses_by_classes_bag_size_number_of_bags_and_spread():
    rng = np.random.RandomState(0)
    ids = np.repeat(np.arange(10), 1000)
    rate = rng.binomial(1000, 0.3, 10) / 1000  # random draws' spread
    assert chosen(ids, np.c_[1 - rate, rate][ids]) is EasyLLP
    by_label = np.linspace(0.05, 0.95, 10)  # bags grouped by the label
    assert chosen(ids, np.c_[1 - by_label, by_label][ids]) is DLLP
    assert chosen(ids, np.c_[1 - rate, rate / 2, rate / 2][ids]) is VAT
    many = np.repeat(np.arange(26), 1000)
    assert chosen(many, np.tile([0.7, 0.3], (len(many), 1))) is DLLP
    small = np.repeat(np.arange(10), 511)
    assert chosen(small, np.tile([0.7, 0.3], (len(small), 1))) is VAT


def test_overlapping_bags_count_as_the_groups_early_stopping_holds_out():
    """300 random bags sharing rows are one group, too few for EasyLLP's
    early stopping: "auto" trains VAT, without a FewBagsWarning."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(1000, 4)).astype(np.float32)
    members = [rng.choice(1000, 16, replace=False) for _ in range(300)]
    rate = np.array([(X[m, 0] > 0).mean() for m in members])
    props = np.c_[1 - rate, rate]
    with warnings.catch_warnings():
        warnings.simplefilter("error", FewBagsWarning)
        clf = LLPClassifier(max_epochs=0, verbose=0).fit(X, members, props)
    assert type(clf.method_) is VAT and clf.fit_plan_.held_out is None
    assert chosen(np.repeat(np.arange(300), 16), np.repeat(props, 16, 0)) is EasyLLP


def test_auto_chooses_easyllp_for_many_random_bags_of_two_classes():
    rng = np.random.RandomState(0)
    ids = np.repeat(np.arange(250), 16)
    rate = rng.binomial(16, 0.3, 250) / 16  # random draws' spread
    assert chosen(ids, np.c_[1 - rate, rate][ids]) is EasyLLP
    assert chosen(ids[:-16], np.c_[1 - rate, rate][ids[:-16]]) is VAT  # 249 bags
    by_label = np.linspace(0.05, 0.95, 250)  # bags grouped by the label
    assert chosen(ids, np.c_[1 - by_label, by_label][ids]) is VAT
    three = np.c_[1 - rate, rate / 2, rate / 2]
    assert chosen(ids, three[ids]) is VAT
    labels = rng.randint(0, 2, 4000)  # bags of one row: labels, in any form
    assert chosen(np.arange(4000), np.eye(2)[labels]) is VAT


def test_auto_trains_vat_bit_for_bit_where_it_chooses_vat():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(320, 4)).astype(np.float32)
    bags = np.arange(320) % 40
    props = rng.dirichlet([1, 1], 40)[bags]
    params = dict(max_epochs=3, random_state=0, verbose=0, device="cpu")
    auto = LLPClassifier(**params).fit(X, bags, props)
    vat = LLPClassifier(method="vat", **params).fit(X, bags, props)
    assert type(auto.method_) is VAT and auto.get_params()["method"] == "auto"
    assert auto.method_.get_params() == VAT().get_params()
    for a, b in zip(auto.module_.parameters(), vat.module_.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_auto_learns_where_the_bag_loss_cannot_and_says_what_it_trains(capsys):
    # 10 random bags of 1,000: every rate near the prior, so VAT learns
    # nothing (test AUC 0.52 here); the default trains EasyLLP (0.71)
    X, bags, props, X_test, y_test = few_large_bags()
    clf = LLPClassifier(random_state=0, device="cpu", n_threads=1)  # defaults
    clf.fit(X, bags, props)
    assert isinstance(clf.method_, EasyLLP)
    assert roc_auc_score(y_test, clf.predict_proba(X_test)[:, 1]) > 0.65
    header = capsys.readouterr().out.splitlines()[0]
    assert header == (
        "method='auto' trains EasyLLP: 10 bags of about 1,000 rows whose "
        "proportions vary like random draws."
    )


def test_a_continued_fit_keeps_the_method_auto_chose():
    X, bags, props, *_ = few_large_bags(n_bags=10, size=1000)
    clf = LLPClassifier(max_epochs=1, random_state=0, verbose=0, device="cpu")
    clf.partial_fit(X, bags, props)
    many = np.arange(200) % 50  # a chunk of 50 small bags: VAT on its own
    clf.partial_fit(X[:200], many, np.tile([0.7, 0.3], (200, 1)))
    assert isinstance(clf.method_, EasyLLP)


def test_auto_takes_no_method_parameters():
    X, bags, props, *_ = few_large_bags(n_bags=2, size=10)
    with pytest.raises(ValueError, match=r"\['method__alpha'\] .* AutoMethod"):
        LLPClassifier(method__alpha=0.1, verbose=0).fit(X, bags, props)
