"""Data-parallel training with Hugging Face Accelerate (skorch's mixin): whole-bag
batches are dealt to the processes; held-out bags and predictions are not sharded."""

import numpy as np
import torch
from sklearn.utils import check_random_state
from skorch.hf import AccelerateMixin

from ..neural import LLPClassifier, ShardedBatchSampler
from ..neural._stream import StreamedEpochs


class LLPAccelerateMixin(AccelerateMixin):
    """skorch's ``AccelerateMixin`` for the bag estimators."""

    # --- parameters and device ---
    def _check_params(self):
        super()._check_params()
        if self.accelerator.device_placement and self.device is not None:
            raise ValueError(
                f"device={self.device!r}: the accelerator places the network "
                "(device_placement=True); leave device=None."
            )
        if self.precision != "float32":
            raise ValueError(
                f"precision={self.precision!r}: set mixed precision on the "
                "accelerator instead, Accelerator(mixed_precision='bf16')."
            )

    def _validate_params(self):
        # skorch's checks, without AccelerateMixin's device=None check: while
        # the estimator works, None stands for the accelerator's device
        super(AccelerateMixin, self)._validate_params()

    def _resolved_device(self):
        if self.device is None:
            return self.accelerator.device
        return super()._resolved_device()

    def _initialize_callbacks(self):
        if self.callbacks__print_log__sink != "auto":
            return super()._initialize_callbacks()
        # the main process prints, verbose=0 is silent; the parameter stays
        # "auto", so that clone() copies no fitted estimator
        self.callbacks__print_log__sink = self._print_on_main
        try:
            return super()._initialize_callbacks()
        finally:
            self.callbacks__print_log__sink = "auto"

    def _print_on_main(self, *args, **kwargs):
        if self.verbose:
            self.accelerator.print(*args, **kwargs)

    # --- data: whole bags per process, no accelerate sharding ---
    def _train_sampler(self, dataset, random_state=None):
        sampler = super()._train_sampler(dataset, random_state)
        n, rank = self.accelerator.num_processes, self.accelerator.process_index
        return sampler if n == 1 else ShardedBatchSampler(sampler, n, rank)

    def get_iterator(self, dataset, training=False):
        """The estimator's iterators, not sharded by the accelerator (whole bags)."""
        iterator = super(AccelerateMixin, self).get_iterator(dataset, training)
        if isinstance(iterator, StreamedEpochs) and self.accelerator.num_processes > 1:
            rank, n = self.accelerator.process_index, self.accelerator.num_processes
            sampler_of = super()._train_sampler
            iterator.deal(rank, n, self._most_steps, sampler_of)
        return iterator

    def _most_steps(self, steps):
        device = self.accelerator.device
        return int(self.accelerator.gather(torch.tensor([steps], device=device)).max())

    def evaluation_step(self, batch, training=False):
        # every process evaluated the whole batch: nothing to gather
        return super(AccelerateMixin, self).evaluation_step(batch, training=training)

    # --- training ---
    def _fit(self, *args, **kwargs):
        if self.random_state is not None or self.accelerator.num_processes == 1:
            return super()._fit(*args, **kwargs)
        # every process must split and shuffle the bags alike: the fit is
        # seeded with a seed the main process draws
        from accelerate.utils import broadcast_object_list

        seed = int(check_random_state(None).randint(np.iinfo(np.int32).max))
        self.random_state = broadcast_object_list([seed])[0]
        try:
            return super()._fit(*args, **kwargs)
        finally:
            self.random_state = None

    def initialize(self):
        # a new network (a fresh fit) is prepared anew
        self._wrapped_with_accelerator = False
        return super().initialize()

    def _initialize_accelerator(self):
        super()._initialize_accelerator()
        return self._no_buffer_sync()

    def _no_buffer_sync(self):
        """Buffers (the MLP's input statistics) are set alike on every process
        from the same rows and never change in training; DDP's broadcast of
        them is a collective per forward, which hangs when processes run
        different numbers of forwards (bags in chunks)."""
        for name in self._modules:
            module = getattr(self, name + "_")
            for flag in ("forward_sync_buffers", "broadcast_buffers"):
                if hasattr(module, flag):  # torch >= 2.12 / older
                    setattr(module, flag, False)
        return self

    def train_step_single(self, batch, **fit_params):
        # the estimator's step; autocast and backward are the accelerator's
        return super(AccelerateMixin, self).train_step_single(batch, **fit_params)

    def _autocast(self):
        return self.accelerator.autocast()

    def _backward(self, loss):
        self.accelerator.backward(loss)

    def _accumulating(self):
        return self.accelerator.no_sync(self.module_)

    def train_step(self, batch, **fit_params):
        step = super().train_step(batch, **fit_params)
        # the history records the mean loss over the processes: the same on
        # every process, so a diverged loss stops them all at the same step
        step["loss"] = self.accelerator.reduce(step["loss"].detach(), "mean")
        return step

    def on_train_begin(self, net, **kwargs):
        # a continued fit (warm_start, partial_fit) after unwrapping trains
        # the prepared (DistributedDataParallel) network again
        if not self._wrapped_with_accelerator:
            for name in self._modules:
                module = getattr(self, name + "_")
                setattr(self, name + "_", self.accelerator.prepare(module))
            self._no_buffer_sync()
            self._wrapped_with_accelerator = True
        return super().on_train_begin(net, **kwargs)

    def on_train_end(self, net, **kwargs):
        # unwrapping waits for _after_training: the callbacks' on_train_end
        # (early stopping's best weights) runs on the prepared network
        self.accelerator.wait_for_everyone()
        return super(AccelerateMixin, self).on_train_end(net, **kwargs)

    def _after_training(self, dataset):
        if self.unwrap_after_train:
            self._unwrap_accelerator()
        super()._after_training(dataset)


class AcceleratedLLPClassifier(LLPAccelerateMixin, LLPClassifier):
    """:class:`~sklearn_llp.LLPClassifier` trained data-parallel with Accelerate.

    Launch with ``accelerate launch --multi_gpu --num_processes N``: every
    process fits the same estimator on the same data and trains on its own
    share of whole bags (:ref:`gpu_scaling`).

    Parameters
    ----------
    accelerator : accelerate.Accelerator
        Made once per process before the estimator.
    device : None or str, default=None
        None lets the accelerator place the network and batches.
    unwrap_after_train : bool, default=True
        Unwrap the network after training, so the model predicts and pickles
        without the accelerator.
    **kwargs
        The parameters of :class:`~sklearn_llp.LLPClassifier`.

    Examples
    --------
    >>> from accelerate import Accelerator  # doctest: +SKIP
    >>> from sklearn_llp.parallel import AcceleratedLLPClassifier
    >>> clf = AcceleratedLLPClassifier(  # doctest: +SKIP
    ...     accelerator=Accelerator(), method="vat", random_state=0
    ... ).fit(X, bags, props)
    """
