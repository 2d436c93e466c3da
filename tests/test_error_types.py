"""Bad arguments raise torch's exception type (OpInfo error_inputs): each call runs under real torch and
candle_bind (`m` is the module), and both must raise the same type (or both succeed)."""

import pytest
import torch

import candle_bind as cb

CALLS = [
    # a Python number where torch has no Scalar `input` overload: TypeError
    "m.eq(2, m.tensor([1, 2]))", "m.atan2(2, m.tensor([1., 2.]))", "m.clamp_max(2, 3)", "m.ge(2, 3)",
    "m.copysign(2, m.tensor([1., 2.]))", "m.fmod(2, 3)", "m.hypot(2, m.tensor([1., 2.]))",
    "m.fmax(2, m.tensor([1., 2.]))", "m.logaddexp(2, m.tensor([1., 2.]))", "m.logical_and(2, m.tensor([1]))",
    "m.max(2, m.tensor([1, 2]))", "m.min(2, 3)", "m.rsub(2, m.tensor([1, 2]))", "m.float_power(2, 3)",
    "m.xlogy(2, 3)", "m.special.xlog1py(2, 3)", "m.igamma(m.tensor([1, 2]), 2)", "m.igammac(2, m.tensor([1.]))",
    "m.remainder(2, 3)", "m.pow(2, 3)",
    # ... and where it has one: a result
    "m.pow(2, m.tensor([1., 2.]))", "m.remainder(7, m.tensor([2, 3]))", "m.add(7, 2)", "m.div(7, 2)",
    "m.xlogy(2, m.tensor([1., 2.]))", "m.bitwise_and(3, m.tensor([1, 2]))", "m.rsub(m.tensor([1, 2]), 2)",
    # isclose's tolerances
    "m.isclose(m.ones(2), m.ones(2), rtol=-0.4)", "m.ones(2).isclose(m.ones(2), atol=-1.0)",
    "m.isclose(2, m.ones(2))",
    # movedim / diag_embed dims: IndexError out of range, RuntimeError repeated
    "m.movedim(m.ones(2, 3, 4), [1, 0, 2], [0, 2, -3])", "m.movedim(m.ones(2, 3, 4), [1, 0, -2], [0, 2, 1])",
    "m.movedim(m.ones(2, 3, 4), [0, -4], [1, 2])", "m.moveaxis(m.ones(2, 3), 3, 0)",
    "m.ones(2, 3).movedim(0, -3)", "m.movedim(m.tensor(1.), 0, -1)", "m.movedim(m.ones(2, 3, 4), (0, -1), (2, 0))",
    "m.diag_embed(m.ones(2, 3), dim1=1, dim2=1)", "m.diag_embed(m.ones(2, 3), dim1=10000)",
    "m.ones(2, 3).diag_embed(dim2=-4)", "m.diag_embed(m.ones(2, 3), 1, 0, 2)",
    # kthvalue's k, masked_fill's complex value
    "m.kthvalue(m.ones(2, 2), 3, 0)", "m.ones(2, 2).kthvalue(0)", "m.kthvalue(m.tensor(1), 3)",
    "m.kthvalue(m.ones(2, 2), 1, 5)", "m.kthvalue(m.arange(6.).reshape(2, 3), 2, -1)",
    "m.ones(2, 2).masked_fill(m.tensor(True), 1j)",
    # empty lists, negative sizes, linalg.cross shapes, complex(out=)
    "m.cat([], dim=1)", "m.cat(m.ones(2, 3), out=m.zeros(2, 3))", "m.cat((m.ones(1), m.ones(2)))", "m.hstack([])", "m.eye(-1)", "m.eye(2, -3)", "m.eye(2, 3)",
    "m.linalg.cross(m.ones(5, 3), m.ones(5, 1))", "m.linalg.cross(m.ones(5, 5, 3), m.ones(5, 3))",
    "m.linalg.cross(m.ones(5, 3), m.ones(5, 3))",
    "m.complex(m.ones(2, dtype=m.float64), m.ones(2, dtype=m.float64), out=m.zeros(2, dtype=m.complex64))",
    # out= of a native method: torch's checks, then the result written
    "m.gather(m.ones(2, 2), 1, m.zeros(2, 2, dtype=m.int64), out=m.zeros(2, 2, dtype=m.float64))",
    "m.gather(m.arange(4.).reshape(2, 2), 1, m.ones(2, 2, dtype=m.int64), out=m.zeros(2, 2))",
    "m.index_select(m.arange(6.).reshape(3, 2), 0, m.tensor([2, 0]), out=m.zeros(2, 2))",
    "(lambda t: m.index_select(t, 0, m.tensor([0, 1]), out=t))(m.ones(3, 2))",
    "(lambda t: m.kthvalue(t, 1, out=(t[:1], m.zeros((), dtype=m.int64))))(m.arange(4.))",
]


def outcome(call: str, m):
    try:
        r = eval(call, {"m": m})  # noqa: S307 - our own test expressions
    except Exception as e:  # noqa: BLE001
        return type(e)
    if isinstance(r, tuple):
        r = r[0]
    return r.tolist() if hasattr(r, "tolist") else r


@pytest.mark.parametrize("call", CALLS)
def test_same_error_type(call):
    want, got = outcome(call, torch), outcome(call, cb)
    if isinstance(want, type):
        assert isinstance(got, type), f"no error, torch raised {want.__name__}"
        assert issubclass(got, want), f"raised {got.__name__}, torch {want.__name__}"
    else:
        assert not isinstance(got, type), f"raised {got.__name__}, torch returned {want}"
        assert got == pytest.approx(want, nan_ok=True) if not isinstance(want, list) else \
            torch.allclose(torch.tensor(got, dtype=torch.float64), torch.tensor(want).to(torch.float64))
