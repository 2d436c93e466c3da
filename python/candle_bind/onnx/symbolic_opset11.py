"""torch.onnx.symbolic_opset11: imported by libraries that register ONNX symbolics; its functions build ONNX
graphs during an export, which candle_bind does not do."""


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"torch.onnx.symbolic_opset11.{name} is not supported by candle_bind (no ONNX export)")
