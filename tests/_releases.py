"""dp_proportions with the labels of ``y`` as the public label domain and,
under add_remove, the ids of ``bags`` as the public id domain, for tests of
other properties (a real release is given ``classes`` and ``domain``)."""

import numpy as np

from sklearn_llp import privacy


def with_domain(bags, kwargs):
    if kwargs.get("neighbours") == "add_remove" and "domain" not in kwargs:
        ids = np.asarray(bags)
        kwargs = {**kwargs, "domain": np.unique(ids[ids != -1])}
    return kwargs


def dp_proportions(bags, y, *args, **kwargs):
    kwargs = with_domain(bags, {"classes": np.unique(y), **kwargs})
    return privacy.dp_proportions(bags, y, *args, **kwargs)
