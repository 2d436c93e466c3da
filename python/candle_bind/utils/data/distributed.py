"""torch.utils.data.distributed: one process here, so a DistributedSampler is its one replica's
sampler over the whole dataset (shuffled per epoch when asked)."""

from __future__ import annotations

from . import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        self.dataset, self.shuffle, self.seed, self.epoch = dataset, shuffle, seed, 0
        self.num_replicas, self.rank = num_replicas or 1, rank or 0

    def __iter__(self):
        import candle_bind

        n = len(self.dataset)
        if not self.shuffle:
            return iter(range(self.rank, n, self.num_replicas))
        candle_bind.manual_seed(self.seed + self.epoch)
        return iter(candle_bind.randperm(n).tolist()[self.rank::self.num_replicas])

    def __len__(self):
        return len(range(self.rank, len(self.dataset), self.num_replicas))

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
