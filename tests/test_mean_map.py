"""MeanMapClassifier: the estimated class means, the reduction to logistic
regression, learning on real data, and scikit-learn citizenship."""

import warnings

import numpy as np
import pytest
from scipy.special import expit
from sklearn.compose import make_column_selector, make_column_transformer
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score, roc_auc_score
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_llp.bags import (
    FeatureBagGenerator,
    KMeansBagGenerator,
    UniformBagGenerator,
)
from sklearn_llp.datasets import load_adult
from sklearn_llp.linear import MeanMapClassifier
from sklearn_llp.metrics import make_bag_scorer
from sklearn_llp.model_selection import BagKFold

# --- a problem small enough to solve by hand
# Three bags of sizes 2, 2, 4 with positive fractions 0, 1/2, 3/4; feature 0
# has bag means 1, 3, 5, feature 1 is constant.
HAND_X = np.c_[[0.0, 2, 2, 4, 4, 4, 6, 6], np.ones(8)]
HAND_BAGS = np.array([0, 0, 1, 1, 2, 2, 2, 2])
HAND_FRACTION = np.array([0, 0, 0.5, 0.5, 0.75, 0.75, 0.75, 0.75])


def _ridge_means(alpha):
    """(Pi' Pi / 3 + alpha I) d = Pi' (m - 3) / 3, d the deviation from 3."""
    props = np.array([[1, 0], [0.5, 0.5], [0.25, 0.75]])
    gram = props.T @ props / 3 + alpha * np.eye(2)
    return 3.0 + np.linalg.solve(gram, props.T @ (np.array([1.0, 3.0, 5.0]) - 3) / 3)


@pytest.mark.parametrize(
    "bag_weights, alpha, expected",
    [
        # uniform: Pi'Pi = [[21/16, 7/16], [7/16, 13/16]] (det 7/8),
        # Pi'm = [15/4, 21/4]  =>  mu = [6/7, 6]
        ("uniform", 0.0, [6 / 7, 6.0]),
        # size (1/4, 1/4, 1/2): Pi'Omega Pi = [[11/32, 5/32], [5/32, 11/32]]
        # (det 3/32), Pi'Omega m = [5/4, 9/4]  =>  mu = [5/6, 37/6]
        ("size", 0.0, [5 / 6, 37 / 6]),
        # the ridge pulls the class means towards the mean of the bags, 3
        ("uniform", 1.0, _ridge_means(1.0)),
        ("uniform", 1e9, _ridge_means(1e9)),
    ],
)
def test_class_means_are_the_least_squares_solution_by_hand(
    bag_weights, alpha, expected
):
    clf = MeanMapClassifier(mean_alpha=alpha, bag_weights=bag_weights)
    clf.fit(HAND_X, HAND_BAGS, HAND_FRACTION)
    np.testing.assert_allclose(clf.class_means_[:, 0], expected, rtol=1e-12)
    if alpha > 1e6:
        np.testing.assert_allclose(clf.class_means_[:, 0], [3.0, 3.0])
    # a constant feature: every class mean is that constant (rows sum to 1)
    np.testing.assert_allclose(clf.class_means_[:, 1], [1.0, 1.0], rtol=1e-12)
    # (2 * [1, 0] + 2 * [1/2, 1/2] + 4 * [1/4, 3/4]) / 8
    np.testing.assert_allclose(clf.class_prior_, [0.5, 0.5])


def test_laplacian_class_means_solve_the_smoothed_least_squares_by_hand():
    """The Laplacian Mean Map against its objective, written out as one
    stacked least-squares problem and solved densely (independent of the
    sparse normal equations of the package)."""
    lam, alpha = 0.5, 0.1
    clf = MeanMapClassifier(laplacian=lam, mean_alpha=alpha, bag_weights="size")
    clf.fit(HAND_X, HAND_BAGS, HAND_FRACTION)
    props = np.array([[1, 0], [0.5, 0.5], [0.25, 0.75]])
    means = np.array([[1.0, 1.0], [3.0, 1.0], [5.0, 1.0]])
    sizes = np.array([2.0, 2.0, 4.0])
    w = sizes / sizes.sum()
    center = w @ means
    # graph: every bag links the other two (2 neighbours); squared distances
    # of the bag means 4, 4, 16, median 4: weights e^-1, e^-1, e^-4
    v = {(0, 1): np.exp(-1.0), (1, 2): np.exp(-1.0), (0, 2): np.exp(-4.0)}
    rows, targets = [], []
    for j in range(3):  # sqrt(w_j) (m_j - sum_k pi_jk mu_jk)
        row = np.zeros(6)
        row[2 * j : 2 * j + 2] = props[j]
        rows.append(np.sqrt(w[j]) * row)
        targets.append(np.sqrt(w[j]) * means[j])
    for (j, i), weight in v.items():  # (lam / 3) v_ji ||mu_jk - mu_ik||^2
        for k in range(2):
            row = np.zeros(6)
            row[2 * j + k], row[2 * i + k] = 1.0, -1.0
            rows.append(np.sqrt(lam / 3 * weight) * row)
            targets.append(np.zeros(2))
    for unknown in range(6):  # (alpha / 3) ||mu_jk - center||^2
        row = np.zeros(6)
        row[unknown] = 1.0
        rows.append(np.sqrt(alpha / 3) * row)
        targets.append(np.sqrt(alpha / 3) * center)
    per_bag = np.linalg.lstsq(np.array(rows), np.array(targets), rcond=None)[0]
    per_bag = per_bag.reshape(3, 2, 2)  # (bag, class, feature)
    totals = sizes @ props
    expected = np.einsum("j,jk,jkd->kd", sizes, props, per_bag) / totals[:, None]
    np.testing.assert_allclose(clf.class_means_, expected, rtol=1e-10)
    # the constant feature stays exactly constant
    np.testing.assert_allclose(clf.class_means_[:, 1], [1.0, 1.0], rtol=1e-12)


def test_laplacian_zero_is_mean_map_and_a_large_one_tends_to_it(small_bags):
    X, bags, props, _ = small_bags
    mean_map = MeanMapClassifier().fit(X, bags, props)
    zero = MeanMapClassifier(laplacian=0.0).fit(X, bags, props)
    np.testing.assert_array_equal(zero.coef_, mean_map.coef_)
    # a connected graph and a huge smoothing: one mean per class again
    large = MeanMapClassifier(laplacian=1e8, n_neighbors=50).fit(X, bags, props)
    np.testing.assert_allclose(large.class_means_, mean_map.class_means_, atol=1e-5)
    small = MeanMapClassifier(laplacian=1e-2).fit(X, bags, props)
    assert not np.allclose(small.class_means_, mean_map.class_means_, atol=1e-3)


@pytest.mark.slow
def test_laplacian_mean_map_helps_on_adult_kmeans_bags(adult):
    """K-means bags: the Laplacian variant lets class means drift between
    bags (measured: hard L1 0.261 vs 0.272, AUC 0.890 vs 0.885)."""
    X_train, X_test, y_train, y_test = adult
    preprocessor = _adult_pipeline()[:-1]
    preprocessor.set_params(columntransformer__sparse_threshold=0)
    A = preprocessor.fit_transform(X_train)
    B = preprocessor.transform(X_test)
    generator = KMeansBagGenerator(len(A) // 64, n_components=32, random_state=0)
    bags, props = generator.make_bags(A, y_train)
    scorer = make_bag_scorer("hard_l1", bags=bags, props=props)
    results = {}
    for laplacian in (0.0, 0.01):
        clf = MeanMapClassifier(laplacian=laplacian, classes=generator.classes_)
        held_out = GridSearchCV(clf, {}, scoring=scorer, cv=BagKFold(3))
        held_out.fit(A, bags, props=props)
        clf.fit(A, bags, props)
        auc = roc_auc_score(y_test == ">50K", clf.predict_proba(B)[:, 1])
        accuracy = accuracy_score(y_test, clf.predict(B))
        results[laplacian] = (-held_out.best_score_, auc, accuracy)
    (l1_mm, auc_mm, acc_mm), (l1_lmm, auc_lmm, acc_lmm) = results.values()
    assert l1_lmm < l1_mm - 0.005, results  # chosen without test labels
    assert auc_lmm > auc_mm + 0.002, results
    assert acc_lmm > acc_mm + 0.003, results


def test_fit_is_the_stationary_point_of_the_plugged_in_objective():
    # 0.5||w||^2 + C (sum_i log(1 + e^{z_i}) - w'S_1 - b T_1): the gradient
    # vanishes at the fit, with S_1 = T_1 mu_1 and T_1 = sum_j N_j pi_j1
    C = 0.5
    clf = MeanMapClassifier(C=C, mean_alpha=0.0, tol=1e-12, max_iter=10_000)
    clf.fit(HAND_X, HAND_BAGS, HAND_FRACTION)
    p = expit(HAND_X @ clf.coef_[0] + clf.intercept_[0])
    total_1 = 4.0  # 2 * 0 + 2 * 1/2 + 4 * 3/4
    np.testing.assert_allclose(p.sum(), total_1, atol=1e-8)
    grad = clf.coef_[0] / C + HAND_X.T @ p - total_1 * clf.class_means_[1]
    np.testing.assert_allclose(grad, 0.0, atol=1e-7)


# --- reduction to logistic regression
# MeanMapClassifier on labels and LogisticRegression minimise the same objective
# (L-BFGS-B, same options) and stop a few 1e-14 above its minimum, where depends on
# the rounding of the sums (BLAS, threads, row order). Against a Newton optimum
# (12 row orders x 1, 2 threads, every fit here) each fit stayed within 1.6e-6
# (parameters, probabilities), 1.1e-5 (logits): two fits, within twice that.
ATOL_PARAMS = 2 * 1.6e-6
ATOL_LOGITS = 2 * 1.1e-5


def _breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _assert_same_model(ours, theirs, X):
    np.testing.assert_array_equal(ours.classes_, theirs.classes_)
    for ours_value, theirs_value, atol in [
        (ours.coef_, theirs.coef_, ATOL_PARAMS),
        (ours.intercept_, theirs.intercept_, ATOL_PARAMS),
        (ours.predict_proba(X), theirs.predict_proba(X), ATOL_PARAMS),
        (ours.predict_log_proba(X), theirs.predict_log_proba(X), ATOL_LOGITS),
        (ours.decision_function(X), theirs.decision_function(X), ATOL_LOGITS),
    ]:
        np.testing.assert_allclose(ours_value, theirs_value, atol=atol)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("C", [0.01, 1.0])
@pytest.mark.slow
def test_labels_give_logistic_regression_binary(C, fit_intercept):
    X, y = _breast_cancer()
    weights = np.random.RandomState(0).uniform(0, 2, len(y))
    common = dict(C=C, fit_intercept=fit_intercept, tol=1e-10, max_iter=10_000)
    ours = MeanMapClassifier(**common).fit(X, y, sample_weight=weights)
    theirs = LogisticRegression(**common).fit(X, y, sample_weight=weights)
    _assert_same_model(ours, theirs, X)


@pytest.mark.slow
def test_labels_give_logistic_regression_multiclass(digits_bags):
    X, _, _, y, X_test, _ = digits_bags
    common = dict(C=0.05, tol=1e-10, max_iter=10_000)
    ours = MeanMapClassifier(**common).fit(X, y)
    theirs = LogisticRegression(**common).fit(X, y)
    _assert_same_model(ours, theirs, X_test)


# --- learning from bags on real data
@pytest.mark.slow
def test_learns_digits_from_random_bags_of_16(digits_bags):
    X_train, bags, props, _, X_test, y_test = digits_bags
    # measured: 0.837 with the default C=1e-3, 0.750 with C=0.01, 0.657
    # with C=1; logistic regression on the labels 0.961, DLLP 0.970, chance 0.1
    default = MeanMapClassifier().fit(X_train, bags, props)
    assert accuracy_score(y_test, default.predict(X_test)) >= 0.79
    weak = MeanMapClassifier(C=0.01).fit(X_train, bags, props)
    assert accuracy_score(y_test, weak.predict(X_test)) >= 0.70
    assert default.classes_.tolist() == list(range(10))
    assert default.coef_.shape == (10, 64)


@pytest.fixture(scope="module")
def adult():
    X, y = load_adult(return_X_y=True)
    y = y.astype(str).to_numpy()
    return train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)


def _adult_pipeline(**params):
    onehot = OneHotEncoder(handle_unknown="ignore", min_frequency=20)
    preprocessor = make_column_transformer(
        (onehot, make_column_selector(dtype_include="category")),
        (StandardScaler(), make_column_selector(dtype_include="number")),
    )
    return make_pipeline(preprocessor, MeanMapClassifier(**params))


@pytest.mark.parametrize(
    "bagging, expected",
    [
        # measured 0.834 / 0.568 / 0.889 (533 bags); majority class 0.761 / 0 /
        # 0.5, logistic regression on the labels 0.855 / 0.666 / 0.909
        ("uniform", (0.80, 0.45, 0.85)),
        # measured 0.808 / 0.597 / 0.854 (189 groups)
        ("census", (0.78, 0.50, 0.83)),
    ],
)
@pytest.mark.slow
def test_learns_adult_income_from_bags(adult, bagging, expected):
    X_train, X_test, y_train, y_test = adult
    if bagging == "uniform":
        generator = UniformBagGenerator(64, random_state=0)
    else:
        generator = FeatureBagGenerator(["age", "sex", "education"], n_bins={"age": 6})
    bags, props = generator.make_bags(X_train, y_train)
    keep = bags >= 0  # the last, incomplete random bag is left out
    model = _adult_pipeline(classes=generator.classes_).fit(
        X_train[keep], bags[keep], meanmapclassifier__props=props[keep]
    )
    positive = y_test == ">50K"
    proba = model.predict_proba(X_test)[:, list(model.classes_).index(">50K")]
    pred = model.predict(X_test) == ">50K"
    measured = accuracy_score(positive, pred), f1_score(positive, pred)
    measured += (roc_auc_score(positive, proba),)
    assert np.all(np.array(measured) >= expected), measured
    if bagging == "census":
        # 1 - hard L1 / 2 on the training groups: measured 0.871, predicting
        # "<=50K" for everyone 0.820
        features = model[:-1].transform(X_train)
        assert model[-1].score(features, bags, props) >= 0.85


# --- scikit-learn citizenship (its common checks: test_estimator_checks.py)
def test_a_class_absent_from_every_bag_is_never_predicted(small_bags):
    X, bags, props, _ = small_bags
    clf = MeanMapClassifier(classes=["a", "b", "c", "d"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # converges: its intercept stops near -10
        clf.fit(X, bags, np.c_[props, np.zeros(120)])
    assert clf.class_prior_[3] == 0
    assert clf.predict_proba(X)[:, 3].max() < 1e-3
    assert "d" not in clf.predict(X)


@pytest.mark.parametrize(
    "params",
    [{"C": 0}, {"mean_alpha": -1}, {"bag_weights": "bags"}, {"max_iter": -1}]
    + [{"laplacian": -1.0}, {"n_neighbors": 0}],
)
def test_bad_parameters_are_refused_in_fit(small_bags, params):
    X, bags, props, _ = small_bags
    clf = MeanMapClassifier(**params)  # __init__ only stores them
    with pytest.raises(InvalidParameterError):
        clf.fit(X, bags, props)


def test_overlapping_bags_count_every_row_once(small_bags):
    X, bags, props, _ = small_bags
    disjoint = MeanMapClassifier(tol=1e-10).fit(X, bags, props)
    # every bag given twice, as lists of row indices: the same information
    lists = [np.flatnonzero(bags == b) for b in range(12)] * 2
    table = np.concatenate([props[::10], props[::10]])
    twice = MeanMapClassifier(tol=1e-10).fit(X, lists, table)
    np.testing.assert_allclose(twice.class_prior_, disjoint.class_prior_)
    np.testing.assert_allclose(twice.class_means_, disjoint.class_means_)
    np.testing.assert_allclose(twice.coef_, disjoint.coef_, atol=1e-8)
    # rows in no bag are left out: the fit on the bagged rows alone
    some = lists[:6]
    partial = MeanMapClassifier(tol=1e-10).fit(X, some, props[:60:10])
    alone = MeanMapClassifier(tol=1e-10).fit(X[:60], bags[:60], props[:60])
    np.testing.assert_allclose(partial.coef_, alone.coef_, atol=1e-8)


def test_too_few_iterations_warn():
    X, y = _breast_cancer()
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        MeanMapClassifier(C=100.0, max_iter=2).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        MeanMapClassifier().fit(X, y)
