"""The torch surface around tensors that libraries probe: dtypes (with and without storage), the meta
device and device contexts, pickling and deep copies, typed tensor classes, pytree, RNG state,
distributions, custom ops and autograd.Function, and the stand-in submodules under the shim.
Everything torch can compute is compared with torch."""

import copy
import itertools
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch

import candle_bind as cb
from conftest import assert_same, to_cb

NEW_DTYPES = ["int8", "int16", "uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "complex64", "complex128"]
ALL_DTYPES = NEW_DTYPES + ["bool", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_dtype_objects_match_torch(name):
    ours, ref = getattr(cb, name), getattr(torch, name)
    assert repr(ours) == repr(ref)
    assert ours.is_floating_point == ref.is_floating_point
    assert ours.is_complex == ref.is_complex
    assert ours.is_signed == ref.is_signed
    assert ours.itemsize == ref.itemsize
    assert pickle.loads(pickle.dumps(ours)) is ours and copy.deepcopy(ours) is ours
    if ref.is_floating_point or ref.is_complex:
        fo, fr = cb.finfo(ours), torch.finfo(ref)
        for field in ("bits", "eps", "max", "min", "tiny", "resolution"):
            assert getattr(fo, field) == getattr(fr, field), field
    elif name == "bool":
        for info in (cb.iinfo, torch.iinfo):
            with pytest.raises(TypeError):
                info(ours if info is cb.iinfo else ref)
    else:
        io_, ir = cb.iinfo(ours), torch.iinfo(ref)
        assert (io_.bits, io_.max, io_.min) == (ir.bits, ir.max, ir.min)


def test_aliases():
    for alias in ("short", "cfloat", "cdouble", "long", "half", "double"):
        assert repr(getattr(cb, alias)) == repr(getattr(torch, alias))


def test_promote_types_matches_torch():
    names = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
             "complex64", "complex128"]
    for a, b in itertools.product(names, repeat=2):
        want = torch.promote_types(getattr(torch, a), getattr(torch, b))
        assert repr(cb.promote_types(getattr(cb, a), getattr(cb, b))) == repr(want), (a, b)


@pytest.mark.parametrize("name", ["uint16", "uint32", "uint64", "float8_e5m2"])
def test_dtypes_without_storage_raise_clearly(name):
    with pytest.raises(cb.DTypeError, match=f"torch.{name} tensors are not supported by candle_bind yet"):
        cb.zeros(2, dtype=getattr(cb, name))
    with pytest.raises(cb.DTypeError, match="not supported"):
        cb.ones(2).to(getattr(cb, name))


def test_int16_and_float8_storage_match_torch():
    x = torch.tensor([[-3.0, 0.5, 7.25], [100.0, -448.0, 1e-3]])
    for name in ("int16", "float8_e4m3fn"):
        ref = x.to(getattr(torch, name))
        ours = to_cb(x).to(getattr(cb, name))
        assert repr(ours.dtype) == repr(ref.dtype) and tuple(ours.shape) == tuple(ref.shape)
        assert_same(ours.float(), ref.float())
        assert_same(ours.t().contiguous().float(), ref.t().contiguous().float())
        assert_same((ours + ours).float(), (ref.float() + ref.float()).to(ref.dtype).float())
    assert cb.tensor([1, -2], dtype=cb.int16).tolist() == [1, -2]
    assert cb.zeros(2, 3, dtype=cb.int16).numpy().dtype == np.int16


def test_meta_device_factories_views_and_writes():
    with cb.device("meta"):
        w = cb.empty(1000, 1000)
        ids = cb.arange(64).expand((1, -1))
        t = cb.tensor([1.0, 2.0])
    assert cb.zeros(2).device.type == "cpu"  # the block is over
    for x in (w, ids, t, w[:10], w.t(), w.reshape(-1), w.view(10, -1), w.float(), w.to(cb.float16), w + 1,
              w.exp(), w * w, cb.empty_like(w), w.new_zeros(3), cb.zeros(2, device="meta")):
        assert x.device.type == "meta" and x.is_meta
    assert tuple(ids.shape) == (1, 64) and w.dtype == cb.float32 and t.shape == (2,)
    assert (w == w).dtype == cb.bool
    w.normal_()
    w.fill_(3.0)
    w[0] = 1.0
    w += 1
    w.copy_(cb.ones(1000, 1000))  # torch: writes into meta tensors are dropped
    with pytest.raises(RuntimeError, match="meta"):
        w.sum().item()
    with pytest.raises(RuntimeError, match="meta"):
        w.tolist()
    with pytest.raises(RuntimeError, match="Cannot copy out of meta tensor"):
        w.to("cpu")
    real = cb.empty_like(w, device="cpu")
    assert real.device.type == "cpu" and real.shape == (1000, 1000)
    assert repr(cb.empty(2, 3, device="meta")) == repr(torch.empty(2, 3, device="meta"))
    assert repr(cb.empty(2, dtype=cb.int64, device="meta")) == repr(torch.empty(2, dtype=torch.int64, device="meta"))
    assert cb.empty(size=(2, 3), device="meta").shape == (2, 3)


def test_default_device_and_context():
    assert cb.get_default_device() == cb.device("cpu")
    with cb.device("meta"):
        assert cb.zeros(1).is_meta and cb.get_default_device() == cb.device("cpu")
        with cb.device("cpu"):
            assert not cb.zeros(1).is_meta
        assert cb.ones(1).is_meta
    cb.set_default_device("meta")
    try:
        assert cb.randn(2).is_meta and cb.get_default_device() == cb.device("meta")
    finally:
        cb.set_default_device(None)
    assert not cb.randn(2).is_meta


def test_module_built_on_meta_then_materialized():
    """A model built on the meta device, given storage with to_empty() and its weights loaded, gives
    torch's numbers; its non-persistent buffer is re-created as the model's code says (as torch users do)."""
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.LayerNorm(8))
    with cb.device("meta"):
        ours = cb.nn.Sequential(cb.nn.Linear(4, 8), cb.nn.LayerNorm(8))
        ours.register_buffer("scale", cb.arange(8.0), persistent=False)
    assert all(p.is_meta for p in ours.parameters())
    ours.to_empty(device="cpu")
    assert not any(p.is_meta for p in ours.parameters()) and not ours.scale.is_meta
    ours.load_state_dict({k: to_cb(v) for k, v in ref.state_dict().items()})
    x = torch.randn(3, 4)
    assert_same(ours(to_cb(x)), ref(x).detach())


def test_pickle_and_deepcopy_of_tensors_modules_and_sizes():
    t = cb.arange(6.0).reshape(2, 3).t()
    t.note = "kept"
    for back in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert back.tolist() == t.tolist() and back.note == "kept"
    for dt in ("bfloat16", "float16", "int16", "bool", "int64"):
        x = cb.arange(4.0).to(getattr(cb, dt))
        y = pickle.loads(pickle.dumps(x))
        assert y.dtype == x.dtype and (y == x).all().item()
    assert pickle.loads(pickle.dumps(cb.empty(3, device="meta"))).is_meta
    assert pickle.loads(pickle.dumps(cb.device("cpu"))) == cb.device("cpu")
    assert pickle.loads(pickle.dumps(cb.Size([2, 3]))) == cb.Size([2, 3])
    m = cb.nn.Sequential(cb.nn.Linear(3, 2), cb.nn.ReLU())
    m[0].weight._is_hf_initialized = True
    x = cb.randn(4, 3)
    for back in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
        assert isinstance(back[0].weight, cb.nn.Parameter) and back[0].weight._is_hf_initialized
        assert back[0].weight is not m[0].weight
        assert cb.allclose(back(x), m(x))


def test_typed_tensor_classes():
    assert isinstance(cb.zeros(2, dtype=cb.long), cb.LongTensor) and not isinstance(cb.zeros(2), cb.LongTensor)
    assert issubclass(cb.FloatTensor, cb.Tensor)
    for name in ("FloatTensor", "LongTensor", "BoolTensor", "IntTensor", "HalfTensor", "DoubleTensor", "ByteTensor"):
        ours, ref = getattr(cb, name)([1, 0, 2]), getattr(torch, name)([1, 0, 2])
        assert repr(ours.dtype) == repr(ref.dtype) and ours.tolist() == ref.tolist()
    assert cb.FloatTensor(2, 3).shape == (2, 3)


def test_pytree_matches_torch():
    import torch.utils._pytree as tp

    from candle_bind.utils import _pytree as cp

    tree = {"a": [1, (2, 3)], "b": {"c": 4}, "d": None}
    leaves, spec = cp.tree_flatten(tree)
    assert leaves == tp.tree_leaves(tree)
    assert cp.tree_unflatten(leaves, spec) == tree
    assert cp.tree_map(lambda v: v * 10 if isinstance(v, int) else v, tree) == tp.tree_map(
        lambda v: v * 10 if isinstance(v, int) else v, tree)

    class Pair:
        def __init__(self, x, y):
            self.x, self.y = x, y

    cp.register_pytree_node(Pair, lambda p: ([p.x, p.y], None), lambda c, _: Pair(*c))
    out = cp.tree_map(lambda v: v + 1, [Pair(1, 2)])
    assert (out[0].x, out[0].y) == (2, 3)


def test_rng_state_replays_the_stream():
    cb.manual_seed(5)
    state = cb.get_rng_state()
    a = cb.randn(4).tolist()
    cb.set_rng_state(state)
    assert cb.randn(4).tolist() == a
    with cb.random.fork_rng():
        cb.rand(10)
    b = cb.randn(3).tolist()
    cb.set_rng_state(state)
    cb.randn(4)
    assert cb.randn(3).tolist() == b


def test_categorical_matches_torch():
    logits = torch.randn(3, 5)
    ref = torch.distributions.Categorical(logits=logits)
    ours = cb.distributions.Categorical(logits=to_cb(logits))
    assert_same(ours.entropy(), ref.entropy())
    v = torch.tensor([0, 4, 2])
    assert_same(ours.log_prob(to_cb(v)), ref.log_prob(v))
    s = ours.sample((7,))
    assert tuple(s.shape) == (7, 3) and 0 <= s.min().item() and s.max().item() < 5


def test_custom_ops_and_autograd_function():
    @cb.library.custom_op("cbtest::twice", mutates_args=())
    def twice(x: cb.Tensor) -> cb.Tensor:
        return x * 2

    @twice.register_fake
    def _(x):
        return cb.empty_like(x)

    assert cb.ops.cbtest.twice(cb.ones(2)).tolist() == [2.0, 2.0]
    with pytest.raises(AttributeError, match="torch.ops.cbtest.missing is not supported"):
        cb.ops.cbtest.missing

    class Square(cb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

    assert Square.apply(cb.tensor([3.0])).tolist() == [9.0]
    with pytest.raises(RuntimeError, match="no autograd"):
        cb.autograd.grad(cb.ones(1), cb.ones(1))


def test_version_compares_like_torch():
    v = cb.version.__version__
    assert v >= "2.6" and v >= (2, 6) and v < "3" and not v < "2.8"
    assert cb.version.cuda is None


STANDINS = '''
import importlib, importlib.metadata, sys
import torch
mods = ["torch.distributed", "torch.compiler", "torch._dynamo", "torch._dynamo._trace_wrapped_higher_order_op",
        "torch.utils._pytree", "torch.accelerator", "torch.nn.attention", "torch.nn.attention.flex_attention",
        "torch.autograd", "torch.autograd.graph", "torch.distributions", "torch.distributions.constraints",
        "torch.library", "torch.ops", "torch.cuda", "torch.backends.cuda", "torch.backends.cudnn", "torch.jit",
        "torch.amp", "torch.version", "torch.optim", "torch.optim.lr_scheduler", "torch.multiprocessing",
        "torch.nn.parallel", "torch.utils.data.distributed", "torch.random", "torch.xpu", "torch.mps",
        # what accelerate's import chain touches
        "torch.utils.hooks", "torch.profiler", "torch.distributed.tensor", "torch._dynamo.eval_frame"]
for name in mods:
    m = importlib.import_module(name)
    assert importlib.util.find_spec(name) is not None, name
handle = torch.nn.Linear(1, 1).register_forward_hook(lambda *a: None)
assert isinstance(handle, torch.utils.hooks.RemovableHandle)
assert not isinstance(torch.nn.Linear(1, 1), torch._dynamo.eval_frame.OptimizedModule)
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
    with torch.profiler.record_function("step"):
        prof.step()
assert importlib.util.find_spec("torch") is not None
print(torch.distributed.is_available(), torch.compiler.is_compiling(), torch.jit.is_tracing(), torch.jit.is_scripting())
print(importlib.metadata.version("torch") == torch.__version__, torch.__version__ >= "2.6", torch.version.cuda)
print(torch.accelerator.current_accelerator(), torch.nn.attention.SDPBackend.MATH, torch.contiguous_format)
with torch.nn.attention.sdpa_kernel([torch.nn.attention.SDPBackend.MATH]):
    pass
torch.backends.cuda.matmul.allow_tf32 = True
print(torch.backends.cuda.matmul.allow_tf32, torch.cuda.Stream is not None, torch.LongTensor.__name__)
from torch.nn.modules.module import _EXTRA_STATE_KEY_SUFFIX
import torch.nn.functional as F
F.gelu = lambda x, approximate="none": x * 0  # monkeypatching reaches candle_bind's own layers
print(torch.nn.GELU()(torch.ones(2)).tolist())
try:
    import torch.package
except ModuleNotFoundError as e:
    print(e)
'''


def test_standin_modules_under_the_shim(tmp_path):
    script = tmp_path / "standins.py"
    script.write_text(STANDINS)
    out = subprocess.run([sys.executable, "-m", "candle_bind", "run", str(script)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "False False False False",
        "True True None",
        "None SDPBackend.MATH torch.contiguous_format",
        "True True LongTensor",
        "[0.0, 0.0]",
        "torch.package is not supported by candle_bind yet",
    ]


def test_metadata_is_torchs_again_after_uninstall():
    code = ("import importlib.metadata as md, candle_bind.compat as c\n"
            "real = md.version('torch'); c.install(); import torch; shim = md.version('torch'); c.uninstall()\n"
            "print(real == md.version('torch'), shim == torch.__version__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True"]


PATCHING = '''
import importlib, inspect
import torch
import torch.nn.functional as F
import candle_bind.nn.functional as CF
calls = []
layer_norm = F.layer_norm
F.layer_norm = lambda *a, **k: calls.append("ln") or layer_norm(*a, **k)
torch.nn.LayerNorm(4)(torch.ones(2, 4))
print(calls, CF.layer_norm is F.layer_norm)
F.layer_norm = layer_norm
sdpa = F.scaled_dot_product_attention
del torch.nn.functional.scaled_dot_product_attention   # code that probes hasattr() takes its fallback
print(hasattr(F, "scaled_dot_product_attention"), hasattr(CF, "scaled_dot_product_attention"))
F.scaled_dot_product_attention = sdpa
print(inspect.ismodule(F), importlib.util.find_spec("torch.nn.functional") is not None,
      inspect.getsourcefile(F).endswith("functional.py"), inspect.getsource(F.gelu).startswith("def gelu"))
'''


def test_monkeypatching_shimmed_modules_reaches_candle_bind(tmp_path):
    """setattr/delattr on torch.nn.functional under the shim is on candle_bind's module itself, so its
    own layers see the patch, and the shimmed modules are real modules to inspect/importlib."""
    script = tmp_path / "patching.py"
    script.write_text(PATCHING)
    out = subprocess.run([sys.executable, "-m", "candle_bind", "run", str(script)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["['ln'] True", "False False", "True True True True"]


def test_autocast_queries():
    """transformers asks torch.is_autocast_enabled(device) around rotary embeddings: False here,
    since autocast never lowers precision in candle_bind (README)."""
    with cb.autocast("cpu"):
        assert cb.is_autocast_enabled() is False and cb.is_autocast_enabled("cuda") is False
    assert cb.get_autocast_dtype("cpu") == cb.bfloat16 and cb.get_autocast_gpu_dtype() == cb.float16


def test_diffusers_import_surface():
    """What diffusers touches at import and load: arange(start=), reshape(shape=) / view(size=),
    get_device_module and torch.cpu, the generic Stream/Event types, torch.distributed's mesh and
    process-group types (one process: never built), torch.overrides.TorchFunctionMode (definable,
    not enterable: candle_bind does not dispatch through __torch_function__)."""
    assert_same(cb.arange(start=0, end=5), torch.arange(start=0, end=5))
    assert_same(cb.arange(start=1, end=10, step=3, dtype=cb.float32), torch.arange(start=1, end=10, step=3,
                                                                               dtype=torch.float32))
    x, xt = cb.arange(6.0), torch.arange(6.0)
    assert_same(x.reshape(shape=(2, 3)), xt.reshape(shape=(2, 3)))
    assert_same(cb.reshape(x, shape=(3, 2)), torch.reshape(xt, shape=(3, 2)))
    assert_same(x.view(size=(3, 2)), xt.view(size=(3, 2)))
    with pytest.raises(TypeError):
        x.reshape(sizes=(6,))
    assert cb.get_device_module("cpu") is cb.cpu is cb.get_device_module(cb.device("cpu"))
    assert cb.cpu.is_available() and cb.cpu.device_count() == torch.cpu.device_count() == 1
    with pytest.raises(RuntimeError, match="torch.meta"):
        cb.get_device_module("meta")
    assert cb.Stream is cb.cuda.Stream and cb.Event is cb.cuda.Event
    from candle_bind.distributed.device_mesh import DeviceMesh, init_device_mesh

    assert cb.distributed.device_mesh.DeviceMesh is DeviceMesh and isinstance(cb.distributed.ProcessGroup, type)
    with pytest.raises(RuntimeError, match="one process"):
        init_device_mesh("cpu", (2,))

    class Mode(cb.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    with pytest.raises(NotImplementedError, match="Mode"):
        with Mode():
            pass


def test_storage_describes_the_buffer():
    """untyped_storage()/storage(): address and size of the whole buffer, shared by views (how
    huggingface_hub's save_pretrained finds tied weights), as torch's."""
    x, xt = cb.zeros(4, 6), torch.zeros(4, 6)
    for ours, ref in ((x, xt), (x[1:3], xt[1:3]), (x.t(), xt.t())):
        assert ours.untyped_storage().nbytes() == ref.untyped_storage().nbytes() == 96
        assert ours.storage().size() == ref.untyped_storage().nbytes() // ref.element_size() == 24
        assert ours.storage().dtype == cb.float32 and ours.storage().element_size() == 4
        assert ours.untyped_storage().data_ptr() == x.data_ptr()
    assert cb.zeros(3).untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    assert isinstance(x.untyped_storage(), cb.UntypedStorage) and isinstance(x.storage(), cb.TypedStorage)


@pytest.mark.parametrize("seed", [0, 42, 2**33 + 5])
def test_generator_draws_torchs_stream(seed):
    """randn / rand / randint / randperm / normal given a seeded Generator give torch's numbers (its
    MT19937 and transforms: Box-Muller in blocks of 16 with the tail redrawn, the cached pair below 16),
    and the stream continues across calls as torch's does."""
    g, h = torch.Generator().manual_seed(seed), cb.Generator().manual_seed(seed)
    for shape in [(3,), (15,), (16,), (40,), (2, 4, 16, 16), (0,)]:
        for dtype in ("float32", "float64"):
            assert_same(cb.randn(shape, generator=h, dtype=getattr(cb, dtype)),
                        torch.randn(shape, generator=g, dtype=getattr(torch, dtype)), atol=1e-6, rtol=1e-5)
            assert_same(cb.rand(*shape, generator=h, dtype=getattr(cb, dtype)),
                        torch.rand(*shape, generator=g, dtype=getattr(torch, dtype)))
    for args in [(10, (5,)), (3, 100, (4, 4)), (-5, 5, (7,)), (0, 2**40, (6,))]:
        assert_same(cb.randint(*args, generator=h), torch.randint(*args, generator=g))
    for n in (1, 10, 1000):
        assert_same(cb.randperm(n, generator=h), torch.randperm(n, generator=g))
    assert_same(cb.normal(2.0, 3.0, (20,), generator=h), torch.normal(2.0, 3.0, (20,), generator=g), atol=1e-5)
    assert_same(cb.randn(4, 16, generator=h, dtype=cb.bfloat16), torch.randn(4, 16, generator=g, dtype=torch.bfloat16))


def test_generator_state_and_errors():
    h = cb.Generator().manual_seed(7)
    cb.randn(3, generator=h)  # leaves torch's cached second normal
    state = h.get_state()
    first = cb.randn(5, generator=h)
    assert cb.equal(cb.randn(5, generator=h.set_state(state)), first)
    g = torch.Generator().manual_seed(7)
    torch.randn(3, generator=g)
    assert_same(first, torch.randn(5, generator=g), atol=1e-6)
    with pytest.raises(TypeError, match="must be torch.Generator"):
        cb.randn(2, generator=3)
    with pytest.raises(RuntimeError, match="get_state"):
        h.set_state(cb.zeros(10, dtype=cb.uint8))
    # the generator torch.random.manual_seed returns is the global stream's, as torch's default generator
    from candle_bind import random as cb_random

    x = cb.randn(4, generator=cb_random.manual_seed(3))
    cb_random.manual_seed(3)
    assert cb.equal(x, cb.randn(4))
