"""torch.nn.modules.instancenorm: the InstanceNorm classes under their torch file's name."""

from .normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, _InstanceNorm  # noqa: F401
