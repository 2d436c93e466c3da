"""nn.Module's contract against torch's: registration, state_dict keys and order, strict loading
(messages, returned keys, atomicity), traversal, modes, conversion, hooks, repr, containers."""

import pytest
import torch

import candle_bind as cb
from candle_bind import nn
from conftest import assert_same, make, to_cb


def build(lib):
    """The same small model written against either library."""
    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = lib.nn.Conv2d(3, 3, 3, padding=1)
            self.act = lib.nn.ReLU()
            self.register_buffer("running", lib.zeros(3))
            self.register_buffer("scratch", lib.ones(2), persistent=False)
            self.scale = lib.nn.Parameter(lib.ones(1))
            self.note = "plain attribute"
            self.fn = lambda x: x

        def forward(self, x):
            return self.act(self.conv(x)) * self.scale

    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = lib.nn.Embedding(10, 6)
            self.blocks = lib.nn.ModuleList([Block(), Block()])
            self.head = lib.nn.Sequential(lib.nn.Flatten(), lib.nn.Linear(3 * 5 * 5, 10, bias=False))
            self.head[1].weight = self.emb.weight if False else self.head[1].weight
            self.heads = lib.nn.ModuleDict({"a": lib.nn.Identity(), "b": lib.nn.Tanh()})
            self.extra = lib.nn.ParameterList([lib.nn.Parameter(lib.zeros(2)), lib.nn.Parameter(lib.zeros(3))])
            self.named = lib.nn.ParameterDict({"w": lib.nn.Parameter(lib.ones(2))})
            self.out = lib.nn.Linear(6, 10)
            self.out.weight = self.emb.weight.T if False else self.out.weight
            self.tied = self.emb  # the same module under two names

        def forward(self, x):
            for b in self.blocks:
                x = b(x)
            return self.heads["b"](self.head(x))

    return Net()


def test_state_dict_keys_order_and_values_match_torch():
    torch.manual_seed(0)
    t, c = build(torch), build(cb)
    tk, ck = list(t.state_dict().keys()), list(c.state_dict().keys())
    assert ck == tk
    assert [n for n, _ in c.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in c.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in c.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in c.named_children()] == [n for n, _ in t.named_children()]
    res = c.load_state_dict(t.state_dict())
    assert res.missing_keys == [] and res.unexpected_keys == []
    for k, v in c.state_dict().items():
        assert_same(v, t.state_dict()[k])
    x = make((2, 3, 5, 5), seed=1)
    with torch.no_grad():
        ref = t(x)
    assert_same(c(to_cb(x)), ref, atol=1e-5)


def test_repr_matches_torch():
    t, c = build(torch), build(cb)
    assert repr(c) == repr(t)


def test_tied_weights_stay_tied():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(5, 3)
            self.lm = nn.Linear(3, 5, bias=False)
            self.lm.weight = self.emb.weight

    m = Tied()
    sd = m.state_dict()
    assert list(sd) == ["emb.weight", "lm.weight"]
    assert len(list(m.parameters())) == 1
    tm = torch.nn.Embedding(5, 3)
    m.load_state_dict({"emb.weight": tm.weight.detach(), "lm.weight": tm.weight.detach()})
    assert m.lm.weight is m.emb.weight
    assert_same(m.lm.weight, tm.weight.detach())


def test_load_state_dict_errors_match_torch_and_leave_module_untouched():
    torch.manual_seed(1)
    t, c = torch.nn.Linear(3, 2), nn.Linear(3, 2)
    before = {k: v.clone() for k, v in c.state_dict().items()}
    cases = [
        ({"weight": t.weight.detach()}, r'Missing key\(s\) in state_dict: "bias"'),
        ({**t.state_dict(), "extra": torch.zeros(1)}, r'Unexpected key\(s\) in state_dict: "extra"'),
        ({"weight": torch.zeros(3, 3), "bias": torch.zeros(2)}, r"size mismatch for weight: copying a param with shape torch.Size\(\[3, 3\]\) from checkpoint, the shape in current model is torch.Size\(\[2, 3\]\)"),
    ]
    for sd, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            c.load_state_dict(sd)
        with pytest.raises(RuntimeError, match=msg):
            t.load_state_dict(sd)
        for k, v in c.state_dict().items():
            assert (v == before[k]).all(), "a failed load must not change the module"
    # Missing + size mismatch together: nothing is written either.
    with pytest.raises(RuntimeError, match="Error\\(s\\) in loading state_dict for Linear"):
        c.load_state_dict({"weight": torch.ones(2, 3) * 5, "bias": torch.zeros(7)})
    assert (c.weight == before["weight"]).all()
    res = c.load_state_dict({"weight": torch.ones(2, 3), "junk": torch.ones(1)}, strict=False)
    assert res.missing_keys == ["bias"] and res.unexpected_keys == ["junk"]
    assert (c.weight == 1).all()
    with pytest.raises(RuntimeError, match="size mismatch"):
        c.load_state_dict({"weight": torch.ones(1, 3)}, strict=False)


def test_load_state_dict_casts_and_assign():
    c = nn.Linear(2, 2)
    w = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)
    c.load_state_dict({"weight": w, "bias": torch.zeros(2)})
    assert c.weight.dtype == cb.float32
    assert_same(c.weight, w.float())
    old = c.weight
    c.load_state_dict({"weight": cb.ones(2, 2, dtype=cb.float64), "bias": cb.zeros(2)}, assign=True)
    assert c.weight is not old and isinstance(c.weight, nn.Parameter) and c.weight.dtype == cb.float64


def test_registration_rules():
    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(cb.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()
    m = nn.Module()
    m.w = nn.Parameter(cb.ones(2))
    m.child = nn.Linear(2, 2)
    m.register_buffer("b", cb.zeros(1))
    m.k = 3
    assert "w" in m._parameters and "child" in m._modules and "b" in m._buffers and m.k == 3
    m.b = cb.ones(1)  # reassigning a buffer keeps it a buffer
    assert "b" in m._buffers and m.b.item() == 1
    with pytest.raises(TypeError):
        m.w = cb.ones(2)  # plain tensors can't replace a parameter
    m.w = None
    assert m._parameters["w"] is None and "w" not in m.state_dict()
    del m.child
    assert "child" not in m._modules
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        m.nope
    with pytest.raises(KeyError):
        m.register_buffer("a.b", cb.zeros(1))
    assert "b" in dir(m)
    assert m.get_submodule("") is m


def test_modes_apply_and_conversion():
    m = nn.Sequential(nn.Linear(2, 3), nn.Dropout(0.5), nn.Sequential(nn.ReLU()))
    assert m.training and m[2][0].training
    m.eval()
    assert not m.training and not m[1].training and not m[2][0].training
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "Dropout", "ReLU", "Sequential", "Sequential"]
    w = m[0].weight
    m.double()
    assert m[0].weight is w and w.dtype == cb.float64  # same Parameter object, new data
    m.to(cb.float16)
    assert m[0].bias.dtype == cb.float16
    m.float().to("cpu")
    assert m[0].weight.device == cb.device("cpu")
    with pytest.raises(TypeError):
        m.to(cb.int64)
    assert all(p.requires_grad for p in m.parameters())
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


def test_hooks():
    m = nn.Linear(2, 2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: calls.append("pre") or (args[0] * 0,))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append("post") or out + 1)
    out = m(cb.ones(1, 2))
    assert calls == ["pre", "post"]
    assert_same(out, torch.from_numpy((m.bias + 1).numpy()).reshape(1, 2))
    h1.remove()
    h2.remove()
    assert_same(m(cb.zeros(1, 2)), torch.from_numpy(m.bias.numpy()).reshape(1, 2))
    feats = {}
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    seq[0].register_forward_hook(lambda mod, i, o: feats.setdefault("lin", o))
    seq(cb.ones(4, 2))
    assert feats["lin"].shape == (4, 3)


def test_containers():
    s = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
    assert len(s) == 3 and isinstance(s[-1], nn.Linear) and isinstance(s[1:], nn.Sequential) and len(s[1:]) == 2
    s.append(nn.Sigmoid())
    assert list(s.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    del s[1]
    assert [type(x).__name__ for x in s] == ["Linear", "Linear", "Sigmoid"]
    from collections import OrderedDict

    named = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.ReLU())]))
    assert list(named.state_dict()) == ["fc.weight", "fc.bias"]
    ml = nn.ModuleList([nn.ReLU()])
    ml.extend([nn.Tanh(), nn.Sigmoid()])
    ml.insert(1, nn.Identity())
    assert [type(x).__name__ for x in ml] == ["ReLU", "Identity", "Tanh", "Sigmoid"]
    assert ml.index(ml[2]) == 2 and len(ml[1:3]) == 2
    md = nn.ModuleDict({"a": nn.ReLU()})
    md["b"] = nn.Tanh()
    assert list(md.keys()) == ["a", "b"] and "a" in md and len(md) == 2
    pl = nn.ParameterList([cb.zeros(2)])
    pl.append(nn.Parameter(cb.ones(1)))
    assert isinstance(pl[0], nn.Parameter) and list(pl.state_dict()) == ["0", "1"]
    pd = nn.ParameterDict({"x": cb.ones(2)})
    assert list(pd.state_dict()) == ["x"] and isinstance(pd["x"], nn.Parameter)


def test_parameter():
    t = cb.ones(2, 3)
    p = nn.Parameter(t)
    assert isinstance(p, cb.Tensor) and isinstance(p, nn.Parameter) and p.requires_grad
    t[0, 0] = 5.0
    assert p[0, 0].item() == 5.0  # shares memory with the wrapped tensor, as torch
    assert repr(p).startswith("Parameter containing:")
    assert isinstance(p + 1, cb.Tensor) and not isinstance(p + 1, nn.Parameter)
    assert nn.Parameter(cb.ones(2), requires_grad=False).requires_grad is False


def test_init_functions():
    w = cb.empty(64, 32)
    nn.init.kaiming_uniform_(w, a=5 ** 0.5)
    bound = (3 ** 0.5) * nn.init.calculate_gain("leaky_relu", 5 ** 0.5) / 32 ** 0.5
    assert w.abs().max().item() <= bound + 1e-6
    nn.init.xavier_normal_(w)
    assert abs(w.std().item() - (2 / 96) ** 0.5) < 0.02
    nn.init.zeros_(w)
    assert (w == 0).all()
    nn.init.constant_(w, 0.5)
    assert (w == 0.5).all()
    nn.init.trunc_normal_(w, std=1.0, a=-0.5, b=0.5)
    assert w.abs().max().item() <= 0.5
    nn.init.orthogonal_(w)
    assert_same(w.t() @ w, torch.eye(32), atol=1e-4)
    nn.init.eye_(w)
    assert w.sum().item() == 32
    k = cb.empty(4, 4, 3, 3)
    nn.init.dirac_(k)
    assert k.sum().item() == 4
    for name in ["linear", "relu", "tanh", "selu", "sigmoid"]:
        assert nn.init.calculate_gain(name) == torch.nn.init.calculate_gain(name)


def test_state_dict_and_load_hooks_extra_state_like_torch():
    """What transformers and checkpoint code hook into: state_dict pre/post hooks, load pre/post
    hooks, get/set_extra_state; the same calls on torch and candle_bind give the same keys and calls."""

    def run(lib):
        calls = []

        class WithExtra(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = lib.nn.Linear(2, 2)
                self.extra = {"step": 0}

            def get_extra_state(self):
                return dict(self.extra)

            def set_extra_state(self, state):
                self.extra = dict(state)

        m = WithExtra()
        m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: calls.append(("pre", prefix)))
        m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: calls.append(("post", sorted(sd))))
        m.register_load_state_dict_pre_hook(lambda mod, sd, prefix, *rest: calls.append(("load_pre", sorted(sd))))
        m.register_load_state_dict_post_hook(lambda mod, keys: calls.append(("load_post", keys.missing_keys)))
        m.extra["step"] = 7
        sd = m.state_dict()
        fresh = WithExtra()
        fresh.register_load_state_dict_post_hook(lambda mod, keys: calls.append(("fresh_post", list(keys))))
        result = fresh.load_state_dict(sd)
        missing = fresh.load_state_dict({k: v for k, v in sd.items() if k != "_extra_state"}, strict=False)
        return calls, list(sd), sd["_extra_state"], fresh.extra, list(result), missing.missing_keys

    ours, ref = run(cb), run(torch)
    assert ours == ref


def test_set_submodule_to_empty_backward_hook_registration():
    for lib in (torch, cb):
        seq = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.ReLU())
        seq.set_submodule("1", lib.nn.Tanh())
        assert type(seq[1]).__name__ == "Tanh"
        with pytest.raises(AttributeError):
            seq.set_submodule("0.missing", lib.nn.ReLU(), strict=True)
        handle = seq.register_full_backward_hook(lambda *a: None)
        handle.remove()
    with cb.device("meta"):
        m = cb.nn.Linear(4, 5)
    m.to_empty(device="cpu")
    assert m.weight.device.type == "cpu" and isinstance(m.weight, cb.nn.Parameter) and m.weight.shape == (5, 4)
