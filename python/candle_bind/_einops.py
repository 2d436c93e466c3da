"""einops backend for candle_bind tensors: `einops.rearrange/reduce/repeat/einsum/pack` accept them.

Imported by candle_bind as soon as einops' backend registry exists (see `_hook_einops` in
`__init__`), so einops finds it by subclass scan like its built-in backends. Under the zero-edit
shim einops' own torch backend and `einops.layers.torch` resolve to candle_bind as well.
"""

from einops._backends import AbstractBackend

import candle_bind


class CandleBindBackend(AbstractBackend):
    framework_name = "candle_bind"

    def is_appropriate_type(self, tensor):
        return isinstance(tensor, candle_bind.Tensor)

    def from_numpy(self, x):
        return candle_bind.from_numpy(x)

    def to_numpy(self, x):
        return x.cpu().numpy()

    def arange(self, start, stop):
        return candle_bind.arange(start, stop, dtype=candle_bind.int64)

    def shape(self, x):
        return x.shape

    def reshape(self, x, shape):
        return x.reshape(shape)

    def reduce(self, x, operation, reduced_axes):
        if operation in ("min", "max"):
            return getattr(x, "a" + operation)(dim=reduced_axes)
        if operation in ("sum", "mean"):
            return getattr(x, operation)(dim=reduced_axes)
        if operation in ("any", "all", "prod"):  # one dim at a time, as torch's
            for i in sorted(reduced_axes)[::-1]:
                x = getattr(x, operation)(dim=i)
            return x
        raise NotImplementedError("Unknown reduction ", operation)

    def transpose(self, x, axes):
        return x.permute(axes)

    def stack_on_zeroth_dimension(self, tensors: list):
        return candle_bind.stack(tensors)

    def add_axis(self, x, new_position):
        return x.unsqueeze(new_position)

    def add_axes(self, x, n_axes, pos2len):
        repeats = [-1] * n_axes
        for axis_position, axis_length in pos2len.items():
            x = x.unsqueeze(axis_position)
            repeats[axis_position] = axis_length
        return x.expand(repeats)

    def tile(self, x, repeats):
        return x.repeat(repeats)

    def concat(self, tensors, axis: int):
        return candle_bind.cat(tensors, dim=axis)

    def is_float_type(self, x):
        return x.is_floating_point()

    def einsum(self, pattern, *x):
        return candle_bind.einsum(pattern, *x)
