"""A sweep of Hugging Face transformers model families, written as a plain transformers script
(only `torch` and `transformers` are imported): it runs unchanged on torch and under
`python -m candle_bind run` (tests/test_hf_families.py compares the two).

    python tests/hf_families.py save DIR [FAMILY ...]   # real torch: tiny seeded random models -> DIR/<family>
    python tests/hf_families.py run DIR [FAMILY ...]    # load each from DIR, print one JSON line per family

Each family is a tiny model (hidden size 32, 2 layers, 4 heads, vocabulary 99) built from its config.
`run` prints {"family", "values": {name: [floats]}, "tokens": [[ints]] (greedy generate, for
generative models), "time_s"}; a family that raises prints {"family", "error", "where": [the last
traceback frames as file:line in function]} and the run goes on with the next family. Inputs are
written out as arithmetic (no RNG), so both sides see the same numbers.
"""

import json
import os
import sys
import time
import traceback

import torch
import transformers

V = 99  # vocabulary
H = 32  # hidden size
L = 2  # layers
NH = 4  # heads
FF = 64  # feed-forward size
P = 64  # max positions

# Token ids every family uses (the configs' own defaults often lie outside a 99-token vocabulary).
IDS = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
LLAMA_LIKE = dict(vocab_size=V, hidden_size=H, num_hidden_layers=L, num_attention_heads=NH,
                  intermediate_size=FF, max_position_embeddings=P, **IDS)
BERT_LIKE = dict(vocab_size=V, hidden_size=H, num_hidden_layers=L, num_attention_heads=NH,
                 intermediate_size=FF, max_position_embeddings=P, **IDS)
BART_LIKE = dict(vocab_size=V, d_model=H, encoder_layers=L, decoder_layers=L, encoder_attention_heads=NH,
                 decoder_attention_heads=NH, encoder_ffn_dim=FF, decoder_ffn_dim=FF, max_position_embeddings=P,
                 pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=None)

# family -> (kind, config kwargs). Kinds: "mlm" (encoder with a masked-LM head), "causal",
# "seq2seq", "image" (image classification), "whisper" (encoder forward), "clip" (text + vision).
FAMILIES = {
    "bert": ("mlm", BERT_LIKE),
    "roberta": ("mlm", dict(BERT_LIKE, pad_token_id=1, bos_token_id=0)),
    "distilbert": ("mlm", dict(vocab_size=V, dim=H, n_layers=L, n_heads=NH, hidden_dim=FF,
                               max_position_embeddings=P, pad_token_id=0)),
    "albert": ("mlm", dict(BERT_LIKE, embedding_size=16)),
    "electra": ("mlm", dict(BERT_LIKE, embedding_size=16)),
    "xlm-roberta": ("mlm", dict(BERT_LIKE, pad_token_id=1, bos_token_id=0)),
    "mpnet": ("mlm", dict(BERT_LIKE, pad_token_id=1, bos_token_id=0)),
    "deberta": ("mlm", dict(BERT_LIKE, relative_attention=True, pos_att_type=["c2p", "p2c"], max_relative_positions=16)),
    "deberta-v2": ("mlm", dict(BERT_LIKE, relative_attention=True, pos_att_type=["c2p", "p2c"], position_buckets=8,
                               max_relative_positions=16, norm_rel_ebd="layer_norm", share_att_key=True)),
    "camembert": ("mlm", dict(BERT_LIKE, pad_token_id=1, bos_token_id=0)),
    "modernbert": ("mlm", dict(BERT_LIKE, global_attn_every_n_layers=2, local_attention=8, cls_token_id=1,
                               sep_token_id=2)),
    "gpt2": ("causal", dict(vocab_size=V, n_embd=H, n_layer=L, n_head=NH, n_positions=P, **IDS)),
    "gpt_neo": ("causal", dict(vocab_size=V, hidden_size=H, num_layers=L, num_heads=NH, intermediate_size=FF,
                               max_position_embeddings=P, attention_types=[[["global", "local"], 1]], window_size=4,
                               **IDS)),
    "gptj": ("causal", dict(vocab_size=V, n_embd=H, n_layer=L, n_head=NH, n_positions=P, rotary_dim=4, **IDS)),
    "gpt_neox": ("causal", dict(LLAMA_LIKE, rotary_pct=0.5)),
    "opt": ("causal", dict(vocab_size=V, hidden_size=H, num_hidden_layers=L, num_attention_heads=NH, ffn_dim=FF,
                           word_embed_proj_dim=H, max_position_embeddings=P, **IDS)),
    "bloom": ("causal", dict(vocab_size=V, hidden_size=H, n_layer=L, n_head=NH, **IDS)),
    "falcon": ("causal", dict(vocab_size=V, hidden_size=H, num_hidden_layers=L, num_attention_heads=NH,
                              max_position_embeddings=P, **IDS)),
    "llama": ("causal", dict(LLAMA_LIKE, num_key_value_heads=2)),
    "mistral": ("causal", dict(LLAMA_LIKE, num_key_value_heads=2, sliding_window=4)),
    "mixtral": ("causal", dict(LLAMA_LIKE, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2)),
    "qwen2": ("causal", dict(LLAMA_LIKE, num_key_value_heads=2)),
    "qwen2_moe": ("causal", dict(LLAMA_LIKE, num_key_value_heads=2, num_experts=4, num_experts_per_tok=2,
                                 moe_intermediate_size=16, shared_expert_intermediate_size=FF)),
    "qwen3": ("causal", dict(LLAMA_LIKE, num_key_value_heads=2, head_dim=8)),
    "phi": ("causal", dict(LLAMA_LIKE)),
    "phi3": ("causal", dict(LLAMA_LIKE, num_key_value_heads=2)),
    "gemma": ("causal", dict(LLAMA_LIKE, num_key_value_heads=2, head_dim=8)),
    "gemma2": ("causal", dict(LLAMA_LIKE, num_key_value_heads=2, head_dim=8, query_pre_attn_scalar=8,
                              sliding_window=4)),
    "gemma3_text": ("causal", dict(LLAMA_LIKE, num_key_value_heads=2, head_dim=8, query_pre_attn_scalar=8,
                                   sliding_window=4)),
    "stablelm": ("causal", dict(LLAMA_LIKE, num_key_value_heads=2)),
    "starcoder2": ("causal", dict(LLAMA_LIKE, num_key_value_heads=2)),
    "olmo": ("causal", dict(LLAMA_LIKE)),
    "olmo2": ("causal", dict(LLAMA_LIKE, num_key_value_heads=2)),
    "cohere": ("causal", dict(LLAMA_LIKE, num_key_value_heads=2)),
    "granite": ("causal", dict(LLAMA_LIKE, num_key_value_heads=2)),
    "t5": ("seq2seq", dict(vocab_size=V, d_model=H, d_kv=8, d_ff=FF, num_layers=L, num_heads=NH,
                           relative_attention_num_buckets=8, pad_token_id=0, eos_token_id=1,
                           decoder_start_token_id=0)),
    "bart": ("seq2seq", BART_LIKE),
    "mbart": ("seq2seq", BART_LIKE),
    "pegasus": ("seq2seq", dict(BART_LIKE, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)),
    "marian": ("seq2seq", dict(BART_LIKE, decoder_vocab_size=V, pad_token_id=1, eos_token_id=2,
                               decoder_start_token_id=1)),
    "vit": ("image", dict(image_size=32, patch_size=8, num_channels=3, hidden_size=H, num_hidden_layers=L,
                          num_attention_heads=NH, intermediate_size=FF)),
    "deit": ("image", dict(image_size=32, patch_size=8, num_channels=3, hidden_size=H, num_hidden_layers=L,
                           num_attention_heads=NH, intermediate_size=FF)),
    "convnext": ("image", dict(num_channels=3, num_stages=2, hidden_sizes=[8, 16], depths=[1, 1], image_size=32)),
    "resnet": ("image", dict(num_channels=3, embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1],
                             layer_type="basic")),
    "whisper": ("whisper", dict(vocab_size=V, d_model=H, encoder_layers=L, decoder_layers=L,
                                encoder_attention_heads=NH, decoder_attention_heads=NH, encoder_ffn_dim=FF,
                                decoder_ffn_dim=FF, num_mel_bins=16, max_source_positions=16,
                                max_target_positions=P, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                                decoder_start_token_id=1, begin_suppress_tokens=None, suppress_tokens=None)),
    "clip": ("clip", dict(projection_dim=16,
                          text_config=dict(vocab_size=V, hidden_size=H, num_hidden_layers=L, num_attention_heads=NH,
                                           intermediate_size=FF, max_position_embeddings=P, projection_dim=16,
                                           pad_token_id=1, bos_token_id=0, eos_token_id=2),
                          vision_config=dict(image_size=32, patch_size=8, num_channels=3, hidden_size=H,
                                             num_hidden_layers=L, num_attention_heads=NH, intermediate_size=FF,
                                             projection_dim=16))),
}

AUTO = {
    "mlm": "AutoModelForMaskedLM",
    "causal": "AutoModelForCausalLM",
    "seq2seq": "AutoModelForSeq2SeqLM",
    "image": "AutoModelForImageClassification",
    "whisper": "AutoModel",
    "clip": "AutoModel",
}

# Where the auto class maps a family to several classes, the one to build (loading goes through AUTO).
SAVE_CLASS = {"deit": "DeiTForImageClassification"}


def config_for(family):
    from transformers import CONFIG_MAPPING

    kind, kwargs = FAMILIES[family]
    if family not in CONFIG_MAPPING:
        return None
    return CONFIG_MAPPING[family](**kwargs)


# ---- deterministic inputs (arithmetic, no RNG) ----

def token_batch(n=2, length=8, pad=0, left=True, low=3):
    """`n` rows of token ids in [low, V); row i > 0 has 2*i pad tokens (left or right)."""
    ids, mask = [], []
    for i in range(n):
        row = [low + (7 * j + 13 * i + 5) % (V - low) for j in range(length)]
        m = [1] * length
        k = 2 * i
        if k:
            if left:
                row[:k], m[:k] = [pad] * k, [0] * k
            else:
                row[-k:], m[-k:] = [pad] * k, [0] * k
        ids.append(row)
        mask.append(m)
    return torch.tensor(ids, dtype=torch.long), torch.tensor(mask, dtype=torch.long)


def smooth(*shape):
    """A float tensor of `shape` with varied values in [-1, 1]."""
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(n, dtype=torch.float32) * 0.37).sin().reshape(*shape)


# ---- summaries ----

def r(x):
    return [round(float(v), 6) for v in x]


def summarize(t, mask=None):
    """A few numbers from a float tensor: its (masked) sum and sum of |x|, and five values of row 0's
    last position (batch index 0 is never padded)."""
    t = t.detach().float()
    if mask is not None:  # (B, S) over a (B, S, ...) tensor: padded positions are left out
        m = mask.to(t.dtype).reshape(*mask.shape, *([1] * (t.dim() - mask.dim())))
        t_m = t * m
    else:
        t_m = t
    first = t[0].reshape(-1, t.shape[-1])[-1] if t.dim() > 1 else t
    return r([t_m.sum().item(), t_m.abs().sum().item()]) + r(first[:5].tolist())


def run_family(family, folder):
    kind, _ = FAMILIES[family]
    auto = getattr(transformers, AUTO[kind])
    model = auto.from_pretrained(os.path.join(folder, family))
    model.eval()
    values, tokens = {}, None
    with torch.no_grad():
        if kind == "mlm":
            ids, mask = token_batch(left=False, pad=model.config.pad_token_id)
            out = model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
            values["logits"] = summarize(out.logits, mask)
            values["hidden"] = summarize(out.hidden_states[-1], mask)
        elif kind == "causal":
            ids, mask = token_batch(left=True, pad=0)
            out = model(input_ids=ids, attention_mask=mask)
            values["logits"] = summarize(out.logits, mask)
            values["last_logits"] = r(out.logits[:, -1].sum(-1).tolist())
            gen = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=5, do_sample=False,
                                 pad_token_id=0)
            tokens = gen[:, ids.shape[1]:].tolist()
        elif kind == "seq2seq":
            pad = model.config.pad_token_id
            ids, mask = token_batch(left=False, pad=pad)
            dec = torch.tensor([[model.config.decoder_start_token_id, 5, 9, 14]] * ids.shape[0])
            out = model(input_ids=ids, attention_mask=mask, decoder_input_ids=dec)
            values["logits"] = summarize(out.logits)
            values["encoder"] = summarize(out.encoder_last_hidden_state, mask)
            gen = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=5, do_sample=False,
                                 min_new_tokens=5, num_beams=1, pad_token_id=pad)
            tokens = gen.tolist()
        elif kind == "image":
            out = model(pixel_values=smooth(2, 3, 32, 32), output_hidden_states=True)
            values["logits"] = summarize(out.logits)
            values["hidden"] = summarize(out.hidden_states[-1])
        elif kind == "whisper":
            cfg = model.config
            feats = smooth(2, cfg.num_mel_bins, 2 * cfg.max_source_positions)
            out = model.get_encoder()(feats)
            values["encoder"] = summarize(out.last_hidden_state)
        elif kind == "clip":
            ids, mask = token_batch(left=False, pad=1)
            out = model(input_ids=ids, attention_mask=mask, pixel_values=smooth(2, 3, 32, 32))
            values["logits_per_image"] = r(out.logits_per_image.flatten().tolist())
            values["text_embeds"] = summarize(out.text_embeds)
            values["image_embeds"] = summarize(out.image_embeds)
    result = {"family": family, "values": values}
    if tokens is not None:
        result["tokens"] = tokens
    return result


def where(exc, frames=6):
    return [f"{os.path.relpath(f.filename) if not f.filename.startswith('<') else f.filename}:{f.lineno} in {f.name}"
            for f in traceback.extract_tb(exc.__traceback__)[-frames:]]


def save(folder, families):
    for family in families:
        config = config_for(family)
        if config is None:
            print(json.dumps({"family": family, "skipped": "no config class"}), flush=True)
            continue
        torch.manual_seed(0)
        if family in SAVE_CLASS:
            model = getattr(transformers, SAVE_CLASS[family])(config)
        else:
            model = getattr(transformers, AUTO[FAMILIES[family][0]]).from_config(config)
        model.eval()
        model.save_pretrained(os.path.join(folder, family))
        print(json.dumps({"family": family, "saved": sum(p.numel() for p in model.parameters())}), flush=True)


def run(folder, families):
    for family in families:
        if not os.path.isdir(os.path.join(folder, family)):
            print(json.dumps({"family": family, "skipped": "not saved"}), flush=True)
            continue
        start = time.perf_counter()
        try:
            result = run_family(family, folder)
        except Exception as exc:  # noqa: BLE001 - one family's failure must not stop the sweep
            msg = str(exc).strip().splitlines()
            result = {"family": family, "error": f"{type(exc).__name__}: {msg[0] if msg else ''}"[:400],
                      "where": where(exc)}
        result["time_s"] = round(time.perf_counter() - start, 3)
        print(json.dumps(result), flush=True)


def main(argv):
    if len(argv) < 2 or argv[0] not in ("save", "run"):
        print(__doc__, file=sys.stderr)
        return 2
    folder, families = argv[1], argv[2:] or list(FAMILIES)
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        print(f"unknown families: {unknown}", file=sys.stderr)
        return 2
    # The models are tiny: one thread is fastest, and keeps torch's OpenMP workers from stalling when
    # the machine is busy with something else (tens of ms per Linear on a loaded 2-core machine).
    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    start = time.perf_counter()
    (save if argv[0] == "save" else run)(folder, families)
    print(f"# {argv[0]} {len(families)} families in {time.perf_counter() - start:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
