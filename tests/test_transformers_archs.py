"""A fixed sample of conformance/transformers_archs.py (transformers' Auto-mapped architectures, built from
shrunk config defaults in real torch, saved, then run under torch and under the shim): one or two
architectures per kind of head. Every one listed must keep matching torch (outputs within rtol 1e-3 /
atol 1e-4, greedy generate tokens equal); the full sweep and its table are in docs/transformers.md."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("transformers")

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conformance",
                      "transformers_archs.py")

# (model_type, head) pairs that match torch today; the count must not drop.
MATCH = [
    ("bert", "masked-lm"), ("distilbert", "seq-cls"), ("roberta", "token-cls"),
    ("llama", "causal-lm"), ("qwen2", "causal-lm"), ("gpt2", "causal-lm"),
    ("t5", "seq2seq-lm"), ("bart", "seq2seq-lm"),
    ("vit", "image-cls"), ("convnext", "image-cls"),
    ("whisper", "speech-seq2seq"), ("clip", "zero-shot-image"),
    ("wav2vec2", "base"), ("mistral", "base"), ("deberta-v2", "masked-lm"),
    # brought into scope by the shrinker: head_dim None, multimodal rope sections, (frames, mel) features,
    # video pixels, hybrid layer kinds
    ("ministral", "causal-lm"), ("qwen2_vl_text", "base"), ("parakeet_ctc", "base"), ("videomae", "base"),
    ("kimi_linear", "causal-lm"),
]


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_transformers_archs_sample(tmp_path):
    types = sorted({t for t, _ in MATCH})
    heads = sorted({h for _, h in MATCH})
    out = tmp_path / "archs.json"
    proc = subprocess.run([sys.executable, SCRIPT, "--types", ",".join(types), "--heads", ",".join(heads),
                           "--json", str(out), "--quiet", "--chunk", "8"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    records = {(r["type"], r["head"]): r for r in json.load(open(out))["records"]}
    problems = [f"{t}/{h}: {records.get((t, h), {}).get('outcome', 'not run')}: "
                f"{records.get((t, h), {}).get('detail')} at {records.get((t, h), {}).get('where')}"
                for t, h in MATCH if records.get((t, h), {}).get("outcome") != "match"]
    assert not problems, "\n".join(problems)


# ---- the torch API the sweep found missing (each compared with torch in-process) ----

import torch  # noqa: E402

import candle_bind as cb  # noqa: E402
from conftest import assert_same  # noqa: E402


def test_vmap_nested_mask_function():
    """transformers' masking_utils vmap path: four nested vmaps of a scalar mask function."""
    def build(lib):
        f = lambda b, h, q, k: (q >= k) & (k < 3)  # noqa: E731
        for dims in [(None, None, None, 0), (None, None, 0, None), (None, 0, None, None), (0, None, None, None)]:
            f = lib.vmap(f, in_dims=dims, out_dims=0)
        return f(lib.arange(2), lib.arange(1), lib.arange(4), lib.arange(5))

    assert_same(build(cb), build(torch))
    x, y = torch.arange(6.).reshape(2, 3), torch.arange(3.)
    dot = lambda a, b: (a * b).sum()  # noqa: E731
    assert_same(cb.func.vmap(dot, in_dims=(0, None))(cb.tensor(x.tolist()), cb.tensor(y.tolist())),
                torch.func.vmap(dot, in_dims=(0, None))(x, y))
    with pytest.raises(ValueError):
        cb.vmap(lambda a: a)(3)


def test_zero_dim_format_and_small_api():
    for lib in (cb, torch):
        assert f"expert_{lib.tensor([4, 5])[0]}" == "expert_4"  # switch_transformers' ModuleDict keys
        assert f"{lib.tensor(2.5):.2f}" == "2.50"
        assert f"{lib.ones(2)}" == str(lib.ones(2))
        assert lib.legacy_contiguous_format == lib.contiguous_format
        lib._check_tensor_all_with(ValueError, lib.ones(3, dtype=lib.bool), "m")
        with pytest.raises(ValueError, match="bad"):
            lib._check_tensor_all_with(ValueError, lib.tensor([True, False]), lambda: "bad")
        assert lib.jit.script_if_tracing(len)([1, 2]) == 2
    x, t = cb.ones(2, dtype=cb.float16), torch.ones(2, dtype=torch.float16)
    assert_same(x.new_ones(size=(2, 3)), t.new_ones(size=(2, 3)))
    assert_same(x.new_zeros(size=[1], dtype=cb.int64), t.new_zeros(size=[1], dtype=torch.int64))
    assert_same(cb.div(7, 2, rounding_mode="trunc"), torch.div(7, 2, rounding_mode="trunc"))
    assert_same(cb.mul(3, cb.tensor([1, 2])), torch.mul(3, torch.tensor([1, 2])))
    assert_same(cb.cat([cb.ones(1, 2), cb.zeros(1, 2)], axis=1),
                torch.cat([torch.ones(1, 2), torch.zeros(1, 2)], axis=1))


def test_weight_norm_on_meta():
    """from_pretrained builds on the meta device: wav2vec2's weight-normed positional conv must too."""
    shapes = []
    for lib in (cb, torch):
        with lib.device("meta"):
            conv = lib.nn.utils.parametrizations.weight_norm(lib.nn.Conv1d(4, 4, 3, groups=2), name="weight", dim=2)
        g = conv.parametrizations.weight.original0
        shapes.append((tuple(g.shape), str(g.device), tuple(conv.weight.shape)))
    assert shapes[0] == shapes[1]


def test_legacy_typed_constructor_ignores_device_context():
    """torch.FloatTensor(data) is always a CPU tensor, even inside `with torch.device("meta")` (VideoMAE
    builds its sinusoid table that way while from_pretrained builds on meta)."""
    for lib in (cb, torch):
        with lib.device("meta"):
            a, b = lib.FloatTensor([[1.0, 2.0]]), lib.LongTensor(2, 3)
        assert (str(a.device), a.tolist(), str(b.device), tuple(b.shape)) == ("cpu", [[1.0, 2.0]], "cpu", (2, 3))
        assert b.dtype == lib.int64
