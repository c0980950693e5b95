"""``MeanMapClassifier``: logistic regression on an estimated mean operator."""

import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy import linalg, optimize
from scipy.special import expit, logsumexp, softmax
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import (
    Interval,
    StrOptions,
    validate_parameter_constraints,
)
from sklearn.utils.validation import check_is_fitted, validate_data

from ..core import (
    LLPClassifierMixin,
    check_fit_inputs,
    refuse_sklearn_cross_val_predict,
    restore_on_error,
)


# ----------------------------------------------------------------------
# sufficient statistics
# ----------------------------------------------------------------------
class _Statistics:
    """What the logistic fit needs: the rows and their weights, the class
    totals ``T`` and the class means ``mu`` (so that ``S = T mu``)."""

    def __init__(self, rows, weights, classes, totals, means, on_labels):
        self.rows = rows  # rows of X in the fit; None for all of them
        self.weights = weights  # weight of every row in the fit
        self.classes = classes
        self.totals = totals  # (n_classes,) total weight of every class
        self.means = means  # (n_classes, n_features) class means
        self.on_labels = on_labels


def _dense(matrix):
    return matrix.toarray() if sp.issparse(matrix) else np.asarray(matrix)


def class_means_from_bags(bag_means, props, bag_weights, alpha):
    """Class-conditional means that best explain the bag means.

    Solves ``min_mu sum_j w_j ||m_j - sum_k props[j, k] mu_k||^2 +
    alpha sum_k ||mu_k - m||^2`` with ``w`` the bag weights normalised to sum
    to 1 and ``m = sum_j w_j m_j`` their weighted mean: a ``(n_classes,
    n_classes)`` linear system. With ``alpha=0`` it is plain least squares
    (the minimum-norm deviation from ``m`` if the proportions do not
    determine the means).

    Parameters
    ----------
    bag_means : ndarray of shape (n_bags, n_features)
    props : ndarray of shape (n_bags, n_classes)
    bag_weights : ndarray of shape (n_bags,)
    alpha : float

    Returns
    -------
    means : ndarray of shape (n_classes, n_features)
    """
    weights = bag_weights / bag_weights.sum()
    center = weights @ bag_means
    deviations = bag_means - center
    if alpha > 0:
        gram = props.T @ (weights[:, None] * props)
        gram[np.diag_indices_from(gram)] += alpha
        rhs = props.T @ (weights[:, None] * deviations)
        return center + linalg.solve(gram, rhs, assume_a="pos")
    root = np.sqrt(weights)[:, None]
    return center + np.linalg.lstsq(root * props, root * deviations, rcond=None)[0]


def bag_graph(bag_means, n_neighbors):
    """Symmetric k-nearest-neighbour graph of the bags, Gaussian weights.

    Two bags are linked when either is among the other's ``n_neighbors``
    nearest by the distance of their feature means; the weight is
    ``exp(-d^2 / h)`` with ``h`` the median squared distance of the links.

    Returns
    -------
    laplacian : sparse matrix of shape (n_bags, n_bags)
        ``D - V``, divided by ``n_bags`` so that its penalty is on the scale
        of the least squares, whose bag weights sum to 1.
    """
    from sklearn.neighbors import NearestNeighbors

    n_bags = len(bag_means)
    k = min(n_neighbors, n_bags - 1)
    distances, neighbors = (
        NearestNeighbors(n_neighbors=k + 1).fit(bag_means).kneighbors(bag_means)
    )
    squared = distances[:, 1:] ** 2  # column 0 is the bag itself
    bandwidth = max(float(np.median(squared)), np.finfo(np.float64).tiny)
    links = sp.csr_matrix(
        (
            np.exp(-squared / bandwidth).ravel(),
            (np.repeat(np.arange(n_bags), k), neighbors[:, 1:].ravel()),
        ),
        shape=(n_bags, n_bags),
    )
    links = links.maximum(links.T)
    degrees = np.asarray(links.sum(axis=1)).ravel()
    return (sp.diags(degrees) - links) / n_bags


def bag_class_means_laplacian(
    bag_means, props, bag_weights, alpha, laplacian, n_neighbors
):
    """Class means of every bag, smoothed over a graph of similar bags.

    The Laplacian Mean Map (Patrini et al. 2014): instead of one mean per
    class shared by all bags, bag ``j`` has its own class means
    ``mu_jk``, which must mix to its feature mean and vary little between
    similar bags:

    ``min sum_j w_j ||m_j - sum_k props[j, k] mu_jk||^2
    + laplacian sum_k tr(mu_k^T L mu_k) + alpha / n_bags sum_jk ||mu_jk - m||^2``

    with ``L`` from :func:`bag_graph` (the ridge divided by the number of
    bags, so that shared means get that of :func:`class_means_from_bags`):
    a sparse square system of ``n_bags * n_classes`` unknowns, factorised
    once for all features. As ``laplacian``
    grows (on a connected graph) it returns the shared means of
    :func:`class_means_from_bags`.

    Returns
    -------
    means : ndarray of shape (n_bags, n_classes, n_features)
    """
    from scipy.sparse.linalg import splu

    n_bags, n_classes = props.shape
    weights = bag_weights / bag_weights.sum()
    center = weights @ bag_means
    # unknowns ordered bag-major (row j * n_classes + k): the data term is
    # block diagonal, the smoothing term is L kron I
    rows = np.repeat(np.arange(n_bags * n_classes), n_classes)
    cols = (np.arange(n_bags)[:, None] * n_classes + np.arange(n_classes)).repeat(
        n_classes, axis=0
    )
    blocks = weights[:, None, None] * props[:, :, None] * props[:, None, :]
    data = sp.csr_matrix(
        (blocks.ravel(), (rows, cols.ravel())),
        shape=(n_bags * n_classes,) * 2,
    )
    system = (
        data
        + laplacian * sp.kron(bag_graph(bag_means, n_neighbors), sp.eye(n_classes))
        + alpha / n_bags * sp.eye(n_bags * n_classes)
    )
    rhs = (weights[:, None] * props)[:, :, None] * (bag_means - center)[:, None, :]
    solved = splu(sp.csc_matrix(system)).solve(rhs.reshape(n_bags * n_classes, -1))
    return center + solved.reshape(n_bags, n_classes, -1)


def _row_weights(bags):
    return np.ones(bags.n_samples) if bags.weights is None else bags.weights


def _fitted_rows(bags):
    """Rows of X in some bag (None for all of them) and their weights; rows
    of weight 0 are in no bag."""
    rows = np.flatnonzero(np.bincount(bags.members, minlength=bags.n_samples))
    if len(rows) == bags.n_samples:
        return None, _row_weights(bags)
    return rows, _row_weights(bags)[rows]


def _label_statistics(X, bags):
    """Supervised data (every row its own bag, one-hot proportions from
    :func:`~sklearn_llp.core.check_fit_inputs`): the exact class totals and
    means of the labelled rows."""
    n_samples = X.shape[0]
    n_classes = len(bags.classes)
    codes = np.argmax(bags.props, axis=1)  # bag j is row bags.members[j]
    weights = _row_weights(bags)[bags.members]
    totals = np.bincount(codes, weights=weights, minlength=n_classes)
    if np.count_nonzero(totals) < 2:
        raise ValueError(
            "y holds only one class (among the rows of positive sample_weight); "
            "at least 2 classes are needed."
        )
    weighted = sp.csr_matrix(
        (weights, (codes, bags.members)), shape=(n_classes, n_samples)
    )
    sums = _dense(weighted @ X)
    means = sums / np.maximum(totals, np.finfo(np.float64).tiny)[:, None]
    rows, weights = _fitted_rows(bags)
    return _Statistics(rows, weights, bags.classes, totals, means, on_labels=True)


def _bag_statistics(X, bags, bag_weights, alpha, laplacian, n_neighbors):
    """Bags and proportions (validated by
    :func:`~sklearn_llp.core.check_fit_inputs`): class totals from the
    proportions, class means estimated from the bag means (the Mean Map)."""
    n_samples = X.shape[0]
    pair_weights = _row_weights(bags)[bags.members]
    # (n_bags, n_samples) matrix of the members' weights: bag sums in one product
    membership = sp.csr_matrix(
        (pair_weights, bags.members, bags.indptr), shape=(bags.n_bags, n_samples)
    )
    bag_totals = bags.total_weights()
    bag_means = _dense(membership @ X) / bag_totals[:, None]
    # a row in several bags counts once in the class totals, with the mean
    # of its bags' proportions
    times_bagged = np.bincount(bags.members, minlength=n_samples)
    share = pair_weights / times_bagged[bags.members]
    bag_shares = np.bincount(bags.pair_bags, weights=share, minlength=bags.n_bags)
    totals = bag_shares @ bags.props
    if np.count_nonzero(totals > 0) < 2:
        raise ValueError(
            "props give a positive proportion to only one class "
            f"({bags.classes.tolist()[int(np.argmax(totals))]!r}); at least 2 "
            "classes are needed."
        )
    weights_of_bags = bag_totals if bag_weights == "size" else np.ones(bags.n_bags)
    if laplacian > 0:
        per_bag = bag_class_means_laplacian(
            bag_means, bags.props, weights_of_bags, alpha, laplacian, n_neighbors
        )
        # S_k = sum_j N_j props[j, k] mu_jk, and means = S / T
        sums = np.einsum("j,jk,jkd->kd", bag_shares, bags.props, per_bag)
        means = sums / np.maximum(totals, np.finfo(np.float64).tiny)[:, None]
    else:
        means = class_means_from_bags(bag_means, bags.props, weights_of_bags, alpha)
    rows, weights = _fitted_rows(bags)
    return _Statistics(rows, weights, bags.classes, totals, means, on_labels=False)


# ----------------------------------------------------------------------
# the convex fit
# ----------------------------------------------------------------------
def _fit_logistic(X, stats, C, fit_intercept, tol, max_iter):
    """Minimise ``0.5 ||W||^2 + C (sum_i s_i A(x_i) - <W, S> - <b, T>)``.

    Scaled by ``1 / sum_i s_i`` as scikit-learn's LogisticRegression is, so
    that ``tol`` means the same. Two classes use one weight vector (class 0
    is the reference, as in LogisticRegression), more use one per class.
    """
    n_classes, n_features = stats.means.shape
    total = stats.weights.sum()
    weights = stats.weights / total
    targets = stats.totals[:, None] * stats.means / total  # the mean operator
    priors = stats.totals / total
    binary = n_classes == 2
    if binary:
        # class 1's statistic, symmetrised: with smoothed class means the two
        # statistics need not add up to the feature total, and the model
        # must not depend on which class is first (exact statistics: as is)
        total_x = _dense(X.T @ weights).ravel() if sp.issparse(X) else weights @ X
        targets = 0.5 * (targets[1] + total_x - targets[0])[None, :]
        priors = priors[1:]
    n_outputs = targets.shape[0]
    n_coef = n_outputs * n_features
    penalty = 1.0 / (C * total)

    # logits as (n_outputs, n_samples): reductions over the classes are then
    # element-wise operations between rows, not short strided reductions
    if sp.issparse(X):
        X_T = X.T.tocsr()

        def forward(coef):
            return np.ascontiguousarray(_dense(X @ coef.T).T)

        def backward(residual):
            return _dense(X_T @ residual.T).T

    else:

        def forward(coef):
            return coef @ X.T

        def backward(residual):
            return residual @ X

    def objective(theta):
        coef = theta[:n_coef].reshape(n_outputs, n_features)
        intercept = theta[n_coef:] if fit_intercept else np.zeros(n_outputs)
        logits = forward(coef)
        logits += intercept[:, None]
        if binary:
            log_partition = np.logaddexp(0.0, logits[0])
            proba = expit(logits, out=logits)
        else:  # a stable log-sum-exp, in place (no copy of the logits)
            top = logits.max(axis=0)
            logits -= top
            proba = np.exp(logits, out=logits)
            norm = proba.sum(axis=0)
            proba /= norm
            log_partition = np.log(norm) + top
        value = (
            log_partition @ weights
            - np.vdot(coef, targets)
            - intercept @ priors
            + 0.5 * penalty * np.vdot(coef, coef)
        )
        residual = np.multiply(proba, weights, out=proba)
        grad = [(backward(residual) - targets + penalty * coef).ravel()]
        if fit_intercept:
            grad.append(residual.sum(axis=1) - priors)
        return value, np.concatenate(grad)

    start = np.zeros(n_coef + (n_outputs if fit_intercept else 0))
    result = optimize.minimize(
        objective,
        start,
        jac=True,
        method="L-BFGS-B",
        options={
            "maxiter": max_iter,
            "maxls": 50,
            "gtol": tol,
            "ftol": 64 * np.finfo(np.float64).eps,
        },
    )
    if result.status != 0:
        warnings.warn(
            f"L-BFGS did not converge in {result.nit} iterations "
            f"({result.message}). Increase max_iter, or decrease C (a stronger "
            "penalty); standardised features also help.",
            ConvergenceWarning,
            stacklevel=3,
        )
    coef = result.x[:n_coef].reshape(n_outputs, n_features)
    intercept = result.x[n_coef:] if fit_intercept else np.zeros(n_outputs)
    return coef, intercept, int(result.nit)


class MeanMapClassifier(LLPClassifierMixin, BaseEstimator):
    r"""Linear classifier learned from bags by Mean Map (mean operator).

    Logistic regression needs the labels only through a sufficient statistic,
    the *mean operator* ``sum_i x_i e_{y_i}`` (the feature sums of every
    class). Mean Map estimates it from the bags: assuming that a class looks
    alike in every bag, each bag's feature mean is a mixture of the class
    means in the bag's proportions, so the class means follow from the bag
    means by least squares. The logistic loss is then minimised with L-BFGS.
    A fit costs one pass over the data for the bag means (a sparse matrix
    product) plus one matrix-vector product per L-BFGS step: seconds for
    millions of rows. Two classes or more; dense or sparse ``X``.

    ``fit(X, bags, props)`` takes one bag id per row and the bags'
    proportions, like :class:`~sklearn_llp.LLPClassifier`; ``fit(X, y)``
    (``props=None``) is ordinary supervised learning, exactly
    :class:`~sklearn.linear_model.LogisticRegression` with the same ``C``.

    Parameters
    ----------
    C : float, default=1e-3
        Inverse strength of the L2 penalty on the weights, as in
        :class:`~sklearn.linear_model.LogisticRegression` (the penalty
        ``0.5 ||W||^2`` against ``C`` times the summed loss), whose default
        is 1.0. The estimated class means are noisy, and a much stronger
        penalty than for labelled data pays: on digits in random bags of 16,
        83.7 % test accuracy with 1e-3 against 75.0 % with 0.01 and 65.7 %
        with 1.0; on Adult in random bags of 64, 0.889 ROC AUC against 0.882
        and 0.837. Tune it on held-out bags (see Examples).
    mean_alpha : float, default=1e-4
        Ridge penalty of the class-mean least squares, which pulls every
        class mean towards the overall mean of the bags (the bag weights
        sum to 1, so ``mean_alpha`` is relative to squared feature units).
        It makes the system solvable when the proportions cannot tell some
        classes apart (e.g. fewer bags than classes). 0 is plain least
        squares.
    bag_weights : {"size", "uniform"}, default="size"
        Weight of every bag in the least squares: its total sample weight
        (its size without ``sample_weight``; the mean of a large bag is the
        more precise) or 1 for every bag (the original method).
    laplacian : float, default=0.0
        Smoothing of the Laplacian Mean Map (Patrini et al. 2014): with a
        positive value every bag gets its own class means, which must mix to
        its feature mean and differ little between bags with similar means
        (a graph of ``n_neighbors`` nearest bags); 0 is Mean Map, one mean
        per class shared by all bags. It helps where bags group similar rows
        (K-means bags of Adult: accuracy 83.6 % against 82.6 %, F1 65.4
        against 63.2, with the value chosen on held-out bags from 0.003,
        0.01, 0.1) and not in random bags, where Mean Map's assumption holds
        (Adult, random bags of 256: 80.2 % against 81.7 %). Choose it on
        held-out bags with ``hard_l1_scorer`` and ``BagKFold``, 0 included.
    n_neighbors : int, default=10
        Neighbours of a bag in the graph of the Laplacian Mean Map (by the
        distance of bag means; links are made symmetric); unused when
        ``laplacian=0``.
    classes : array-like of shape (n_classes,), default=None
        Class labels in the column order of ``props``; default: the columns
        of a per-bag table, else ``0..n_classes-1``. With ``props=None``,
        every label of ``y`` must be in it.
    threshold : {"auto", "prior", "argmax"} or float, default="auto"
        How ``predict`` labels rows, as in :class:`sklearn_llp.LLPClassifier`:
        ``"auto"`` matches the predicted class rates of the training rows to
        the bags' class rates for two classes fitted on bags (prior
        matching), else takes the most probable class. ``"prior"``: two
        classes, the cut point among the training probabilities whose
        (weighted) positive rate is closest to the bags' (the lower of two
        equally close); more, the transport offsets whose rates equal the
        bags' within ties. ``"argmax"``: the most probable class (two
        classes: the threshold 0.5). A float in (0, 1): ``proba[:, 1] >=
        threshold`` (two classes).
    fit_intercept : bool, default=True
        Fit an unpenalised intercept per class.
    tol : float, default=1e-4
        L-BFGS stops when the largest gradient entry of the objective (divided
        by the total sample weight) falls below ``tol``.
    max_iter : int, default=500
        Most L-BFGS iterations; a :class:`~sklearn.exceptions.ConvergenceWarning`
        says when they did not suffice.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels, from ``props`` or ``classes`` (never from the bag ids),
        or from ``y`` when fitted on labels.
    decision_offsets_ : ndarray of shape (n_classes,)
        Log-probability offsets of the decision rule (zeros for argmax): with
        more than two classes ``predict`` is exactly ``classes_[np.argmax(
        np.log(proba) + decision_offsets_, axis=1)]``, the first maximum on
        ties. With two classes ``[0, -logit(threshold_)]``, for information.
    threshold_ : float or None
        With two classes, the probability of ``classes_[1]`` from which
        ``predict`` says ``classes_[1]``: ``predict`` is exactly
        ``classes_[(proba[:, 1] >= threshold_).astype(int)]`` (0.5 for
        argmax; the prior-matched one is a training probability). Usable in
        ``sklearn.model_selection.FixedThresholdClassifier``. None otherwise.
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Weights; one row (for ``classes_[1]``) with two classes.
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Intercepts, 0 if ``fit_intercept=False``.
    class_means_ : ndarray of shape (n_classes, n_features)
        The estimated class-conditional feature means (exact when fitted on
        labels).
    class_prior_ : ndarray of shape (n_classes,)
        Share of every class in the (weighted) training rows, from the
        proportions.
    n_iter_ : ndarray of shape (1,)
        L-BFGS iterations run.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names of a DataFrame ``X``.

    See Also
    --------
    sklearn_llp.LLPClassifier : Neural networks trained on the proportion
        loss; more accurate, slower.
    sklearn.linear_model.LogisticRegression : The supervised model.

    Notes
    -----
    **Model and sufficient statistics.** With rows :math:`x_i` of weight
    :math:`s_i`, classes :math:`k = 1..K`, weights :math:`W = (w_k)` and
    intercepts :math:`b`, the model is :math:`p(k \mid x) \propto \exp(w_k^\top
    x + b_k)` (for two classes :math:`w_0 = 0, b_0 = 0`) and the weighted
    negative log-likelihood of labelled data is

    .. math::

        \ell(W, b) = \sum_i s_i \log \sum_k e^{w_k^\top x_i + b_k}
                     - \sum_k \left(w_k^\top S_k + b_k T_k\right),
        \quad S_k = \sum_{i: y_i = k} s_i x_i, \quad T_k = \sum_{i: y_i = k} s_i.

    The first term (the log-partition function) needs no label; the labels
    enter only through the linear term, i.e. through the mean operator
    :math:`\mu = \frac{1}{n}\sum_i \phi(x_i, y_i)` with
    :math:`\phi(x, y) = x \otimes e_y` (Quadrianto et al., 2009, Sec. 3;
    Patrini et al., 2014, Sec. 3, show that it is sufficient for every
    "linear-odd" loss, the logistic loss among them). The classifier
    minimises :math:`\tfrac12 \|W\|_F^2 + C\,\ell(W, b)` (intercepts
    unpenalised), as LogisticRegression does, with L-BFGS; the objective is
    convex.

    **Estimating the mean operator** (Quadrianto et al., 2009, Sec. 4). Bag
    :math:`j` has total weight :math:`N_j`, feature mean :math:`m_j` and
    proportions :math:`\pi_j`. If the class-conditional distribution of
    :math:`x` is the same in every bag, the bag means are mixtures of the
    class means :math:`\mu_k`:
    :math:`m_j = \sum_k \pi_{jk} \mu_k`, one linear equation per bag, which
    least squares solves:

    .. math::

        \hat\mu = \arg\min_{\mu} \sum_j \omega_j \Big\| m_j - \sum_k
        \pi_{jk} \mu_k \Big\|^2 + \alpha \sum_k \|\mu_k - \bar m\|^2
        = \bar m + (\Pi^\top \Omega \Pi + \alpha I)^{-1}
        \Pi^\top \Omega (M - \mathbf{1} \bar m^\top),

    with :math:`\omega_j \propto N_j` (``bag_weights="size"``) or
    :math:`\omega_j \propto 1` (the paper's unweighted system), normalised to
    sum to 1, :math:`\bar m = \sum_j \omega_j m_j` and :math:`\alpha` =
    ``mean_alpha`` (the paper solves it with :math:`\alpha = 0`; the ridge
    towards :math:`\bar m` is ours). Then :math:`T_k = \sum_j N_j \pi_{jk}`
    (exact) and :math:`\hat S_k = T_k \hat\mu_k` replace the labelled
    statistics in :math:`\ell`. A row in several (overlapping) bags counts
    once in :math:`T`, with the mean of its bags' proportions; rows in no
    bag are left out.

    With labels (``props=None``) :math:`S` and :math:`T` are computed from
    them, so the fit is LogisticRegression's. Bags of one row with one-hot
    proportions give the same statistics up to the ridge.

    The estimate is only as good as the least squares is conditioned: it
    needs the proportions to vary across bags (bags grouped by a feature
    related to the label, or small bags) and degrades when every bag holds
    about the overall class mix (large random bags), where a small ``C``
    limits the damage. If a class looks different in different bags (bags
    defined by the features themselves), the estimate is biased, and the
    estimated statistics may be ones that no labelling of the rows produces
    (e.g. a class mean of a one-hot column outside [0, 1]); the
    log-likelihood then has no finite maximiser, the weights grow in
    proportion to ``C`` and the probabilities saturate at 0 and 1 while the
    ranking (``decision_function``) stays the same. A small ``C`` keeps
    them usable. :class:`~sklearn_llp.LLPClassifier` makes neither
    assumption.

    References
    ----------
    .. [1] N. Quadrianto, A. J. Smola, T. S. Caetano and Q. V. Le,
       "Estimating Labels from Label Proportions", JMLR 10:2349-2374, 2009
       (ICML 2008).
    .. [2] G. Patrini, R. Nock, P. Rivera and T. Caetano, "(Almost) No Label
       No Cry", NIPS 2014.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn_llp.linear import MeanMapClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> bags = np.argsort(np.argsort(X[:, 0])) // 25  # 23 bags along feature 0
    >>> props = np.bincount(bags, weights=y)[bags] / np.bincount(bags)[bags]
    >>> clf = MeanMapClassifier().fit(X, bags, props)  # positive fractions
    >>> clf.classes_.tolist(), clf.coef_.shape
    ([0, 1], (1, 30))
    >>> bool(clf.score(X, bags, props) > 0.9)  # 1 - hard L1 / 2 on the bags
    True
    >>> bool(np.mean(clf.predict(X) == y) > 0.9)
    True

    Choosing ``C`` on held-out bags:

    >>> from sklearn.model_selection import GridSearchCV
    >>> from sklearn_llp.metrics import make_bag_scorer
    >>> from sklearn_llp.model_selection import BagKFold
    >>> search = GridSearchCV(
    ...     MeanMapClassifier(),
    ...     {"C": [1e-3, 1e-2, 1e-1]},
    ...     scoring=make_bag_scorer("hard_l1", bags=bags, props=props),
    ...     cv=BagKFold(3),
    ... ).fit(X, bags, props=props)
    >>> search.best_params_["C"] in (1e-3, 1e-2, 1e-1)
    True
    """

    __metadata_request__fit = {"props": True}
    __metadata_request__score = {"props": True}

    _parameter_constraints = {
        "C": [Interval(Real, 0, None, closed="neither")],
        "mean_alpha": [Interval(Real, 0, None, closed="left")],
        "bag_weights": [StrOptions({"size", "uniform"})],
        "laplacian": [Interval(Real, 0, None, closed="left")],
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "classes": ["array-like", None],
        "threshold": [
            StrOptions({"auto", "prior", "argmax"}),
            Interval(Real, 0, 1, closed="neither"),
        ],
        "fit_intercept": ["boolean"],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(
        self,
        C=1e-3,
        *,
        mean_alpha=1e-4,
        bag_weights="size",
        laplacian=0.0,
        n_neighbors=10,
        classes=None,
        threshold="auto",
        fit_intercept=True,
        tol=1e-4,
        max_iter=500,
    ):
        self.C = C
        self.mean_alpha = mean_alpha
        self.bag_weights = bag_weights
        self.laplacian = laplacian
        self.n_neighbors = n_neighbors
        self.classes = classes
        self.threshold = threshold
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter

    def _validate_X(self, X, reset):
        return validate_data(
            self, X, reset=reset, accept_sparse="csr", dtype=np.float64
        )

    def fit(self, X, y=None, props=None, sample_weight=None):
        """Fit from bags and proportions, or from labels if ``props=None``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Instances (numeric; use a ``ColumnTransformer`` for categorical
            columns). Standardised features make ``C`` comparable across
            features.
        y : array-like, DataFrame, sparse matrix, list of arrays or Bags
            The bag of every row, in any form that
            :func:`~sklearn_llp.core.check_bags` accepts (ids, composite
            keys, a membership matrix or lists of row indices for
            overlapping bags, a :class:`~sklearn_llp.core.Bags`). With
            ``props=None`` (and no ``Bags``), the class label of every row.
        props : array-like, DataFrame, Series or dict, default=None
            Label proportions: sample-aligned ``(n_samples, n_classes)``, a
            1-D positive-class fraction for two classes, or a per-bag table
            indexed by bag id; one row per bag for overlapping bags.
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of every row: bag means and class totals are weighted, and
            so is every row's log-partition term. ``props`` are taken as the
            bags' weighted proportions. A row of weight 0 is left out; equal
            weights are no weights (unlike in LogisticRegression, a scale
            common to all rows does not act as a larger ``C``).

        Returns
        -------
        self : MeanMapClassifier
        """
        refuse_sklearn_cross_val_predict(props)
        validate_parameter_constraints(
            self._parameter_constraints,
            self.get_params(deep=False),
            caller_name=type(self).__name__,
        )
        with restore_on_error(self, ("n_features_in_", "feature_names_in_")):
            X = self._validate_X(X, reset=True)
            bags, on_labels = check_fit_inputs(
                y,
                props,
                n_samples=X.shape[0],
                sample_weight=sample_weight,
                classes=self.classes,
            )
            self._check_threshold(bags.classes)  # before any fitting
        if on_labels:
            stats = _label_statistics(X, bags)
        else:
            stats = _bag_statistics(
                X,
                bags,
                self.bag_weights,
                self.mean_alpha,
                self.laplacian,
                self.n_neighbors,
            )
        X_fit = X if stats.rows is None else X[stats.rows]
        coef, intercept, n_iter = _fit_logistic(
            X_fit, stats, self.C, self.fit_intercept, self.tol, self.max_iter
        )
        self.classes_ = np.asarray(stats.classes)
        self.coef_ = coef
        self.intercept_ = intercept
        self.class_means_ = stats.means
        self.class_prior_ = stats.totals / stats.totals.sum()
        self.n_iter_ = np.array([n_iter])
        self._fit_on_labels_ = stats.on_labels
        self._fit_decision_rule(
            lambda: self.predict_proba(X_fit), self.class_prior_, stats.weights
        )
        return self

    def decision_function(self, X):
        """Logits: of ``classes_[1]`` against ``classes_[0]`` for two classes.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        scores = _dense(X @ self.coef_.T) + self.intercept_
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict_proba(self, X):
        """Class probabilities, in the order of ``classes_``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            positive = expit(scores)
            return np.column_stack([1.0 - positive, positive])
        return softmax(scores, axis=1)

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            scores = np.column_stack([np.zeros_like(scores), scores])
        return scores - logsumexp(scores, axis=1, keepdims=True)

    def predict(self, X):
        """Class of every row by the fitted decision rule (``threshold``).

        Exactly, with ``proba = self.predict_proba(X)`` (float64): two
        classes, ``classes_[(proba[:, 1] >= threshold_).astype(int)]``; more,
        ``classes_[np.argmax(np.log(proba) + decision_offsets_, axis=1)]``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        proba = self.predict_proba(X)  # checks that the model is fitted
        return self.classes_[self._decide(proba)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
