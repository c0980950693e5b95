"""Datasets and the batch sampler that feed whole bags to the network.

Batches are built by indexing with arrays of instance indices (the data
loader's ``batch_size=None`` mode), so no Python code runs per instance.
"""

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.utils import check_random_state
from torch.utils.data import BatchSampler, DataLoader, Sampler, SequentialSampler

from ..methods import mixed_bag_labels
from ..methods.functional import attach_plan


def as_tensor(X):
    """Dense float32 tensor, or CSR matrix kept sparse until batched."""
    if sp.issparse(X):
        return sp.csr_matrix(X, dtype=np.float32)
    X = np.ascontiguousarray(X, dtype=np.float32)
    # pandas may hand out read-only arrays, which torch warns about
    return torch.as_tensor(X if X.flags.writeable else X.copy())


def subset_rows(X, idx):
    """Rows ``idx`` of ``X``, kept sparse if it is (for prediction)."""
    if len(idx) == X.shape[0] and np.array_equal(idx, np.arange(len(idx))):
        return X
    return X[idx] if sp.issparse(X) else X[torch.as_tensor(idx)]


def take_rows(X, idx):
    """Rows ``idx`` of ``X`` as a dense float32 tensor."""
    if sp.issparse(X):
        return torch.from_numpy(X[idx].toarray())
    return X[torch.as_tensor(idx)]


def _float_tensor(values):
    """A float32 tensor of its own (``Bags`` arrays are read-only)."""
    return torch.from_numpy(np.array(values, dtype=np.float32))


def _optional_tensor(values):
    return None if values is None else _float_tensor(values)


class BagDataset(torch.utils.data.Dataset):
    """Rows and their validated bags, indexed by (bag, row) pairs.

    ``dataset[pairs]`` returns the distinct rows and the batch's structure
    (``segments``, ``bag_index``, ``bag_props``, ...); ``bag_numbers`` renumbers
    ``bag_index`` for a window of a streamed fit."""

    bag_numbers = None

    def __init__(self, X, bags, values=None):
        self.X = X
        self.bags = bags
        self.values = bags.values if values is None else values
        self.bag_props = _float_tensor(self.values)
        self.weights = _optional_tensor(bags.weights)
        self.bag_weights = _optional_tensor(bags.bag_weights)

    @property
    def pair_bags(self):
        return self.bags.pair_bags

    @property
    def overlapping(self):
        return self.bags.overlapping

    def __len__(self):
        return len(self.bags.members)

    def __getitem__(self, pairs):
        target = {}
        members = self.bags.members[pairs]
        if self.overlapping:
            rows, members = np.unique(members, return_inverse=True)
            target["members"] = torch.from_numpy(members.ravel())
        else:
            # rows in pair order: logits line up with segments one to one,
            # so no "members" gather is needed
            rows = members
        # the sampler keeps each bag's pairs together: number the runs
        bag_of_pair = self.pair_bags[pairs]
        new_bag = np.empty(len(pairs), dtype=bool)
        new_bag[:1] = True
        np.not_equal(bag_of_pair[1:], bag_of_pair[:-1], out=new_bag[1:])
        segments = np.cumsum(new_bag) - 1
        bags_present = bag_of_pair[new_bag]
        target["segments"] = torch.from_numpy(segments)
        target["largest_bag"] = int(np.bincount(segments).max())
        target["bag_index"] = torch.from_numpy(bags_present)
        target["bag_props"] = self.bag_props[target["bag_index"]]
        if self.bag_numbers is not None:
            target["bag_index"] = torch.from_numpy(self.bag_numbers[bags_present])
        if self.weights is not None:
            target["weights"] = self.weights[torch.from_numpy(rows)]
        if self.bag_weights is not None:
            target["bag_weights"] = self.bag_weights[target["bag_index"]]
        target["rows"] = torch.from_numpy(np.asarray(rows, dtype=np.int64))
        return take_rows(self.X, rows), target

    def select_bags(self, bag_mask):
        """The sub-dataset of the bags where ``bag_mask`` is True."""
        return BagDataset(
            self.X, self.bags.select(bag_mask), np.asarray(self.values)[bag_mask]
        )


#: Plan entries read on the host; the target's views of the epoch's tensors.
_HOST = ("sizes", "largest_bag", "mixed", "mixes", "confidence")
_PLAIN = ("bag_index", "bag_props", "rows", "weights", "bag_weights", "margins")


class MixedBatch(NamedTuple):
    """A batch with MixBag's mixed bags (:ref:`mixbag`): its pairs, the bag
    of every pair (mixed bag ``k``: ``-1 - k``) and the mixes ``(k, 4)``."""

    pairs: np.ndarray
    codes: np.ndarray
    mixes: np.ndarray
    confidence: float


class EpochBatches:
    """One epoch's whole-bag batches, built and copied to the device at once."""

    #: The largest copy of an epoch's rows, in bytes (above: a batch's at a time).
    max_copy = 1 << 28

    def __init__(self, dataset, sampler, device=None):
        self.dataset = dataset
        self.sampler = sampler
        self.device = device

    def __len__(self):
        return len(self.sampler)

    def __iter__(self):
        batches = [
            b if isinstance(b, MixedBatch) else np.asarray(b, dtype=np.int64)
            for b in self.sampler
        ]
        if not batches:
            return
        data = self.dataset
        home = data.X.device if torch.is_tensor(data.X) else torch.device("cpu")
        device = home if self.device is None else torch.device(self.device)
        # "cuda" is wherever X went (cuda:0 by default): no copy then
        gather_there = torch.is_tensor(data.X) and home.type == device.type
        gather_there = gather_there and device.index in (None, home.index)
        device = home if gather_there else device
        plan, cuts = self._plan(batches)
        on = {k: torch.from_numpy(plan[k]).to(device) for k in plan if k not in _HOST}
        on["bag_props"] = data.bag_props.to(device)[on["bag_index"]]
        if data.weights is not None:
            on["weights"] = data.weights.to(device)[on["rows"]]
        if data.bag_weights is not None:
            on["bag_weights"] = data.bag_weights.to(device)[on["bag_index"]]
        if "mixes" in plan:
            self._mixed_labels(plan, on)
        if data.bag_numbers is not None:
            numbers = torch.from_numpy(data.bag_numbers[plan["bag_index"]])
            on["bag_index"] = numbers.to(device)
        # every batch's views, cut once an epoch: a step slices nothing
        pairs, groups, rows = (np.diff(cut).tolist() for cut in cuts)
        cut = dict.fromkeys(("segments", "members", "member_order"), pairs)
        cut |= dict.fromkeys(("rows", "member_counts", "weights", "X"), rows)
        # a batch's offsets: one per group, then its end
        cut |= {"segment_offsets": [k + 1 for k in groups]}
        cut |= {"member_offsets": [k + 1 for k in rows]}
        if gather_there and data.X[:1].nbytes * len(on["rows"]) <= self.max_copy:
            on["X"] = data.X.index_select(0, on["rows"])  # memory: a copy of them
        parts = {k: t.split(cut.get(k, groups)) for k, t in on.items()}
        sizes, largest = plan["sizes"].tolist(), plan["largest_bag"].tolist()
        for b, views in enumerate(zip(*parts.values())):
            part = dict(zip(parts, views))
            target = {k: part[k] for k in _PLAIN if k in part}
            target["largest_bag"] = largest[b]
            seg = [part[k] for k in ("segments", "segment_offsets", "segment_counts")]
            target["segments"] = attach_plan(*seg, sizes[b] or None)
            if data.overlapping:  # the gather's backward sums by member
                mem = [part[k] for k in ("members", "member_offsets", "member_counts")]
                target["members"] = attach_plan(*mem, None, part["member_order"])
            if "X" not in part:  # a batch's rows; sparse ones densified on the host
                at = slice(cuts[2][b], cuts[2][b + 1])
                rows_b = part["rows"] if gather_there else plan["rows"][at]
                part["X"] = take_rows(data.X, rows_b).to(device)
            yield part["X"], target

    def _mixed_labels(self, plan, on):
        """Mixed bags' labels, weights and half-widths (-1 elsewhere) in ``on``."""
        data, mixes, where = self.dataset, plan["mixes"], plan["mixed"]
        # a mixed bag's loss scores its rows' weighted mean: weight the mix so
        totals = None if data.weights is None else data.bags.total_weights()
        props, sizes = np.asarray(data.values, dtype=np.float64), data.bags.sizes
        labels, half = mixed_bag_labels(props, sizes, mixes, plan["confidence"], totals)
        at = torch.from_numpy(np.flatnonzero(where)).to(on["bag_props"].device)
        on["bag_props"] = on["bag_props"].clone()
        on["bag_props"][at] = torch.from_numpy(labels).to(on["bag_props"])
        on["margins"] = torch.full_like(on["bag_props"], -1.0)
        on["margins"][at] = torch.from_numpy(half).to(on["margins"])
        if "bag_weights" in on:
            by_share = data.bag_weights.numpy()[:, None]  # mixed as the labels
            mixed = mixed_bag_labels(by_share, sizes, mixes, 0.5, totals)[0][:, 0]
            on["bag_weights"] = on["bag_weights"].clone()
            on["bag_weights"][at] = torch.from_numpy(mixed).to(on["bag_weights"])

    def _plan(self, batches):
        """Host arrays of the whole epoch, and the cuts of pairs, segments, rows."""
        data = self.dataset
        mixed = [b for b in batches if isinstance(b, MixedBatch)]
        codes = [b.codes if isinstance(b, MixedBatch) else None for b in batches]
        batches = [b.pairs if isinstance(b, MixedBatch) else b for b in batches]
        n_pairs = np.array([len(b) for b in batches])
        pair_cuts = np.r_[0, np.cumsum(n_pairs)]
        pairs = np.concatenate(batches)
        batch_of_pair = np.repeat(np.arange(len(batches)), n_pairs)
        # a segment starts where the bag changes or a batch starts
        bag_of_pair = data.pair_bags[pairs]
        if mixed:  # mixed bag k of a batch: -1 - k
            bag_of_pair = np.concatenate(
                [data.pair_bags[b] if c is None else c for b, c in zip(batches, codes)]
            )
        new_bag = np.ones(len(pairs), dtype=bool)
        np.not_equal(bag_of_pair[1:], bag_of_pair[:-1], out=new_bag[1:])
        new_bag[pair_cuts[:-1]] = True
        segment = np.cumsum(new_bag) - 1
        segment_cuts = np.r_[segment[pair_cuts[:-1]], segment[-1] + 1]
        starts = np.flatnonzero(new_bag)
        counts = np.diff(np.r_[starts, len(pairs)])
        # bags of one size in a batch are summed by a reshape
        low = np.minimum.reduceat(counts, segment_cuts[:-1])
        high = np.maximum.reduceat(counts, segment_cuts[:-1])
        plan = {
            "segments": segment - segment[pair_cuts[:-1]][batch_of_pair],
            "segment_offsets": _local_offsets(starts, segment_cuts, pair_cuts),
            "segment_counts": counts,
            "sizes": np.where(low == high, low, 0),
            "largest_bag": high,
            "bag_index": bag_of_pair[new_bag],
        }
        if mixed:  # a mixed bag is indexed as its first bag
            mixes = np.concatenate([b.mixes for b in mixed])
            plan["mixed"] = plan["bag_index"] < 0
            plan["bag_index"][plan["mixed"]] = mixes[:, 0]
            plan["mixes"] = mixes
            plan["confidence"] = mixed[0].confidence
        members = data.bags.members[pairs]
        if not data.overlapping:
            plan["rows"] = members
            return plan, (pair_cuts, segment_cuts, pair_cuts)
        # each batch's distinct rows, sorted, and every pair's row among them
        n_rows = data.bags.n_samples
        keys, inverse = np.unique(batch_of_pair * n_rows + members, return_inverse=True)
        row_cuts = np.searchsorted(keys // n_rows, np.arange(len(batches) + 1))
        local = inverse.ravel() - row_cuts[batch_of_pair]
        # the gather's backward sums pairs by row: their stable order by row
        order = np.lexsort((local, batch_of_pair))
        per_row = np.bincount(inverse.ravel(), minlength=len(keys))
        plan.update(
            rows=keys % n_rows,
            members=local,
            member_order=order - pair_cuts[batch_of_pair],
            member_offsets=_local_offsets(
                np.r_[0, np.cumsum(per_row)[:-1]], row_cuts, pair_cuts
            ),
            member_counts=per_row,
        )
        return plan, (pair_cuts, segment_cuts, row_cuts)


def _local_offsets(starts, group_cuts, pair_cuts):
    """Every batch's group starts relative to its first pair, and its size."""
    n_batches = len(pair_cuts) - 1
    n_groups = np.diff(group_cuts)
    out = np.empty(len(starts) + n_batches, dtype=np.int64)
    is_end = np.zeros(len(out), dtype=bool)
    is_end[group_cuts[1:] + np.arange(n_batches)] = True
    out[is_end] = np.diff(pair_cuts)
    out[~is_end] = starts - np.repeat(pair_cuts[:-1], n_groups)
    return out


class BagBatchSampler(Sampler):
    """Batches of whole bags, packed to about ``batch_size`` rows.

    Every epoch the bags are shuffled afresh and packed as if cut to
    ``max_bag_size``, but whole (the step computes a batch holding a larger
    bag in chunks, :ref:`mini_bags`); ``codes`` is the bag of every pair; it
    yields arrays of pair indices."""

    def __init__(
        self,
        codes,
        batch_size,
        max_bag_size=None,
        shuffle=True,
        random_state=None,
        mixbag=None,
    ):
        self.codes = np.asarray(codes, dtype=np.int64)
        self.batch_size = batch_size
        self.max_bag_size = max_bag_size
        self.shuffle = shuffle
        self.rng = check_random_state(random_state)  # an instance is shared
        self.sizes = np.bincount(self.codes)
        self.mixbag = mixbag  # a MixBag: mixed bags join every epoch

    @staticmethod
    def count(sizes, batch_size, max_bag_size=None, mixbag=None):
        """Batches of an epoch of bags of ``sizes`` (mixed bags after them)."""
        sizes = _capped(sizes, max_bag_size)
        if mixbag is not None and len(sizes):
            n_mixed = mixbag.n_mixed_bags(len(sizes))
            sizes = np.r_[sizes, np.full(n_mixed, int(np.median(sizes)))]
        offsets = np.cumsum(sizes) - sizes
        return max(1, len(np.unique(offsets // batch_size)))

    def batches(self):
        """The index arrays of one epoch."""
        n_bags = len(self.sizes)
        if self.shuffle:  # bags in a random order, rows shuffled within each
            bag_order = self.rng.permutation(n_bags)
            within = self.rng.random_sample(len(self.codes))
            rank = np.empty(n_bags, dtype=np.int64)
            rank[bag_order] = np.arange(n_bags)
            order = _lexsort(within, rank[self.codes])
        else:  # bags and rows in order: every key ties within a bag
            bag_order = np.arange(n_bags)
            order = np.argsort(self.codes, kind="stable")
        sizes = self.sizes[bag_order]
        if self.mixbag is not None and n_bags > 1:
            return self._mixed_batches(order, bag_order, sizes)
        capped = _capped(sizes, self.max_bag_size)
        batch_of_bag = (np.cumsum(capped) - capped) // self.batch_size
        starts = np.cumsum(sizes) - sizes
        return np.split(order, starts[np.flatnonzero(np.diff(batch_of_bag)) + 1])

    def _mixed_rows(self, mixes):
        """The pairs of every mixed bag, each part drawn without replacement."""
        by_bag = np.argsort(self.codes, kind="stable")
        starts = np.cumsum(self.sizes) - self.sizes
        source, taken = mixes[:, :2].ravel(), mixes[:, 2:].ravel()
        n_source = self.sizes[source]
        part = np.repeat(np.arange(len(source)), n_source)
        within = np.arange(len(part)) - np.repeat(
            np.cumsum(n_source) - n_source, n_source
        )
        candidates = by_bag[starts[source][part] + within]
        shuffled = np.lexsort((self.rng.random_sample(len(part)), part))
        return candidates[shuffled][within < taken[part]]

    def _mixed_batches(self, order, bag_order, sizes):
        """The epoch's bags and mixed bags, shuffled together and packed."""
        n_bags = len(self.sizes)
        mixes = self.mixbag.draw(
            self.sizes, _capped(self.sizes, self.max_bag_size), self.rng
        )
        n_mixed = len(mixes)
        items = self.rng.permutation(n_bags + n_mixed)
        item_sizes = np.r_[sizes, mixes[:, 2] + mixes[:, 3]]
        source = np.r_[order, self._mixed_rows(mixes)]
        starts = np.cumsum(item_sizes) - item_sizes
        new_sizes = item_sizes[items]
        new_starts = np.cumsum(new_sizes) - new_sizes
        within = np.arange(new_sizes.sum()) - np.repeat(new_starts, new_sizes)
        pairs = source[np.repeat(starts[items], new_sizes) + within]
        # packed as if cut to max_bag_size (mixed bags are at most that)
        packed = _capped(new_sizes, self.max_bag_size)
        batch_of_item = (np.cumsum(packed) - packed) // self.batch_size
        # the bag of every pair: mixed bags numbered in order within a batch
        is_mixed = items >= n_bags
        rank = np.cumsum(is_mixed) - 1
        first = np.r_[0, np.cumsum(is_mixed)][
            np.searchsorted(batch_of_item, batch_of_item)
        ]
        item_codes = np.where(is_mixed, -1 - (rank - first), -1)
        item_codes[~is_mixed] = bag_order[items[~is_mixed]]
        codes = np.repeat(item_codes, new_sizes)
        item_cuts = np.flatnonzero(np.diff(batch_of_item)) + 1
        pair_cuts = new_starts[item_cuts]
        mixed_table = mixes[items[is_mixed] - n_bags]
        mixed_cuts = np.cumsum(is_mixed)[item_cuts - 1]
        confidence = float(self.mixbag.confidence)
        return [
            MixedBatch(p, c, m, confidence)
            for p, c, m in zip(
                np.split(pairs, pair_cuts),
                np.split(codes, pair_cuts),
                np.split(mixed_table, mixed_cuts),
            )
        ]

    def __iter__(self):
        return iter(self.batches())

    def __len__(self):
        # batches of the unshuffled order; a shuffled epoch differs by a few
        return self.count(self.sizes, self.batch_size, self.max_bag_size, self.mixbag)


def _lexsort(within, rank):
    """``np.lexsort((within, rank))``, ``within`` in [0, 1), in a third of its
    time: one sort of their sum, unless it rounds two keys alike (ties)."""
    key = rank + within
    order = np.argsort(key)
    if (key[order[1:]] > key[order[:-1]]).all():
        return order
    return np.lexsort((within, rank))


def _capped(sizes, max_bag_size):
    """Bag sizes at most ``max_bag_size``: as batches are packed."""
    return sizes if max_bag_size is None else np.minimum(sizes, max_bag_size)


class ArrayDataset(torch.utils.data.Dataset):
    """Plain instances for prediction, indexed by arrays of rows."""

    def __init__(self, X):
        self.X = X

    def __len__(self):
        return self.X.shape[0]

    def __getitem__(self, idx):
        return take_rows(self.X, idx), torch.empty(0)


def array_loader(dataset, batch_size):
    """Sequential batches of ``batch_size`` rows, fetched one array at a time."""
    sampler = BatchSampler(SequentialSampler(dataset), batch_size, drop_last=False)
    return DataLoader(dataset, sampler=sampler, batch_size=None)
