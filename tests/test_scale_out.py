"""Model selection on a Dask cluster through joblib's backend (issue 12).

``GridSearchCV``/``cross_validate`` fan their fits out through joblib;
under ``joblib.parallel_backend("dask")`` the fits run on the workers of a
``dask.distributed`` cluster. Every fit is seeded and single-threaded
(``n_threads="auto"``), so the search must pick what ``n_jobs=1`` picks.
"""

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV

from sklearn_llp import LLPClassifier
from sklearn_llp.metrics import make_bag_scorer
from sklearn_llp.model_selection import BagKFold

distributed = pytest.importorskip("distributed")
joblib = pytest.importorskip("joblib")


def test_grid_search_on_a_local_dask_cluster_matches_n_jobs_1(digits_bags):
    X, bags, props = digits_bags[:3]
    X, bags, props = X[:640], bags[:640], props[:640]
    search = GridSearchCV(
        LLPClassifier(
            module__hidden_sizes=(32,), max_epochs=5, verbose=0, random_state=0
        ),
        {"lr": [1e-5, 1e-2], "method": ["dllp", "vat"]},
        scoring=make_bag_scorer("hard_l1", bags=bags, props=props),
        cv=BagKFold(2),
        error_score="raise",
    )
    local = GridSearchCV(**search.get_params(deep=False)).fit(X, bags, props=props)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
        distributed.get_task_stream(client) as tasks,
        joblib.parallel_backend("dask"),
    ):
        remote = GridSearchCV(**{**search.get_params(deep=False), "n_jobs": -1})
        remote.fit(X, bags, props=props)
    # the 8 fits (4 candidates x 2 folds) ran as tasks on the workers
    assert len(tasks.data) >= 8
    assert remote.best_params_ == local.best_params_
    np.testing.assert_array_equal(
        remote.cv_results_["mean_test_score"], local.cv_results_["mean_test_score"]
    )
