"""torch._dynamo.eval_frame: `OptimizedModule`, the wrapper torch.compile puts around a module.
`torch.compile` hands modules back unchanged here, so no module is ever one; accelerate's
`unwrap_model` and transformers test `isinstance(model, OptimizedModule)` and take the plain path."""

__all__ = ["OptimizedModule"]


class OptimizedModule:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("torch.compile does not wrap modules under candle_bind: nothing is compiled")
