"""torch.<name> and Tensor.<name> for the linalg-backed functions beyond the first few (torch.lu,
torch.cholesky_solve, Tensor.matrix_exp, ...): forwarders to candle_bind.linalg.TOP_LEVEL, so numpy
loads on the first call, not at `import candle_bind`. torch.norm / Tensor.norm: the Rust kernel, with the
nuclear norm (an SVD) added from linalg."""

from ._C import Tensor


def _forward(name):
    def fn(*args, **kwargs):
        from .linalg import TOP_LEVEL

        return TOP_LEVEL[name](*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    return fn


_kernel_norm = Tensor.norm


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    if isinstance(p, Tensor):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not Tensor")
    if p == "nuc":
        if input.is_complex():
            raise NotImplementedError("norm(p='nuc') is not supported for complex tensors by candle_bind yet")
        from .linalg import matrix_norm

        if dim is None and input.dim() != 2:
            raise RuntimeError(f"linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
        return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim, dtype=dtype, out=out)
    kwargs = {} if out is None else {"out": out}
    if dtype is not None:
        kwargs["dtype"] = dtype
    return _kernel_norm(input, p, dim, keepdim, **kwargs)


from ._tensor import _Checked  # noqa: E402

Tensor.norm = _Checked(norm, _kernel_norm)  # over the Rust method (the family loop sets only missing ones)
FUNCTIONS = ("norm", "cholesky_inverse", "cholesky_solve", "geqrf", "orgqr", "ormqr", "triangular_solve", "lu", "lu_solve",
             "lu_unpack", "matrix_exp")
METHODS = ("cholesky_inverse", "cholesky_solve", "geqrf", "orgqr", "ormqr", "triangular_solve", "lu", "lu_solve",
           "matrix_exp")
INPLACE = ()
for _name in FUNCTIONS[1:]:
    globals()[_name] = _forward(_name)
del _name
