"""A GPT-2 written as ordinary PyTorch code in the shape of Hugging Face transformers' modeling_gpt2:
Conv1D layers (torch.addmm), a causal-mask buffer, padding attention masks with finfo.min, a
key/value cache of past tensors, batched generation with left padding, repetition penalty,
top-p (nucleus) filtering via sort/cumsum/scatter, and eos handling with isin.

    python hf_gpt2.py save ckpt.pt  |  python hf_gpt2.py ckpt.pt  |  python -m candle_bind run hf_gpt2.py ckpt.pt
"""

import math
import sys

import torch
from torch import nn


class Conv1D(nn.Module):
    """A linear layer with transposed weights (nx, nf), as in the original GPT."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class NewGELUActivation(nn.Module):
    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        max_positions = config["n_positions"]
        self.register_buffer(
            "bias",
            torch.tril(torch.ones((max_positions, max_positions), dtype=torch.bool)).view(1, 1, max_positions, max_positions),
            persistent=False,
        )
        self.embed_dim = config["n_embd"]
        self.num_heads = config["n_head"]
        self.head_dim = self.embed_dim // self.num_heads
        self.c_attn = Conv1D(3 * self.embed_dim, self.embed_dim)
        self.c_proj = Conv1D(self.embed_dim, self.embed_dim)
        self.attn_dropout = nn.Dropout(0.1)
        self.resid_dropout = nn.Dropout(0.1)

    def _attn(self, query, key, value, attention_mask=None):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length: key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype, device=attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.type(value.dtype)
        attn_weights = self.attn_dropout(attn_weights)
        return torch.matmul(attn_weights, value)

    def _split_heads(self, tensor, num_heads, attn_head_size):
        new_shape = tensor.size()[:-1] + (num_heads, attn_head_size)
        tensor = tensor.view(new_shape)
        return tensor.permute(0, 2, 1, 3)

    def _merge_heads(self, tensor, num_heads, attn_head_size):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        new_shape = tensor.size()[:-2] + (num_heads * attn_head_size,)
        return tensor.view(new_shape)

    def forward(self, hidden_states, layer_past=None, attention_mask=None, use_cache=False):
        query, key, value = self.c_attn(hidden_states).split(self.embed_dim, dim=2)
        query = self._split_heads(query, self.num_heads, self.head_dim)
        key = self._split_heads(key, self.num_heads, self.head_dim)
        value = self._split_heads(value, self.num_heads, self.head_dim)
        if layer_past is not None:
            past_key, past_value = layer_past
            key = torch.cat((past_key, key), dim=-2)
            value = torch.cat((past_value, value), dim=-2)
        present = (key, value) if use_cache else None
        attn_output = self._attn(query, key, value, attention_mask)
        attn_output = self._merge_heads(attn_output, self.num_heads, self.head_dim)
        attn_output = self.resid_dropout(self.c_proj(attn_output))
        return attn_output, present


class GPT2MLP(nn.Module):
    def __init__(self, intermediate_size, config):
        super().__init__()
        self.c_fc = Conv1D(intermediate_size, config["n_embd"])
        self.c_proj = Conv1D(config["n_embd"], intermediate_size)
        self.act = NewGELUActivation()
        self.dropout = nn.Dropout(0.1)

    def forward(self, hidden_states):
        return self.dropout(self.c_proj(self.act(self.c_fc(hidden_states))))


class GPT2Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        hidden_size = config["n_embd"]
        self.ln_1 = nn.LayerNorm(hidden_size, eps=1e-5)
        self.attn = GPT2Attention(config)
        self.ln_2 = nn.LayerNorm(hidden_size, eps=1e-5)
        self.mlp = GPT2MLP(4 * hidden_size, config)

    def forward(self, hidden_states, layer_past=None, attention_mask=None, use_cache=False):
        attn_output, present = self.attn(self.ln_1(hidden_states), layer_past, attention_mask, use_cache)
        hidden_states = attn_output + hidden_states
        hidden_states = hidden_states + self.mlp(self.ln_2(hidden_states))
        return hidden_states, present


class GPT2LMHeadModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config["vocab_size"], config["n_embd"])
        self.wpe = nn.Embedding(config["n_positions"], config["n_embd"])
        self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList([GPT2Block(config) for _ in range(config["n_layer"])])
        self.ln_f = nn.LayerNorm(config["n_embd"], eps=1e-5)
        self.lm_head = nn.Linear(config["n_embd"], config["vocab_size"], bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, input_ids, past_key_values=None, attention_mask=None, position_ids=None, use_cache=True):
        batch_size = input_ids.shape[0]
        if past_key_values is None:
            past_length = 0
            past_key_values = tuple([None] * len(self.h))
        else:
            past_length = past_key_values[0][0].size(-2)
        if position_ids is None:
            position_ids = torch.arange(past_length, input_ids.size(-1) + past_length, dtype=torch.long)
            position_ids = position_ids.unsqueeze(0)
        if attention_mask is not None:
            attention_mask = attention_mask.view(batch_size, -1)
            attention_mask = attention_mask[:, None, None, :]
            attention_mask = attention_mask.to(dtype=self.wte.weight.dtype)
            attention_mask = (1.0 - attention_mask) * torch.finfo(self.wte.weight.dtype).min
        hidden_states = self.drop(self.wte(input_ids) + self.wpe(position_ids))
        presents = () if use_cache else None
        for block, layer_past in zip(self.h, past_key_values):
            hidden_states, present = block(hidden_states, layer_past, attention_mask, use_cache)
            if use_cache:
                presents = presents + (present,)
        hidden_states = self.ln_f(hidden_states)
        return self.lm_head(hidden_states), presents


CONFIG = {"vocab_size": 800, "n_positions": 128, "n_embd": 128, "n_layer": 3, "n_head": 4}


def top_p_filter(scores, top_p=0.9, min_tokens_to_keep=1):
    sorted_logits, sorted_indices = torch.sort(scores, descending=False)
    cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    sorted_indices_to_remove = cumulative_probs <= (1 - top_p)
    sorted_indices_to_remove[..., -min_tokens_to_keep:] = 0
    indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
    return scores.masked_fill(indices_to_remove, -float("Inf"))


def repetition_penalty(input_ids, scores, penalty=1.3):
    score = torch.gather(scores, 1, input_ids)
    score = torch.where(score < 0, score * penalty, score / penalty)
    return scores.scatter(1, input_ids, score)


@torch.no_grad()
def generate(model, input_ids, attention_mask, max_new_tokens, eos_token_id, pad_token_id, do_sample):
    eos = torch.tensor([eos_token_id])
    unfinished = torch.ones(input_ids.shape[0], dtype=torch.long)
    position_ids = attention_mask.long().cumsum(-1) - 1
    position_ids.masked_fill_(attention_mask == 0, 1)
    logits, past = model(input_ids, attention_mask=attention_mask, position_ids=position_ids)
    first = logits[:, -1, :].clone()
    for _ in range(max_new_tokens):
        scores = repetition_penalty(input_ids, logits[:, -1, :].float())
        if do_sample:
            probs = nn.functional.softmax(top_p_filter(scores / 0.7), dim=-1)
            next_tokens = torch.multinomial(probs, num_samples=1).squeeze(1)
        else:
            next_tokens = torch.argmax(scores, dim=-1)
        next_tokens = next_tokens * unfinished + pad_token_id * (1 - unfinished)
        input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)
        attention_mask = torch.cat([attention_mask, attention_mask.new_ones((attention_mask.shape[0], 1))], dim=-1)
        unfinished = unfinished & ~torch.isin(next_tokens, eos)
        if unfinished.max() == 0:
            break
        position_ids = (attention_mask.long().cumsum(-1) - 1)[:, -1:]
        logits, past = model(next_tokens[:, None], past_key_values=past, attention_mask=attention_mask,
                             position_ids=position_ids)
    return input_ids, first


def save_checkpoint(path):
    torch.manual_seed(0)
    model = GPT2LMHeadModel(CONFIG)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.1)
    torch.save(model.state_dict(), path)


def load(path):
    model = GPT2LMHeadModel(CONFIG)
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model.eval()


@torch.no_grad()
def infer(model):
    pad = 0
    # Left padding, as HF batches prompts of different lengths for generation.
    input_ids = torch.tensor([[pad, pad, 464, 3290, 318, 257], [40, 1842, 257, 922, 1110, 12]]) % 800
    attention_mask = torch.tensor([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]])
    greedy, first = generate(model, input_ids, attention_mask, 20, eos_token_id=13, pad_token_id=pad, do_sample=False)
    torch.manual_seed(42)
    sampled, _ = generate(model, input_ids, attention_mask, 10, eos_token_id=13, pad_token_id=pad, do_sample=True)
    return {"logits": first[:, :16].flatten().tolist(), "tokens": greedy.tolist(), "sampled": sampled.shape[0]}


if __name__ == "__main__":
    if sys.argv[1] == "save":
        save_checkpoint(sys.argv[2])
    else:
        for k, v in infer(load(sys.argv[1])).items():
            print(k, v)
