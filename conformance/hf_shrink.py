"""Config shrinking and input generation for conformance/transformers_archs.py.

`make_config(model_type)` shrinks a config class's defaults generically (hidden sizes, layers, heads,
vocabularies, image and audio sizes, recursively through sub-configs, keeping head_dim = hidden / heads;
`OVERRIDES` only where that is not enough); `make_inputs(torch, model, head)` builds the forward's inputs
from the model's signature and config by arithmetic (no RNG), so torch and the shim see the same numbers.
"""

from __future__ import annotations

import inspect
import re

# ------------------------------------------------------------------------------------------- shrinking

HIDDEN, INTER, VOCAB, HEAD_DIM = 32, 64, 128, 8
_HIDDEN_NAMES = {"hidden_size", "d_model", "n_embd", "embed_dim", "dim", "d_embed", "model_dim", "embedding_dim",
                 "word_embed_proj_dim", "embedding_size", "projection_dim", "text_embed_dim", "vision_embed_dim",
                 "hidden_dim_text", "n_embed", "emb_dim", "d_hidden"}
_LAYER_RE = re.compile(r"^(num_|n_)?(hidden_|encoder_|decoder_|text_|vision_|audio_|)(layers?|blocks)$|"
                       r"^num_.*_layers$|^.*_num_layers$|^num_hidden_layers$|^n_layer$|^depth$")
_HEAD_RE = re.compile(r"^(num_attention_heads|n_heads?|num_heads|.*_attention_heads|attention_heads)$")
_KV_RE = re.compile(r"^(num_key_value_heads|num_kv_heads|n_kv_heads|multi_query_group_num|kv_heads)$")
_INTER_RE = re.compile(r"intermediate_size|ffn_dim|^d_ff$|^n_inner$|^mlp_dim$|^ff_dim$|^hidden_dim$|"
                       r"^d_inner$|^inner_dim$|intermediate_dim$|^ffn_hidden_size$|^dim_feedforward$")
_EXPERTS = {"num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts", "num_routed_experts"}
_TOPK = {"num_experts_per_tok", "moe_topk", "num_experts_per_token", "moe_k", "top_k_experts"}
_LIST_HIDDEN = {"hidden_sizes", "embed_dims", "embed_dim", "dims", "channels", "widths", "embedding_dims"}
_LIST_HEADS = {"num_attention_heads", "num_heads", "heads"}


def _hidden_sizes(d, found):
    """Every hidden size in a config tree (sizes elsewhere that equal one of them follow it)."""
    for key, v in d.items():
        if isinstance(v, dict):
            _hidden_sizes(v, found)
        elif key in _HIDDEN_NAMES and isinstance(v, int) and not isinstance(v, bool) and v > HIDDEN:
            found.add(v)
    return found


def _tied_size(key, v, state):
    return v in state["hidden"] and any(w in key for w in ("hidden", "dim", "size")) and \
        not any(w in key for w in ("vocab", "image", "patch", "position", "window", "max_", "intermediate", "ffn"))


def _shrink_dict(d, state, path=""):
    """Shrinks a config's to_dict() in place (recursing into sub-config dicts)."""
    old_layers = None
    old_heads = next((d[k] for k in ("num_attention_heads", "n_head", "num_heads") if isinstance(d.get(k), int)),
                     None)
    for key in list(d):
        v = d[key]
        if isinstance(v, dict) and ("model_type" in v or key.endswith("_config") or key.endswith("config")):
            _shrink_dict(v, state, f"{path}{key}.")
            continue
        if isinstance(v, bool) or v is None:
            continue
        if isinstance(v, int):
            if key in _HIDDEN_NAMES or _tied_size(key, v, state):
                d[key] = min(v, HIDDEN)  # (also sizes that equal a hidden size: pooler_hidden_size, ...)
            elif _LAYER_RE.match(key) and "feat_extract" not in key and "conv" not in key:
                d[key] = min(v, 2)
                if key in ("num_hidden_layers", "n_layer", "num_layers"):
                    old_layers = v
            elif _HEAD_RE.match(key):
                d[key] = min(v, 4)
            elif _KV_RE.match(key):
                d[key] = v if v <= 1 else 4 if old_heads and v >= old_heads else 2
            elif _INTER_RE.search(key):
                d[key] = min(v, INTER)
            elif key.endswith("layer_period"):  # hybrids (jamba): layer i is attention if i % period == offset
                d[key] = min(v, 2)
            elif key.endswith("layer_offset"):
                d[key] = min(v, 1)
            elif key == "rotary_dim":
                d[key] = min(v, HEAD_DIM)
            elif key == "window_size":
                d[key] = min(v, 4)
            elif key in ("head_dim", "d_kv", "d_head", "attention_head_dim", "kv_channels", "attention_head_size") or \
                    key.endswith("_head_dim"):
                d[key] = min(v, HEAD_DIM)
            elif key in ("mamba_n_heads", "mamba_d_head"):
                d[key] = min(v, 8)  # mamba_n_heads * mamba_d_head = mamba_expand * hidden
            elif key in ("mamba_d_state", "state_size", "ssm_state_size"):
                d[key] = min(v, 16)
            elif key.endswith("_lora_rank"):
                d[key] = min(v, 16)
            elif key in _EXPERTS:
                d[key] = min(v, 4)
            elif key in _TOPK:
                d[key] = min(v, 2)
            elif key in ("n_group", "topk_group", "first_k_dense_replace", "n_shared_experts"):
                d[key] = min(v, 1)
            elif key.endswith("vocab_size") and v > VOCAB:
                d[key] = VOCAB
            elif key == "image_size":
                d[key] = min(v, 32)
            elif key == "patch_size":
                d[key] = min(v, 8)
            elif key in ("num_mel_bins", "input_feat_per_channel", "feature_size") and v > 16:
                d[key] = 16
            elif key == "max_source_positions":
                d[key] = min(v, 16)
            elif key in ("max_target_positions",):
                d[key] = min(v, 64)
            elif key in ("num_conv_pos_embeddings",):
                d[key] = min(v, 16)
            elif key in ("num_conv_pos_embedding_groups",):
                d[key] = min(v, 4)
            elif key in ("codevector_dim", "proj_codevector_dim", "classifier_proj_size", "tdnn_dim",
                         "xvector_output_dim", "output_hidden_size", "adapter_attn_dim"):
                d[key] = min(v, HIDDEN)
        elif isinstance(v, list) and v and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            n = len(v)
            if key in _LIST_HIDDEN or key == "hidden_sizes":
                d[key] = [min(x, 8 * 2 ** i) for i, x in enumerate(v)]
            elif key in _LIST_HEADS:
                d[key] = [min(x, 2 ** i) for i, x in enumerate(v)]
            elif key in ("depths", "num_layers", "layers", "blocks_per_stage"):
                d[key] = [1] * n
            elif key in ("conv_dim",):
                d[key] = [HIDDEN] * n
            elif key == "image_size":
                d[key] = [min(x, 32) for x in v]
            elif key == "patch_size":
                d[key] = [min(x, 8) for x in v]
    # Lists with one entry per layer follow the layer count.
    new_layers = next((d[k] for k in ("num_hidden_layers", "n_layer", "num_layers") if isinstance(d.get(k), int)),
                      None)
    if old_layers and new_layers and new_layers < old_layers:
        for key, v in d.items():
            if isinstance(v, list) and len(v) == old_layers and key not in _LIST_HIDDEN | _LIST_HEADS:
                # first and last layers: keeps a mix of layer kinds ([linear, linear, linear, full] * n)
                d[key] = v[:new_layers - 1] + v[-1:]
        # backbones: out_features / out_indices name layers that may be gone now
        if isinstance(d.get("out_features"), list):
            d["out_features"] = list(dict.fromkeys(
                re.sub(r"\d+$", lambda m: str(min(int(m.group()), new_layers)), f) for f in d["out_features"]))
        if isinstance(d.get("out_indices"), list):
            d["out_indices"] = list(dict.fromkeys(min(i, new_layers) for i in d["out_indices"]))
        d.pop("stage_names", None)
    if "qk_head_dim" in d and isinstance(d.get("qk_nope_head_dim"), int) and isinstance(d.get("qk_rope_head_dim"), int):
        d["qk_head_dim"] = d["qk_nope_head_dim"] + d["qk_rope_head_dim"]  # multi-head latent attention
    if isinstance(d.get("per_layer_config"), dict) and new_layers:  # {layer index: overrides}
        d["per_layer_config"] = {k: v for k, v in d["per_layer_config"].items() if int(k) < new_layers}
    heads, hidden = d.get("num_attention_heads"), d.get("hidden_size")
    if "head_dim" in d and d["head_dim"] is None and isinstance(heads, int) and isinstance(hidden, int) and heads \
            and "qk_nope_head_dim" not in d:  # (latent attention derives it from its own sizes)
        d["head_dim"] = hidden // heads  # some attention classes read config.head_dim without a fallback
    rope = d.get("rope_parameters") or d.get("rope_scaling")
    if isinstance(rope, dict) and (isinstance(rope.get("mrope_section"), list) and len(rope["mrope_section"]) == 3
                                   or state.get("mrope") and "mrope_section" not in rope and heads):
        # multimodal rope splits the rotary half into (t, h, w) sections; the modeling default fits full size only
        head_dim = d.get("head_dim") or (hidden // heads if isinstance(hidden, int) and heads else HEAD_DIM)
        head_dim = min(x for x in (head_dim, d.get("qk_rope_head_dim"), HEAD_DIM) if isinstance(x, int))
        factor = rope.get("partial_rotary_factor") or d.get("partial_rotary_factor") or 1.0
        half = int(head_dim * factor) // 2
        q = max(1, half // 4)
        rope["mrope_section"] = [half - 2 * q, q, q]
    for key in ("suppress_tokens", "begin_suppress_tokens"):  # ids in the full vocabulary
        if d.get(key) is not None:
            d[key] = None
    if "pad_token_id" in d and d["pad_token_id"] is None:  # batched classification needs one
        d["pad_token_id"] = 0
    if d.get("is_encoder_decoder") and d.get("decoder_start_token_id") is None:
        d["decoder_start_token_id"] = d.get("pad_token_id") or 0
    # Token ids outside the shrunk vocabulary map to distinct ids at its top (equal ids stay equal).
    for key in list(d):
        if key.endswith(("_token_id", "_token_index", "_token_ids")) or key in ("pad_token_id", "eos_token_id"):
            d[key] = _remap_token(d[key], state)


def _remap_token(v, state):
    if isinstance(v, list):
        return [_remap_token(x, state) for x in v]
    if isinstance(v, bool) or not isinstance(v, int) or v < VOCAB - 16:
        return v
    tokens = state["tokens"]
    if v not in tokens:
        tokens[v] = VOCAB - 1 - len(tokens)
    return tokens[v]


OVERRIDES: dict = {
    # model_type -> config kwargs applied after the generic shrink (only where it is not enough).
    "mamba2": {"num_heads": 8},  # num_heads * head_dim = expand * hidden_size
    "dory": {"num_hidden_layers": 3, "n_input_layers": 1, "n_recurrent_layers": 1, "n_output_layers": 1},
    "efficientloftr": {"out_features": [8, 8, 16, 32]},  # the last one is hidden_size
    "dots3_note_text": {"head_dim": 16},  # its sliding-window layers: head_dim = qk_nope + qk_rope head dims
    "recurrent_gemma": {"block_types": ["recurrent", "attention"]},  # a pattern cycled over the layers
    "vits": {"noise_scale": 0.0, "noise_scale_duration": 0.0},  # no sampled noise: torch's RNG stream is its own
}


def _uses_mrope(config_cls):
    """Whether the modeling file next to a config class splits rope into multimodal sections by default."""
    import importlib.util

    spec = importlib.util.find_spec(config_cls.__module__.replace(".configuration_", ".modeling_"))
    if spec is None or not spec.origin:
        return False
    with open(spec.origin) as f:
        return "mrope_section" in f.read()


def make_config(model_type):
    from transformers import CONFIG_MAPPING

    cls = CONFIG_MAPPING[model_type]
    d = cls().to_dict()
    _shrink_dict(d, {"tokens": {}, "hidden": _hidden_sizes(d, set()), "mrope": _uses_mrope(cls)})
    for key, value in OVERRIDES.get(model_type, {}).items():
        d[key] = value
    for key in ("transformers_version", "architectures", "_name_or_path"):
        d.pop(key, None)
    d.pop("model_type", None)
    config = cls.from_dict(d)
    # Hybrids whose layer kinds are derived from the layer count (every 4th full attention, ...): a shrunk
    # count can leave one kind only; give the kept layers every kind the full-size config has, in order.
    full, mixed = cls(), False
    for key in ("layer_types", "layers_block_type", "block_types"):
        want, got = getattr(full, key, None), getattr(config, key, None)
        if isinstance(want, list) and isinstance(got, list) and got and key not in OVERRIDES.get(model_type, {}):
            kinds = list(dict.fromkeys(want))
            if 1 < len(kinds) <= len(got) and len(set(got)) < len(kinds):
                d[key], mixed = [kinds[i % len(kinds)] for i in range(len(got))], True
    return cls.from_dict(d) if mixed else config


# ----------------------------------------------------------------------------------- inputs (no RNG)


def _sub(config, *names):
    for n in names:
        c = getattr(config, n, None)
        if c is not None and not isinstance(c, (int, float, str, list, dict)):
            return c
    return config


def cfg_get(config, name, default=None):
    for c in (config, _sub(config, "text_config", "decoder", "text_encoder"), _sub(config, "vision_config"),
              _sub(config, "audio_config", "encoder")):
        v = getattr(c, name, None)
        if v is not None:
            return v
    return default


def token_batch(torch, vocab, pad, left, n=2, length=8, low=3):
    """`n` rows of ids in [low, high); row 1 has 2 pad tokens (left or right)."""
    high = max(low + 1, min(vocab, 99) - 1)
    ids = [[low + (7 * j + 13 * i + 5) % (high - low) for j in range(length)] for i in range(n)]
    mask = [[1] * length for _ in range(n)]
    for i in range(1, n):
        k = 2 * i
        sl = slice(0, k) if left else slice(length - k, length)
        ids[i][sl], mask[i][sl] = [pad] * k, [0] * k
    return torch.tensor(ids, dtype=torch.long), torch.tensor(mask, dtype=torch.long)


def smooth(torch, *shape):
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(n, dtype=torch.float32) * 0.37).sin().reshape(*shape)


def _size2(v, default=32):
    if isinstance(v, (list, tuple)):
        return (int(v[0]), int(v[-1])) if v else (default, default)
    if isinstance(v, dict):
        return (int(v.get("height", default)), int(v.get("width", default)))
    return (int(v), int(v)) if v else (default, default)


ALTERNATE_LAYOUT = ("pixel_values", "input_features", "input_values")  # the inputs `layout` changes


def make_inputs(torch, model, head, layout=0):
    """The forward's keyword inputs from the model's signature and config; (kwargs, token mask or None).
    `layout` 1 is the other common layout of the signal inputs (ALTERNATE_LAYOUT), tried where 0 fails
    in torch: features as (batch, frames, mel), audio as (batch, channels, samples), video pixels as
    (batch, frames, channels, height, width)."""
    cfg = model.config
    params = inspect.signature(model.forward).parameters
    required = {n for n, p in params.items() if p.default is inspect.Parameter.empty and
                p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    kw, mask = {}, None
    pad = cfg_get(cfg, "pad_token_id", 0)
    pad = pad if isinstance(pad, int) and pad >= 0 else 0
    vocab = cfg_get(cfg, "vocab_size", 99)
    vocab = vocab if isinstance(vocab, int) else 99
    multimodal_tokens = any(getattr(cfg, n, None) is not None for n in
                            ("image_token_id", "image_token_index", "audio_token_id", "audio_token_index",
                             "video_token_id"))
    if "input_ids" in params:
        ids, mask = token_batch(torch, vocab, pad, left=head == "causal-lm")
        if head == "seq-cls" and getattr(cfg, "is_encoder_decoder", False):
            # BART-style classifiers pool the decoder state at each row's (single) eos token
            eos = cfg_get(cfg, "eos_token_id", 2)
            eos = eos[0] if isinstance(eos, list) else eos
            for i in range(ids.shape[0]):
                ids[i, int(mask[i].sum()) - 1] = eos
        kw["input_ids"] = ids
        if "attention_mask" in params:
            kw["attention_mask"] = mask
    if "pixel_values" in params and ("input_ids" not in params or "pixel_values" in required or
                                     head in ("image-cls", "zero-shot-image") or not multimodal_tokens):
        vc = _sub(cfg, "vision_config", "backbone_config", "encoder")
        h, w = _size2(getattr(vc, "image_size", None) or getattr(cfg, "image_size", None))
        ch = getattr(vc, "num_channels", None) or getattr(cfg, "num_channels", None) or 3
        frames = getattr(vc, "num_frames", None) or getattr(cfg, "num_frames", None) or 2
        kw["pixel_values"] = smooth(torch, 2, ch, h, w) if layout == 0 else smooth(torch, 2, frames, ch, h, w)
    if "noise" in params and "pixel_values" in kw:  # ViTMAE's random masking, given instead of drawn
        vc = _sub(cfg, "vision_config")
        ph, pw = _size2(getattr(vc, "patch_size", None), 16)
        kw["noise"] = smooth(torch, 2, (kw["pixel_values"].shape[2] // ph) * (kw["pixel_values"].shape[3] // pw))
    if "input_features" in params and ("input_ids" not in params or "input_features" in required or
                                       head == "speech-seq2seq"):
        ac = _sub(cfg, "audio_config", "encoder_config", "encoder")
        mel = next((getattr(c, n) for c in (ac, cfg) for n in ("num_mel_bins", "input_feat_per_channel",
                                                               "feature_size", "n_mels")
                    if isinstance(getattr(c, n, None), int)), 16)
        src = getattr(ac, "max_source_positions", None) or getattr(cfg, "max_source_positions", None)
        frames = 2 * src if isinstance(src, int) and src <= 64 else 32
        kw["input_features"] = smooth(torch, 2, mel, frames) if layout == 0 else smooth(torch, 2, frames, mel)
        if head == "speech-seq2seq":  # the audio is the input; no text prompt
            kw.pop("input_ids", None), kw.pop("attention_mask", None)
            mask = None
    if "input_values" in params and ("input_ids" not in kw):
        kw["input_values"] = smooth(torch, 2, 1600) if layout == 0 else smooth(torch, 2, 1, 1600)
    if "decoder_input_ids" in params and head != "seq-cls" and (getattr(cfg, "is_encoder_decoder", False) or
                                          "decoder_input_ids" in required):
        start = getattr(cfg, "decoder_start_token_id", None)
        start = start if isinstance(start, int) else pad
        kw["decoder_input_ids"] = torch.tensor([[start, 5, 9, 14]] * 2, dtype=torch.long)
    missing = sorted(required - set(kw) - {"self"})
    if missing:
        raise NotImplementedError(f"no input generator for required forward argument(s) {missing}")
    if not kw:
        raise NotImplementedError(f"no known input among the forward's arguments {list(params)[:8]}")
    return kw, mask
