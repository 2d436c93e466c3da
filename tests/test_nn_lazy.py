"""torch.nn.modules.lazy (LazyModuleMixin) and UninitializedParameter: a module whose parameter takes its
shape from the first input (torchaudio's PitchShift is one), against torch: the first forward materializes
it and the module becomes `cls_to_become`; load_state_dict materializes it with the loaded shape. Also
torch.jit.isinstance (typing containers checked element by element)."""

from typing import Dict, List, Optional, Tuple, Union

import pytest
import torch

import candle_bind as cb


def _lazy_scale(L):
    from importlib import import_module

    lazy = import_module(f"{L.__name__}.nn.modules.lazy")

    class Scale(L.nn.Module):
        def forward(self, x):
            return x * self.w

    class LazyScale(lazy.LazyModuleMixin, Scale):
        cls_to_become = Scale

        def __init__(self):
            super().__init__()
            self.w = L.nn.UninitializedParameter()

        def initialize_parameters(self, x):
            if self.has_uninitialized_params():
                with L.no_grad():
                    self.w.materialize((x.shape[-1],))
                    self.w.copy_(L.arange(x.shape[-1]).float() + 1)

    return LazyScale


@pytest.mark.parametrize("L", [torch, cb], ids=["torch", "candle_bind"])
def test_first_forward_materializes(L):
    m = _lazy_scale(L)()
    assert m.has_uninitialized_params() and isinstance(m.w, L.nn.UninitializedParameter)
    out = m(L.ones(2, 3))
    assert out.tolist() == [[1.0, 2.0, 3.0]] * 2
    assert type(m).__name__ == "Scale" and type(m.w) is L.nn.Parameter and m.w.requires_grad
    assert list(dict(m.named_parameters())) == ["w"]


@pytest.mark.parametrize("L", [torch, cb], ids=["torch", "candle_bind"])
def test_load_state_dict_materializes(L):
    m = _lazy_scale(L)()
    m.load_state_dict({"w": L.tensor([2.0, 3.0])})
    assert type(m.w) is L.nn.Parameter and m.w.tolist() == [2.0, 3.0]
    assert m(L.ones(1, 2)).tolist() == [[2.0, 3.0]]


def test_jit_isinstance_matches_torch():
    cases = [("a", str), ([1, 2], List[int]), ([1, "a"], List[int]), ({"a": 1}, Dict[str, int]),
             ({"a": "b"}, Dict[str, int]), (None, Optional[int]), (3, Optional[int]), ((1, "a"), Tuple[int, str]),
             ((1, 2), Tuple[int, str]), (3, Union[str, int]), (2.0, Union[str, int])]
    for obj, kind in cases:
        assert cb.jit.isinstance(obj, kind) == torch.jit.isinstance(obj, kind), (obj, kind)
