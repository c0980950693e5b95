"""Label-free decision rules: turn probabilities into labels without labels.

A model trained on proportions matches every bag's mean probability, but the
most probable class of an instance need not be its label: with a rare class
that is a minority in every bag, ``argmax`` can predict the common class for
every row (F1 of 0 for the rare class), although the probabilities rank the
rows well. Prior matching shifts the decision so that the predicted class
rates over the rows equal the class rates the bags reveal, which needs no
instance label.

The rules, exactly (``proba`` as ``predict_proba`` returns it):

- two classes: ``proba[:, 1] >= threshold`` says ``classes_[1]``, compared
  by NumPy in the dtype of ``proba`` (``threshold`` is a Python float; the
  prior-matched one is one of the training probabilities, or the smallest
  float32 above them all, so it is exact in float32 and float64 alike);
- more classes: ``np.argmax(np.log(proba.astype(np.float64)) + offsets,
  axis=1)``, the first maximum on ties (``offsets`` all zero for argmax).

Prior matching, two classes: among the cut points (the distinct training
probabilities of ``classes_[1]`` with a positive weight, and one cut above
them all), the one whose weighted positive rate is closest to the prior;
between two cut points equally close (to 1e-9 of the total weight), the lower
one (more rows in ``classes_[1]``). Rows with equal probabilities always get
the same label, so the rate can miss the prior by at most half the weight of
the tied rows at the cut.

Prior matching, more classes: the offsets are the dual potentials of the
transport problem "assign every row to a class, maximising the sum of
``w_i log p_ic``, with class ``c`` receiving the weight ``prior[c] * W``":
they minimise the convex, piecewise linear dual
``g(o) = sum_i w_i max_c (log p_ic + o_c) - W prior @ o``. It is minimised
exactly by descent with exact line searches (a relaxation method of
network-flow duals): every step takes, among "lower one class", "raise one
class" and "lower the set of classes S whose rows outweigh their prior most"
(a maximum-weight closure over the sets of tied classes), the direction that
decreases ``g`` most, and the loop stops when no set of classes outweighs
its prior (Hall's condition on the tied rows). At that point the rows whose
adjusted scores do not tie are where the transport solution puts them, and
the tied rows can be split among their tied classes to meet the prior
exactly: the predicted rates equal the prior within ties. The ties
themselves are broken by an order of the classes chosen to bring the hard
rates closest to the prior (a perturbation of the offsets of at most 1e-9
relative, smaller than any untied margin). Identical rows are solved once;
large problems start from the solution on a strided 1/8 subsample and then
work on the rows near a decision boundary only (offsets moving apart by less
than the margin of the other rows cannot change their class). Deterministic;
100,000 rows x 10 classes take about 0.3 s (starting from the label-shift
correction ``log(prior / mean proba)``).
"""

import itertools
import math
from collections import deque

import numpy as np

#: Rows solved together; a larger problem starts from the solution on every
#: ``_SUBSAMPLE``-th row, then refines on the rows near a boundary.
_DIRECT_ROWS = 16384
_SUBSAMPLE = 8
#: Largest group of classes linked by ties whose subsets are all searched
#: (a minimum cut above).
_ENUMERATED_CLASSES = 14
#: Descent steps of one subproblem per class, a safeguard (at most about 3
#: per class were needed in tests; the offsets reached are then returned).
_STEPS_PER_CLASS = 20
#: Log-probability given to a zero probability while solving (it cannot win).
_FLOOR = -1000.0


def class_prior(bags):
    """Overall class proportions of the rows of ``bags`` (weights counted).

    Parameters
    ----------
    bags : Bags
        Validated bags with proportions.

    Returns
    -------
    prior : ndarray of shape (n_classes,)
        ``sum_B W_B p_B / sum_B W_B`` with ``W_B`` the total weight of bag B.
    """
    totals = bags.total_weights()
    return totals @ bags.props / totals.sum()


def _weights(weights, n_samples):
    if weights is None:
        return np.ones(n_samples)
    return np.asarray(weights, dtype=np.float64)


def _float32_above(value):
    """The smallest float32 strictly above ``value`` (exact in both dtypes)."""
    above = np.float32(value)
    if float(above) <= value:
        above = np.nextafter(above, np.float32(np.inf))
    return float(above)


def prior_threshold(proba_1, prior_1, weights=None):
    """The cut point of the second class whose positive rate is the prior's.

    ``proba_1 >= threshold`` predicts the second class for a (weighted) share
    of the rows as close to ``prior_1`` as the cut points allow: the distinct
    values of ``proba_1`` with a positive weight, and one cut above them all
    (no positive). Between two equally close cut points (to 1e-9 of the
    total weight) the lower one wins.

    Parameters
    ----------
    proba_1 : ndarray of shape (n_samples,)
        Probability of the second class.
    prior_1 : float
        Target share of the second class.
    weights : ndarray of shape (n_samples,), default=None

    Returns
    -------
    threshold : float
        A Python float equal to one of ``proba_1`` (or the smallest float32
        above their maximum), so ``proba_1 >= threshold`` is exact in the
        dtype of ``proba_1``.
    """
    proba_1 = np.asarray(proba_1)
    weights = _weights(weights, len(proba_1))
    keep = weights > 0
    if not keep.any():
        return 0.5
    values, inverse = np.unique(proba_1[keep], return_inverse=True)
    weight_of = np.bincount(inverse.ravel(), weights=weights[keep])
    total = weight_of.sum()
    at_or_above = np.cumsum(weight_of[::-1])[::-1]  # weight of p >= values[j]
    target = float(prior_1) * total
    # candidates: values[0] < values[1] < ... then "above all" (rate 0)
    distance = np.append(np.abs(at_or_above - target), abs(target))
    best = np.flatnonzero(distance <= distance.min() + 1e-9 * total)[0]
    if best == len(values):
        return _float32_above(values[-1])
    return float(values[best])


def _binary_offsets(threshold):
    """``[0, -logit(threshold)]``: the log-offsets a binary threshold means."""
    t = min(max(float(threshold), 1e-300), 1.0 - 2.0**-53)
    return np.array([0.0, math.log1p(-t) - math.log(t)])


def _scores(proba):
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(proba, dtype=np.float64))


def _tie_tolerance(top):
    """Adjusted scores this close tie (rounding in ``scores + offsets``)."""
    return 1e-12 * max(1.0, float(np.abs(top).max(initial=0.0)))


def _tie_structure(adjusted, weights):
    """Weight of the rows whose maximum is unique, per class, and of every
    set of tied classes (boolean rows of ``patterns``)."""
    n_classes = adjusted.shape[1]
    top = adjusted.max(axis=1)
    tied = adjusted >= (top - _tie_tolerance(top))[:, None]
    multi = tied.sum(axis=1) > 1
    single = ~multi
    forced = np.bincount(
        np.argmax(adjusted[single], axis=1),
        weights=weights[single],
        minlength=n_classes,
    )
    if not multi.any():
        return forced, np.zeros((0, n_classes), bool), np.zeros(0)
    patterns, inverse = _unique_rows(tied[multi])
    return forced, patterns, np.bincount(inverse, weights=weights[multi])


def _unique_rows(rows):
    """Distinct rows of a matrix and the index of every row among them (by a
    key per row, checked; ``np.unique(axis=0)`` sorts far slower)."""
    if rows.dtype == bool and rows.shape[1] <= 62:
        key = rows @ (1 << np.arange(rows.shape[1], dtype=np.int64))
    else:
        key = rows @ (1.0 + np.arange(rows.shape[1]) / np.pi)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    if not np.array_equal(rows[first][inverse], rows):  # a collision
        unique, inverse = np.unique(rows, axis=0, return_inverse=True)
        return unique, inverse.ravel()
    return rows[first], inverse


def _most_outweighing(forced, patterns, pattern_weights, target, tol):
    """The set of classes ``S`` maximising ``W(T_i ⊆ S) - target(S)`` (the
    rows whose tied classes all lie in S, against the weight S should get),
    if it exceeds ``tol``; else None: Hall's condition holds, the tied rows
    can meet the targets, the offsets are optimal.

    The excess adds up over the groups of classes linked by tied rows: each
    group is searched on its own, all its subsets when it is small, else as
    a maximum-weight closure (:func:`_closure`).
    """
    gain = forced - target
    best, total = np.zeros(len(gain), bool), 0.0
    for group in _components(patterns, len(gain)):
        mine = patterns[:, group].any(axis=1)
        local = patterns[mine][:, group]
        if len(group) <= _ENUMERATED_CLASSES:
            subset, excess = _all_subsets(gain[group], local, pattern_weights[mine])
        else:
            subset, excess = _closure(gain[group], local, pattern_weights[mine], tol)
        if excess > 0:
            best[group[subset]] = True
            total += excess
    if total <= tol or best.all():
        return None
    return best


def _components(patterns, n_classes):
    """Groups of classes linked by tied rows (a class alone is its own)."""
    parent = list(range(n_classes))

    def root(c):
        while parent[c] != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    for pattern in patterns:
        linked = np.flatnonzero(pattern)
        for c in linked[1:]:
            parent[root(c)] = root(linked[0])
    roots = np.array([root(c) for c in range(n_classes)])
    return [np.flatnonzero(roots == r) for r in np.unique(roots)]


def _all_subsets(gain, patterns, pattern_weights):
    """The best nonempty subset by enumeration (subset sums over bitmasks)."""
    k = len(gain)
    values = np.zeros(1 << k)
    values[1 << np.arange(k)] = gain
    np.add.at(values, patterns @ (1 << np.arange(k)), pattern_weights)
    masks = np.arange(1 << k)
    for bit in range(k):  # values[mask] = sum over the submasks
        has = (masks >> bit) & 1 == 1
        values[has] += values[masks[has] ^ (1 << bit)]
    values[0] = -np.inf
    best = int(np.argmax(values))
    return (best >> np.arange(k)) & 1 == 1, values[best]


def _closure(gain, patterns, pattern_weights, tol):
    """The best subset as a maximum-weight closure (a pattern of tied
    classes, weight ``W_P``, needs all its classes; class c weighs
    ``gain_c``): a minimum cut, by Edmonds-Karp on patterns and classes."""
    n_classes, n_patterns = len(gain), len(patterns)
    source, sink = n_patterns + n_classes, n_patterns + n_classes + 1
    graph = [[] for _ in range(sink + 1)]  # residual edges [head, capacity, reverse]

    def add(u, v, capacity):
        graph[u].append([v, capacity, len(graph[v])])
        graph[v].append([u, 0.0, len(graph[u]) - 1])

    room = np.maximum(-gain, 0.0)  # what each class can still take
    sink_edge = {}
    for c in range(n_classes):
        if gain[c] > 0:
            add(source, n_patterns + c, float(gain[c]))
        elif gain[c] < 0:
            sink_edge[c] = len(graph[n_patterns + c])
            add(n_patterns + c, sink, float(room[c]))
    flow, eps = 0.0, 1e-3 * tol
    for p in range(n_patterns):
        # a greedy first flow: each pattern fills the room of its classes
        left = float(pattern_weights[p])
        source_edge = len(graph[source])
        add(source, p, left)
        for c in np.flatnonzero(patterns[p]):
            push = min(left, room[c]) if c in sink_edge else 0.0
            add(p, n_patterns + c, np.inf)
            if push > 0:
                room[c] -= push
                left -= push
                flow += push
                graph[source][source_edge][1] -= push
                graph[p][0][1] += push  # the reverse of source -> p
                graph[n_patterns + c][graph[p][-1][2]][1] += push  # c -> p
                graph[n_patterns + c][sink_edge[c]][1] -= push
                graph[sink][graph[n_patterns + c][sink_edge[c]][2]][1] += push
    while True:
        parent = [None] * (sink + 1)
        parent[source] = (source, -1)
        queue = deque([source])
        while queue and parent[sink] is None:
            u = queue.popleft()
            for i, (v, capacity, _) in enumerate(graph[u]):
                if capacity > eps and parent[v] is None:
                    parent[v] = (u, i)
                    queue.append(v)
        if parent[sink] is None:
            break
        push, v = np.inf, sink
        while v != source:
            u, i = parent[v]
            push = min(push, graph[u][i][1])
            v = u
        v = sink
        while v != source:
            u, i = parent[v]
            edge = graph[u][i]
            edge[1] -= push
            graph[v][edge[2]][1] += push
            v = u
        flow += push
    excess = float(pattern_weights.sum() + np.maximum(gain, 0).sum()) - flow
    subset = np.array([parent[n_patterns + c] is not None for c in range(n_classes)])
    return subset, excess


def _lower(advantage, weights, target, tol):
    """Exact line search of ``g`` along ``-1_S`` from the rows' advantage
    ``max_S - max_(not S)`` (sorted descending) and ``S``'s target: the step
    ``t`` and the change of ``g``, ``t target - sum w min(t, a)`` over the
    rows with ``a > 0``; (0, 0) when lowering S does not descend."""
    cumulative = np.cumsum(weights)
    if len(advantage) == 0 or cumulative[-1] <= target + tol:
        return 0.0, 0.0
    j = min(int(np.searchsorted(cumulative, target - tol)), len(advantage) - 1)
    t = advantage[j]
    tail = weights[j + 1 :] @ advantage[j + 1 :]
    return t, t * (target - cumulative[j]) - tail


def _raise(advantage, weights, target, tol, tie):
    """Exact line search of ``g`` along ``+e_c`` from the rows' advantage
    ``a = A_c - max_(not c)``: the rows with ``a >= -tie`` hold c, the
    others join at ``t = -a``; the step and the change of ``g``,
    ``(held - target) t + sum w max(0, t + a)``; (0, 0) if not a descent."""
    outside = advantage < -tie
    needed = target - weights[~outside].sum()
    if needed <= tol or not outside.any():
        return 0.0, 0.0
    deficit, w = -advantage[outside], weights[outside]
    # the rows that join first: a partial sort when they are few
    k = len(deficit)
    guess = int(min(k, 2 * needed / max(w.min(), 1e-300) + 16))
    if guess < k:
        part = np.argpartition(deficit, guess - 1)[:guess]
        if w[part].sum() >= needed:
            deficit, w = deficit[part], w[part]
    order = np.argsort(deficit, kind="stable")
    deficit, w = deficit[order], w[order]
    cumulative = np.cumsum(w)
    j = min(int(np.searchsorted(cumulative, needed - tol)), len(deficit) - 1)
    t = deficit[j]
    return t, t * (cumulative[j] - needed) - w[: j + 1] @ deficit[: j + 1]


def _best_step(adjusted, weights, target, hall, tol, tie):
    """The steepest exact line search among: every class lowered, every
    class raised, and the set of classes ``hall`` lowered.

    Lowering only the most outweighing set can zigzag: its rows spill into
    the neighbouring classes, which the next step pushes back, while a small
    class that needs a long step waits. Comparing the decrease of ``g``
    that each direction achieves takes the long step when it pays most.
    Returns the offset change (None when no direction descends).
    """
    n_classes = adjusted.shape[1]
    top_two = np.partition(adjusted, -2, axis=1)
    top, second = top_two[:, -1], top_two[:, -2]
    first = np.argmax(adjusted, axis=1)
    best_change, best_delta = 0.0, None
    for c in range(n_classes):
        a = adjusted[:, c] - np.where(first == c, second, top)
        inside = np.flatnonzero(a > tie)
        order = inside[np.argsort(-a[inside], kind="stable")]
        t, change = _lower(a[order], weights[order], target[c], tol)
        if change < best_change:
            best_change, best_delta = change, -t * (np.arange(n_classes) == c)
        # raise c: the rows outside join in order of their deficit -a
        t, change = _raise(a, weights, target[c], tol, tie)
        if change < best_change:
            best_change, best_delta = change, t * (np.arange(n_classes) == c)
    a = adjusted[:, hall].max(axis=1) - adjusted[:, ~hall].max(axis=1)
    inside = np.flatnonzero(a > tie)
    order = inside[np.argsort(-a[inside], kind="stable")]
    t, change = _lower(a[order], weights[order], target[hall].sum(), tol)
    if change < best_change:
        best_change, best_delta = change, -t * hall
    return best_delta


def _relax(scores, target, weights, offsets, max_move):
    """Descent steps from ``offsets`` until optimal (Hall's condition on the
    tied rows); stops early (False) once the offsets moved apart by more
    than ``max_move``."""
    offsets = offsets.copy()
    start = offsets.copy()
    tol = 1e-9 * max(weights.sum(), np.abs(target).sum())
    for _ in range(_STEPS_PER_CLASS * len(target) + 100):
        adjusted = scores + offsets
        forced, patterns, pattern_weights = _tie_structure(adjusted, weights)
        hall = _most_outweighing(forced, patterns, pattern_weights, target, tol)
        if hall is None or hall.all():
            return offsets, True
        tie = _tie_tolerance(adjusted.max(axis=1))
        delta = _best_step(adjusted, weights, target, hall, tol, tie)
        if delta is None:  # a target below zero (a restricted problem)
            return offsets, False
        if np.ptp(offsets + delta - start) > max_move:
            # the box ends here: go to its edge (g still decreases there)
            low, high = 0.0, 1.0
            for _ in range(50):
                mid = 0.5 * (low + high)
                inside = np.ptp(offsets + mid * delta - start) <= max_move
                low, high = (mid, high) if inside else (low, mid)
            return offsets + low * delta, False
        offsets += delta
    return offsets, True


def _match(scores, target, weights, offsets):
    """Dual-optimal offsets of the transport problem (see the module)."""
    n_rows = len(scores)
    if n_rows <= _DIRECT_ROWS:
        return _relax(scores, target, weights, offsets, np.inf)[0]
    sub = np.arange(0, n_rows, _SUBSAMPLE)
    share = weights[sub].sum() / weights.sum()
    offsets = _match(scores[sub], target * share, weights[sub], offsets)
    n_active = max(4096, n_rows // 8)
    while n_active < n_rows:
        # rows whose best class leads by more than ``width`` keep it while
        # the offsets move apart by less
        adjusted = scores + offsets
        top_two = np.partition(adjusted, -2, axis=1)[:, -2:]
        margin = top_two[:, 1] - top_two[:, 0]
        width = np.partition(margin, n_active)[n_active]
        active = margin <= width
        firm = ~active
        fixed = np.bincount(
            np.argmax(adjusted[firm], axis=1),
            weights=weights[firm],
            minlength=len(target),
        )
        offsets, done = _relax(
            scores[active], target - fixed, weights[active], offsets, 0.9 * width
        )
        if done:
            return offsets
        n_active *= 2
    return _relax(scores, target, weights, offsets, np.inf)[0]


def _hard_gap(scores, offsets, target, weights):
    pred = np.argmax(scores + offsets, axis=1)
    counts = np.bincount(pred, weights=weights, minlength=len(target))
    return np.abs(counts - target).sum()


def _break_ties(scores, target, weights, offsets):
    """Resolve the tied rows by an order of the classes (the first max
    otherwise) that brings the hard rates closest to ``target``."""
    adjusted = scores + offsets
    top = adjusted.max(axis=1)
    tolerance = _tie_tolerance(top)
    behind = top[:, None] - adjusted
    tied = behind <= tolerance
    if not (tied.sum(axis=1) > 1).any():
        return offsets
    untied = behind[behind > tolerance]
    margin = untied.min() if untied.size else 1.0
    forced, patterns, pattern_weights = _tie_structure(adjusted, weights)
    involved = np.flatnonzero(patterns.any(axis=0))
    k = len(involved)
    step = min(0.5 * margin, 1e-9 * max(1.0, float(np.abs(top).max())))
    if step / k <= 4 * tolerance:
        return offsets

    def gap(order):
        rank = np.full(len(target), k)
        rank[list(order)] = np.arange(k)
        chosen = np.argmin(np.where(patterns, rank, k + 1), axis=1)
        counts = forced + np.bincount(
            chosen, weights=pattern_weights, minlength=len(target)
        )
        return np.abs(counts - target).sum()

    order = tuple(involved)
    if k <= 6:
        order = min(itertools.permutations(involved), key=gap)
    else:
        best = gap(order)
        improved = True
        while improved:
            improved = False
            for a, b in itertools.combinations(range(k), 2):
                trial = list(order)
                trial[a], trial[b] = trial[b], trial[a]
                if gap(trial) < best - 1e-12:
                    order, best, improved = tuple(trial), gap(trial), True
    candidate = offsets.copy()
    candidate[list(order)] += step * (k - np.arange(k)) / k
    candidate -= candidate[0]
    if _hard_gap(scores, candidate, target, weights) < _hard_gap(
        scores, offsets, target, weights
    ):
        return candidate
    return offsets


def prior_offsets(proba, prior, weights=None):
    """Log-probability offsets whose argmax predicts every class at its prior.

    ``np.argmax(np.log(proba) + offsets, axis=1)`` predicts class ``c`` for
    a (weighted) share ``prior[c]`` of the rows, within ties: the offsets
    are the dual potentials of the transport problem that assigns the rows
    to the classes at the prior's rates maximising the summed log
    probability (see the module docstring). A class of prior 0 gets an
    offset one nat below winning any row. With two classes: the offsets
    ``[0, -logit(t)]`` of :func:`prior_threshold` (decide binary problems
    with the threshold itself, :func:`fit_decision`).

    Parameters
    ----------
    proba : ndarray of shape (n_samples, n_classes)
    prior : ndarray of shape (n_classes,)
    weights : ndarray of shape (n_samples,), default=None

    Returns
    -------
    offsets : ndarray of shape (n_classes,)
        Zero for the first class of positive prior.
    """
    proba = np.asarray(proba)
    n_samples, n_classes = proba.shape
    prior = np.asarray(prior, dtype=np.float64)
    if n_classes == 2:
        return _binary_offsets(prior_threshold(proba[:, 1], prior[1], weights))
    weights = _weights(weights, n_samples)
    keep = weights > 0
    offsets = np.zeros(n_classes)
    if not keep.any() or prior.sum() <= 0:
        return offsets
    scores = np.maximum(_scores(proba[keep]), _FLOOR)
    weights = weights[keep]
    classes = np.flatnonzero(prior > 0)
    target = prior[classes] / prior.sum() * weights.sum()
    if len(classes) > 1:
        matched = scores[:, classes]
        rows, row_weights = matched, weights
        if 2 * len(np.unique(matched[:, 0])) <= len(matched):  # many ties
            rows, inverse = _unique_rows(matched)
            row_weights = np.bincount(inverse, weights=weights)
        # start from the label-shift correction log(prior / mean proba)
        mean = row_weights @ np.exp(rows) / row_weights.sum()
        start = np.log(target / row_weights.sum()) - np.log(np.maximum(mean, 1e-300))
        solved = _match(rows, target, row_weights, start - start[0])
        solved = solved - solved[0]
        offsets[classes] = _break_ties(rows, target, row_weights, solved)
    top = (scores[:, classes] + offsets[classes]).max(axis=1)
    for c in np.flatnonzero(prior <= 0):
        offsets[c] = float((top - scores[:, c]).min()) - 1.0
    return offsets


def fit_decision(rule, proba, prior=None, weights=None):
    """``(offsets, threshold)`` of a decision rule for :func:`decide`.

    Parameters
    ----------
    rule : {"argmax", "prior"} or float
        A float is a threshold on the probability of the second class.
    proba : ndarray of shape (n_samples, n_classes)
        Probabilities of the rows to match (used by ``"prior"`` only).
    prior : ndarray of shape (n_classes,), default=None
        Class rates to match (``"prior"``).
    weights : ndarray of shape (n_samples,), default=None

    Returns
    -------
    offsets : ndarray of shape (n_classes,)
        Log-probability offsets (for two classes ``[0, -logit(threshold)]``,
        informational).
    threshold : float or None
        Two classes: the threshold on the probability of the second class
        (0.5 for ``"argmax"``); None otherwise.
    """
    n_classes = proba.shape[1]
    if rule == "argmax":
        return np.zeros(n_classes), (0.5 if n_classes == 2 else None)
    if rule == "prior":
        if n_classes == 2:
            threshold = prior_threshold(proba[:, 1], prior[1], weights)
            return _binary_offsets(threshold), threshold
        return prior_offsets(proba, prior, weights), None
    threshold = float(rule)
    return _binary_offsets(threshold), threshold


def decide(proba, offsets=None, threshold=None):
    """Class index of every row.

    With ``threshold`` (two classes): ``proba[:, 1] >= threshold``, compared
    by NumPy in the dtype of ``proba``. Else, with ``offsets``:
    ``np.argmax(np.log(proba.astype(np.float64)) + offsets, axis=1)`` (the
    first maximum on ties); without either, ``np.argmax(proba, axis=1)``.
    """
    if threshold is not None:
        return (proba[:, 1] >= float(threshold)).astype(np.intp)
    if offsets is None:
        return np.argmax(proba, axis=1)
    return np.argmax(_scores(proba) + offsets, axis=1)
