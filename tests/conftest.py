"""Parity helpers: run the same call on torch and candle_bind and compare shape, dtype and values.

CANDLE_BIND_TEST_DEVICE=cuda runs the suite with candle_bind's tensors on the GPU (the default
device, and where `to_cb` puts inputs); torch, the reference, stays on the CPU."""

import os

import numpy as np
import pytest
import torch

import candle_bind as cb

TEST_DEVICE = os.environ.get("CANDLE_BIND_TEST_DEVICE", "cpu")
if TEST_DEVICE != "cpu":
    cb.set_default_device(TEST_DEVICE)
    # The tests read results back with .numpy(), as torch code writes .cpu().numpy() for a GPU tensor.
    _numpy, _array = cb.Tensor.numpy, cb.Tensor.__array__
    cb.Tensor.numpy = lambda self, *a, **k: _numpy(self.cpu(), *a, **k)
    cb.Tensor.__array__ = lambda self, *a, **k: _array(self.cpu(), *a, **k)

# Tests about the CPU itself, left out on other devices: numpy and DLPack sharing the tensor's
# memory, the repr of a CPU tensor, the default device they set, the host allocator's limits.
CPU_ONLY = ["test_repr_matches_torch", "test_numpy_shares_memory_and_strides", "test_numpy_sees_writes",
            "test_dlpack_both_ways", "test_default_device_and_context", "test_tensor_convert.py::test_devices",
            "test_huge_allocations_raise_runtime_error_like_torch", "test_out_of_memory_error_names_the_bytes",
            # `.cpu()` of a CPU tensor is the tensor itself; meta-device tests and the shim's stand-ins
            # assert the default device they expect (the CPU).
            "test_dtype_methods_and_identity", "test_meta_device_factories_views_and_writes",
            "test_module_built_on_meta_then_materialized", "test_standin_modules_under_the_shim",
            # builds its modules on the default device and feeds them CPU input
            "test_einops_layers_under_the_shim",
            # adds from_numpy's CPU tensors to factories' tensors on the default device
            "test_small_ints.py::test_op_matches_torch[promote"]


def pytest_collection_modifyitems(config, items):
    if TEST_DEVICE == "cpu":
        return
    skip = pytest.mark.skip(reason=f"about the CPU, not run on {TEST_DEVICE}")
    for item in items:
        if any(name in item.nodeid for name in CPU_ONLY):
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On CUDA, a test stopped by a dtype candle_bind keeps on the CPU (float8, refused with a
    DTypeError) is reported as skipped for that reason, not failed."""
    outcome = yield
    rep = outcome.get_result()
    if TEST_DEVICE != "cpu" and rep.failed and call.excinfo is not None and \
            "not supported on CUDA by candle_bind" in str(call.excinfo.value):
        rep.outcome = "skipped"
        rep.longrepr = (str(item.path), item.location[1] or 0, "Skipped: a dtype candle_bind keeps on the CPU")

DTYPES = {
    "float32": (torch.float32, cb.float32),
    "float64": (torch.float64, cb.float64),
    "float16": (torch.float16, cb.float16),
    "bfloat16": (torch.bfloat16, cb.bfloat16),
    "int64": (torch.int64, cb.int64),
    "int32": (torch.int32, cb.int32),
    "uint8": (torch.uint8, cb.uint8),
    "bool": (torch.bool, cb.bool),
}

# (atol, rtol) per dtype for elementwise results; reductions and matmul pass looser ones.
TOL = {
    "float32": (1e-5, 1e-4),
    "float64": (1e-10, 1e-9),
    "float16": (2e-3, 2e-3),
    "bfloat16": (2e-2, 2e-2),
    "complex64": (1e-5, 1e-4),
    "complex128": (1e-10, 1e-9),
}


def llama_cpp_reference():
    """llama_cpp (the reference engine of the model tests), or the test skips. On a CPU with AMX its
    weights stay in plain buffers: llama.cpp's AMX matmul faults there on its first product
    (ggml-org/llama.cpp#20824: `ldtilecfg` on a tile config the compiler dropped, fix pending in
    #26954), and without extra buffers it runs the ggml dot products it runs everywhere else."""
    pytest.importorskip("llama_cpp")
    return _bench_harness().llama_cpp()


def _bench_harness():
    """benches/harness.py, loaded by path (benches/ on sys.path would shadow names such as `models`)."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benches", "harness.py")
    spec = importlib.util.spec_from_file_location("candle_bind_bench_harness", path)
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)
    return harness


def to_cb(t: torch.Tensor) -> cb.Tensor:
    """The same values as a candle_bind tensor (through numpy; bf16 through float32)."""
    if t.dtype == torch.bfloat16:
        return cb.from_numpy(t.float().numpy()).to(cb.bfloat16).to(TEST_DEVICE)
    return cb.from_numpy(t.resolve_conj().resolve_neg().contiguous().numpy()).to(TEST_DEVICE)


def to_np(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return (x.float() if x.dtype == torch.bfloat16 else x).resolve_conj().resolve_neg().numpy()
    if x.dtype == cb.bfloat16:
        return x.float().cpu().numpy()
    return x.cpu().numpy()


def dtype_name(d) -> str:
    return repr(d).rsplit(".", 1)[-1]


def assert_same(ours, ref, atol=None, rtol=None):
    """Shape, dtype, then values (NaN positions must agree)."""
    if isinstance(ref, (tuple, list)):
        assert len(ours) == len(ref)
        for o, r in zip(ours, ref):
            assert_same(o, r, atol, rtol)
        return
    if not isinstance(ref, torch.Tensor):
        assert ours == ref or (isinstance(ref, float) and np.isclose(ours, ref, atol=atol or 1e-6, rtol=rtol or 1e-5))
        return
    assert isinstance(ours, cb.Tensor), type(ours)
    assert tuple(ours.shape) == tuple(ref.shape), (ours.shape, ref.shape)
    name = dtype_name(ref.dtype)
    assert dtype_name(ours.dtype) == name, (ours.dtype, ref.dtype)
    a, b = to_np(ours), to_np(ref)
    if name in TOL:
        da, dr = TOL[name]
        np.testing.assert_allclose(a, b, atol=atol if atol is not None else da, rtol=rtol if rtol is not None else dr,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(a, b)


def make(shape, dtype="float32", low=-3.0, high=3.0, seed=0):
    """A torch tensor of `dtype` with varied values (ints in a small range, bools random)."""
    g = torch.Generator().manual_seed(seed)
    tdt = DTYPES[dtype][0]
    if dtype == "bool":
        return torch.rand(shape, generator=g) > 0.5
    if dtype == "uint8":
        return torch.randint(0, 10, shape, generator=g, dtype=torch.uint8)
    if tdt in (torch.int32, torch.int64):
        return torch.randint(-5, 6, shape, generator=g, dtype=tdt)
    return (torch.rand(shape, generator=g, dtype=torch.float64) * (high - low) + low).to(tdt)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    cb.manual_seed(0)


def check_layer(torch_layer, our_layer, *inputs, atol=1e-5, rtol=1e-4, train=False):
    """Copies the torch layer's state_dict into ours (checking key names), runs both on the same
    inputs and compares every output (tuples element-wise)."""
    missing = our_layer.load_state_dict(torch_layer.state_dict())
    assert missing.missing_keys == [] and missing.unexpected_keys == []
    torch_layer.train(train)
    our_layer.train(train)
    with torch.no_grad():
        ref = torch_layer(*inputs)
    ours = our_layer(*[to_cb(x) if isinstance(x, torch.Tensor) else x for x in inputs])
    assert_same(ours, ref, atol=atol, rtol=rtol)
    return ours, ref
