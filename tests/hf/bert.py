"""A tiny BERT saved with save_pretrained, loaded with AutoModel: a padded batch, deepcopy and pickle,
bf16/fp16 loading and casting, and what the environment says about torch.

    python bert.py MODEL_DIR [section ...]   |   python -m candle_bind run bert.py MODEL_DIR [section ...]
"""

import copy
import importlib.metadata
import pickle
import sys

import torch
import transformers
from transformers import AutoConfig, AutoModel

from common import main, section

# Two rows, the second padded (attention_mask 0) after its fifth token.
IDS = [[2, 45, 17, 88, 9, 31, 64, 3], [2, 71, 5, 12, 3, 0, 0, 0]]
MASK = [[1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0, 0, 0]]


def inputs():
    ids = torch.tensor(IDS)
    return {"input_ids": ids, "attention_mask": torch.tensor(MASK), "token_type_ids": torch.zeros_like(ids)}


@section
def bert(path):
    model = AutoModel.from_pretrained(path).eval()
    out = model(**inputs())
    yield "model_class", type(model).__name__
    yield "last_hidden_state_shape", list(out.last_hidden_state.shape)
    yield "last_hidden_state", out.last_hidden_state
    yield "pooler_output", out.pooler_output
    # output_hidden_states / output_attentions flow through the same padded mask
    out = model(**inputs(), output_hidden_states=True)
    yield "hidden_states_count", len(out.hidden_states)
    yield "hidden_states_1", out.hidden_states[1]


@section
def meta_build(path):
    """from_pretrained builds the model on the meta device, loads the checkpoint, then re-creates
    the non-persistent `position_ids` buffer (it is not in the checkpoint). Were the meta context a
    no-op, that buffer would be left as uninitialised memory and the embeddings silently wrong."""
    built_on = []
    original = transformers.BertModel.__init__

    def spy(self, config, *args, **kwargs):
        original(self, config, *args, **kwargs)
        built_on.append(self.embeddings.word_embeddings.weight.device.type)

    transformers.BertModel.__init__ = spy
    try:
        model = AutoModel.from_pretrained(path).eval()
    finally:
        transformers.BertModel.__init__ = original
    yield "built_on", built_on
    ids = model.embeddings.position_ids
    yield "position_ids_persistent", "embeddings.position_ids" in model.state_dict()
    yield "position_ids_is_arange", bool(torch.equal(ids, torch.arange(ids.shape[-1]).expand((1, -1))))
    yield "devices", sorted({t.device.type for t in [*model.parameters(), *model.buffers()]})
    yield "embeddings", model.embeddings(input_ids=torch.tensor(IDS))


@section
def copies(path):
    model = AutoModel.from_pretrained(path).eval()
    want = model(**inputs()).last_hidden_state

    twin = copy.deepcopy(model)
    weight = model.embeddings.word_embeddings.weight
    yield "deepcopy_shares_no_weights", twin.embeddings.word_embeddings.weight is not weight
    got = twin(**inputs()).last_hidden_state
    yield "deepcopy_equal", bool(torch.equal(got, want))
    yield "deepcopy_output", got[:, :2]

    config = pickle.loads(pickle.dumps(model.config))
    yield "config_pickle_equal", config.to_dict() == model.config.to_dict()
    yield "config_type", type(config).__name__
    config2 = AutoConfig.from_pretrained(path)
    yield "config_reload_hidden", config2.hidden_size

    clone = pickle.loads(pickle.dumps(model))
    got = clone(**inputs()).last_hidden_state
    yield "pickle_equal", bool(torch.equal(got, want))
    yield "pickle_output", got[:, :2]


def close(a, b, tol):
    return bool(torch.allclose(a.float(), b.float(), atol=tol, rtol=tol))


def reference(path):
    return AutoModel.from_pretrained(path).eval()(**inputs()).last_hidden_state


def _low_precision(model, ref, label, tol=0.1):
    yield "param_dtype", str(model.embeddings.word_embeddings.weight.dtype)
    yield "model_dtype", str(model.dtype)
    out = model(**inputs()).last_hidden_state
    print(f"# {label} max diff", (out.float() - ref).abs().max().item())
    yield "out_dtype", str(out.dtype)
    yield "close", close(out, ref, tol)


@section
def bf16_load(path):
    ref = reference(path)
    yield from _low_precision(AutoModel.from_pretrained(path, dtype=torch.bfloat16).eval(), ref, "bf16 load")


@section
def bf16_cast(path):
    ref = reference(path)
    yield from _low_precision(AutoModel.from_pretrained(path).eval().to(torch.bfloat16), ref, "bf16 cast")


@section
def half(path):
    ref = reference(path)
    yield from _low_precision(AutoModel.from_pretrained(path).eval().half(), ref, "half", tol=0.02)


@section
def env(path):
    yield "is_torch_available", transformers.is_torch_available()
    yield "metadata_version_is_torch_version", importlib.metadata.version("torch") == torch.__version__
    print("# torch", torch.__version__, "metadata", importlib.metadata.version("torch"))


if __name__ == "__main__":
    main(sys.argv[1])
