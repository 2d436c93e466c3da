"""torch.ao.nn: the quantized module families (only `quantized`, with its dynamic Linear, exists here)."""

__all__ = ["quantized"]


def __getattr__(name):
    if name == "quantized":
        import importlib

        return importlib.import_module(f"{__name__}.quantized")
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"torch.ao.nn.{name} is not supported by candle_bind yet")
