"""int8 and int16 tensors as torch's: int16 has Candle storage; int8 is a logical dtype over int16
storage (as bool is over uint8) whose results wrap into int8's range, as torch's int8 arithmetic
does. Compared live against torch, including checkpoints written by torch and by safetensors."""

import numpy as np
import pytest
import torch

import candle_bind as cb

X = {
    "int8": np.array([[1, -2, 127], [4, 5, -128]], dtype=np.int8),
    "int16": np.array([[1, -2, 32767], [300, 5, -32768]], dtype=np.int16),
}

OPS = {
    "add": lambda m, t: t + t,
    "add_scalar": lambda m, t: t + 100,
    "mul": lambda m, t: t * 3,
    "neg": lambda m, t: -t,
    "abs": lambda m, t: t.abs(),
    "sign": lambda m, t: t.sign(),
    "invert": lambda m, t: ~t,
    "and": lambda m, t: t & 3,
    "floordiv": lambda m, t: t // 2,
    "remainder": lambda m, t: t % 7,
    "pow": lambda m, t: t ** 2,
    "div": lambda m, t: t / 2,
    "float_mul": lambda m, t: t * 0.5,
    "eq": lambda m, t: t == 5,
    "where": lambda m, t: m.where(t > 0, t, 0),
    "clamp": lambda m, t: t.clamp(-5, 5),
    "sum": lambda m, t: t.sum(),
    "sum_dim": lambda m, t: t.sum(1),
    "cumsum": lambda m, t: t.cumsum(0),
    "prod": lambda m, t: t.prod(1),
    "max": lambda m, t: t.max(1)[0],
    "min": lambda m, t: t.min(),
    "argmax": lambda m, t: t.argmax(),
    "sort": lambda m, t: t.sort()[0],
    "index": lambda m, t: t[:, 1],
    "transpose": lambda m, t: t.T.contiguous(),
    "cat": lambda m, t: m.cat([t, t]),
    "clone": lambda m, t: t.clone(),
    "to_long": lambda m, t: t.long(),
    "to_float": lambda m, t: t.float(),
    "long_back": lambda m, t: (t.long() * 50).to(t.dtype),
    "float_back": lambda m, t: (t.float() * 0.7).to(t.dtype),
    "add_": lambda m, t: t.clone().add_(100),
    "mul_": lambda m, t: t.clone().mul_(2),
    "setitem": lambda m, t: (lambda c: (c.__setitem__((0, 0), 9), c)[1])(t.clone()),
    "promote_uint8": lambda m, t: t + m.ones(3, dtype=m.uint8),
    "promote_int16": lambda m, t: t + m.ones(3, dtype=m.int16),
    "promote_int32": lambda m, t: t + m.ones(3, dtype=m.int32),
    "tolist": lambda m, t: m.tensor(t.tolist(), dtype=t.dtype),
    "item": lambda m, t: m.tensor(t[1, 2].item()),
    "zeros": lambda m, t: m.zeros(3, dtype=t.dtype),
    "full": lambda m, t: m.full((2,), -7, dtype=t.dtype),
    "arange": lambda m, t: m.arange(5, dtype=t.dtype),
    "char": lambda m, t: t.long().char(),
    "short": lambda m, t: t.long().short(),
    "max_pool": lambda m, t: m.nn.functional.max_pool1d(t.reshape(1, 2, 3), 2),
}


def _run(m, op, dtype):
    out = OPS[op](m, m.from_numpy(X[dtype].copy()))
    return str(out.dtype), tuple(out.shape), out.numpy()


@pytest.mark.parametrize("dtype", list(X))
@pytest.mark.parametrize("op", list(OPS))
def test_op_matches_torch(op, dtype):
    if op == "max_pool":
        pytest.skip("torch has no integer max_pool1d kernel")
    try:
        want = _run(torch, op, dtype)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            _run(cb, op, dtype)
        return
    got = _run(cb, op, dtype)
    assert got[:2] == want[:2]
    assert got[2].dtype == want[2].dtype and np.array_equal(got[2], want[2]), (got[2], want[2])


@pytest.mark.parametrize("dtype", list(X))
def test_numpy_round_trip_and_repr(dtype):
    t = cb.from_numpy(X[dtype])
    assert t.dtype == getattr(cb, dtype) and t.element_size() == np.dtype(dtype).itemsize
    assert t.numpy().dtype == X[dtype].dtype and np.array_equal(t.numpy(), X[dtype])
    assert repr(t) == repr(torch.from_numpy(X[dtype]))


@pytest.mark.parametrize("dtype", list(X))
def test_safetensors_both_ways(tmp_path, dtype):
    from safetensors.torch import load_file, save_file
    from candle_bind.safetensors import load_file as cb_load, save_file as cb_save

    save_file({"w": torch.from_numpy(X[dtype])}, str(tmp_path / "t.safetensors"))
    ours = cb_load(str(tmp_path / "t.safetensors"))["w"]
    assert ours.dtype == getattr(cb, dtype) and np.array_equal(ours.numpy(), X[dtype])
    cb_save({"w": ours}, str(tmp_path / "u.safetensors"))
    back = load_file(str(tmp_path / "u.safetensors"))["w"]
    assert back.dtype == getattr(torch, dtype) and np.array_equal(back.numpy(), X[dtype])


@pytest.mark.parametrize("dtype", list(X))
def test_torch_save_both_ways(tmp_path, dtype):
    torch.save({"w": torch.from_numpy(X[dtype]), "v": torch.from_numpy(X[dtype])[:, 1:]}, tmp_path / "t.pt")
    ours = cb.load(tmp_path / "t.pt")
    assert ours["w"].dtype == getattr(cb, dtype) and np.array_equal(ours["w"].numpy(), X[dtype])
    assert np.array_equal(ours["v"].numpy(), X[dtype][:, 1:])
    cb.save(ours, tmp_path / "u.pt")
    back = torch.load(tmp_path / "u.pt", weights_only=True)
    assert back["w"].dtype == getattr(torch, dtype) and np.array_equal(back["w"].numpy(), X[dtype])
