"""Tensor.stft / Tensor.istft: the methods of torch.stft / torch.istft (candle_bind/_spectral.py, which
loads numpy, imported on first call)."""

FUNCTIONS = ()
METHODS = ("stft", "istft")
INPLACE = ()


def stft(self, *args, **kwargs):
    from ._spectral import stft as run

    return run(self, *args, **kwargs)


def istft(self, *args, **kwargs):
    from ._spectral import istft as run

    return run(self, *args, **kwargs)
