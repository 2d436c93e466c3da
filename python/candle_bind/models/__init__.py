"""candle_bind.models: Candle's own model implementations (candle-transformers), the third way in
beside `import candle_bind as torch` and the zero-edit shim.

    llm = candle_bind.models.from_gguf("SmolLM2-135M-Instruct.Q4_1.gguf")
    ids = llm.tokenizer.encode("The capital of France is")
    print(llm.tokenizer.decode(llm.generate(ids, max_new_tokens=20)))
    outs = llm.generate(["Hello", "def f(x):", ids], max_new_tokens=20)   # decoded together

    bert = candle_bind.models.Bert.from_pretrained("all-MiniLM-L6-v2/")   # config.json + model.safetensors
    hidden = bert(input_ids, attention_mask)                                  # (batch, seq, hidden)
"""

from __future__ import annotations

from .batching import ContinuousBatcher
from .bert import Bert
from .gguf_llm import GGUFCausalLM
from .gguf_tokenizer import GGUFTokenizer

__all__ = ["Bert", "ContinuousBatcher", "GGUFCausalLM", "GGUFTokenizer", "from_gguf"]


def from_gguf(path, device=None, kv_dtype=None) -> GGUFCausalLM:
    """A quantized GGUF LLM (llama incl. Mixtral-style experts, qwen2, qwen3, qwen3moe, phi3, gemma,
    gemma2, gemma3, granite architectures) with its KV caches and tokenizer; another architecture raises
    NotImplementedError naming it. `kv_dtype` is the CPU KV caches' element type: float16 (the
    default, as llama.cpp's) or float32."""
    return GGUFCausalLM(path, device=device, kv_dtype=kv_dtype)
