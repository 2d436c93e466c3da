"""A GGUF file's own tokenizer (its `tokenizer.ggml.*` metadata) as a Hugging Face `tokenizers`
tokenizer, with the file's chat template; no network, no tokenizer.json.

Byte-level BPE vocabularies (`tokenizer.ggml.model == "gpt2"`: SmolLM, Llama 3, Qwen, GPT-2 style)
are built with the pre-tokenizer llama.cpp picks for `tokenizer.ggml.pre`.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional

# llama.cpp's pre-tokenizer regexes (llama-vocab.cpp), by `tokenizer.ggml.pre`.
_GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
_LLAMA3 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
           r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_SPLIT = {"llama-bpe": _LLAMA3, "llama3": _LLAMA3, "qwen2": _QWEN2, "deepseek-r1-qwen": _QWEN2}
_DIGITS_FIRST = {"smollm"}  # \p{N} split into single digits, then GPT-2's regex

_CONTROL, _USER_DEFINED = 3, 4


def _need_tokenizers():
    try:
        import tokenizers
    except ImportError:
        raise ImportError("the GGUF tokenizer needs the `tokenizers` package: pip install 'candle-bind[llm]'") from None
    return tokenizers


class GGUFTokenizer:
    """`encode(str) -> list[int]`, `decode(list[int]) -> str`, `apply_chat_template(messages)`."""

    def __init__(self, metadata: Dict[str, Any]):
        kind = metadata.get("tokenizer.ggml.model")
        if kind != "gpt2":
            raise NotImplementedError(f"GGUF tokenizer model {kind!r} is not supported yet (supported: byte-level BPE, 'gpt2')")
        tk = _need_tokenizers()
        from tokenizers import AddedToken, Regex, decoders, models, pre_tokenizers

        tokens: List[str] = list(metadata["tokenizer.ggml.tokens"])
        merges = [tuple(m.split(" ", 1)) for m in metadata.get("tokenizer.ggml.merges", [])]
        vocab = {t: i for i, t in enumerate(tokens)}
        tok = tk.Tokenizer(models.BPE(vocab, merges, fuse_unk=False, byte_fallback=False))
        pre = metadata.get("tokenizer.ggml.pre", "default")
        byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=pre not in _SPLIT)
        if pre in _SPLIT:
            tok.pre_tokenizer = pre_tokenizers.Sequence(
                [pre_tokenizers.Split(Regex(_SPLIT[pre]), behavior="isolated"), byte_level])
        elif pre in _DIGITS_FIRST:
            tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
        else:
            tok.pre_tokenizer = byte_level
        tok.decoder = decoders.ByteLevel()
        # Control and user-defined tokens match as whole pieces of text (<|im_start|>, ...).
        types = metadata.get("tokenizer.ggml.token_type") or []
        special = [AddedToken(tokens[i], special=True, normalized=False)
                   for i, t in enumerate(types) if t in (_CONTROL, _USER_DEFINED) and i < len(tokens)]
        tok.add_special_tokens(special)
        self._tok = tok
        self.vocab_size = len(tokens)
        self.bos_token_id: Optional[int] = metadata.get("tokenizer.ggml.bos_token_id")
        self.eos_token_id: Optional[int] = metadata.get("tokenizer.ggml.eos_token_id")
        self.pad_token_id: Optional[int] = metadata.get("tokenizer.ggml.padding_token_id")
        self.add_bos_token = bool(metadata.get("tokenizer.ggml.add_bos_token", False))
        self.chat_template: Optional[str] = metadata.get("tokenizer.chat_template")
        self._tokens = tokens

    @property
    def bos_token(self) -> Optional[str]:
        return None if self.bos_token_id is None else self._tokens[self.bos_token_id]

    @property
    def eos_token(self) -> Optional[str]:
        return None if self.eos_token_id is None else self._tokens[self.eos_token_id]

    def encode(self, text: str, add_bos: Optional[bool] = None) -> List[int]:
        """Token ids of `text`; special tokens written in it (`<|im_start|>`) are matched whole. A BOS
        token is put first when the file says so (`tokenizer.ggml.add_bos_token`) or `add_bos=True`."""
        ids = self._tok.encode(text, add_special_tokens=False).ids
        if (self.add_bos_token if add_bos is None else add_bos) and self.bos_token_id is not None:
            ids = [self.bos_token_id] + ids
        return ids

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = False) -> str:
        return self._tok.decode([int(i) for i in ids], skip_special_tokens=skip_special_tokens)

    def apply_chat_template(self, messages: List[Dict[str, str]], add_generation_prompt: bool = True,
                            tokenize: bool = False, **kwargs):
        """The prompt for `messages` ([{"role": ..., "content": ...}]) by the file's Jinja chat
        template, rendered as transformers renders it (sandboxed, trimmed blocks)."""
        if not self.chat_template:
            raise ValueError("this GGUF file has no chat template (tokenizer.chat_template)")
        try:
            from jinja2.sandbox import ImmutableSandboxedEnvironment
        except ImportError:
            raise ImportError("chat templates need the `jinja2` package: pip install 'candle-bind[llm]'") from None

        def raise_exception(message):
            raise ValueError(message)

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = raise_exception
        text = env.from_string(self.chat_template).render(
            messages=messages, add_generation_prompt=add_generation_prompt, bos_token=self.bos_token or "",
            eos_token=self.eos_token or "", **kwargs)
        return self.encode(text, add_bos=False) if tokenize else text
