"""torch.nn.modules.batchnorm: the BatchNorm classes under their torch file's name."""

from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm, _BatchNorm, _NormBase  # noqa: F401
