"""``method="auto"``: the method measured best for the bags at hand."""

import numpy as np

from ._base import DLLP, LLPMethod
from ._easyllp import EasyLLP, _effective_sizes, bag_spread
from ._vat import VAT

#: The regimes of :ref:`auto_method`, measured at the defaults, all for two
#: classes: EasyLLP for at most ``FEW_BAGS`` bags of ``HUGE_BAGS`` rows or
#: more (median) whose proportions vary like random draws, and for
#: ``MANY_BAGS`` or more such bags of several rows in as many groups
#: (``Bags.n_groups``: enough held out for its early stopping, which holds out
#: overlapping bags by connected group); DLLP for bags of ``LARGE_BAGS`` rows
#: or more.
FEW_BAGS = 25
HUGE_BAGS = 1000
LARGE_BAGS = 512
MANY_BAGS = 250


def _random_like(bags):
    """EasyLLP's own test (:ref:`easyllp`): no significant excess spread."""
    ratio, p_value = bag_spread(bags.props, _effective_sizes(bags))
    return not (ratio > 1.5 and p_value < 1e-3)


class AutoMethod(LLPMethod):
    """The method for the bag regime, chosen at ``fit`` (:ref:`auto_method`).

    The estimators train the chosen method itself (``method_``); on its own,
    this object delegates to what :meth:`prepare` chose (``chosen_``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.core import check_bags
    >>> from sklearn_llp.methods import AutoMethod
    >>> ids = np.repeat(np.arange(10), 2000)
    >>> bags = check_bags(ids, props=np.full((20000, 2), 0.5))
    >>> AutoMethod().choose(bags)
    (EasyLLP(), '10 bags of about 2,000 rows whose proportions vary like random draws')
    """

    def choose(self, bags):
        """The method for ``bags`` and the reason, ``(LLPMethod, str)``."""
        size = float(np.median(bags.sizes))
        about = f"{bags.n_bags} bags of about {size:,.0f} rows"
        random_like = f"{about} whose proportions vary like random draws"
        if bags.n_classes == 2 and size >= LARGE_BAGS:
            if bags.n_bags <= FEW_BAGS and size >= HUGE_BAGS and _random_like(bags):
                return EasyLLP(), random_like
            return DLLP(), f"{about}, two classes"
        many = bags.n_groups >= MANY_BAGS and size >= 2
        if bags.n_classes == 2 and many and _random_like(bags):
            return EasyLLP(), random_like
        return VAT(), about

    def prepare(self, bags, random_state):
        self.chosen_, self.reason_ = self.choose(bags)
        self.chosen_.prepare(bags, random_state)
        return self

    def on_epoch_begin(self, epoch):
        self.chosen_.on_epoch_begin(epoch)

    def get_loss(self, module, X, logits, bags, step, total_steps):
        return self.chosen_.get_loss(module, X, logits, bags, step, total_steps)
