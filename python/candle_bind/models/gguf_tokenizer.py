"""A GGUF file's own tokenizer (its `tokenizer.ggml.*` metadata) as a Hugging Face `tokenizers`
tokenizer, with the file's chat template; no network, no tokenizer.json.

Byte-level BPE vocabularies (`tokenizer.ggml.model == "gpt2"`: SmolLM, Llama 3, Qwen, GPT-2 style)
are built with the pre-tokenizer llama.cpp picks for `tokenizer.ggml.pre`. SentencePiece BPE
vocabularies (`"llama"`: Llama 2, TinyLlama, Mistral, Phi-3, Gemma) have scores instead of merges:
the merges are derived from them as transformers' GGUF loader does (a piece merges from two pieces
of the vocabulary, higher scores first), with "▁" for spaces, a space put before text that starts
the input or follows a special token (`tokenizer.ggml.add_space_prefix`, as llama.cpp), and
characters outside the vocabulary as their UTF-8 bytes (<0xXX> tokens).
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


def _spm_merges(tokens: List[str], scores: List[float]):
    """BPE merges of a SentencePiece vocabulary from its scores (transformers' `generate_merges`):
    every split of a piece into two pieces of the vocabulary, ranked by the whole piece's score."""
    vocab = {t: i for i, t in enumerate(tokens)}
    merges = []
    for piece, score in zip(tokens, scores):
        local = [(piece[:k], piece[k:], score) for k in range(1, len(piece)) if piece[:k] in vocab and piece[k:] in vocab]
        local.sort(key=lambda m: (vocab[m[0]], vocab[m[1]]))
        merges.extend(local)
    merges.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)
    return [(a, b) for a, b, _ in merges]


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
        if kind not in ("gpt2", "llama"):
            raise NotImplementedError(f"GGUF tokenizer model {kind!r} is not supported yet "
                                      "(supported: byte-level BPE 'gpt2', SentencePiece BPE 'llama')")
        tk = _need_tokenizers()
        from tokenizers import AddedToken, Regex, decoders, models, normalizers, pre_tokenizers

        tokens: List[str] = list(metadata["tokenizer.ggml.tokens"])
        vocab = {t: i for i, t in enumerate(tokens)}
        if kind == "llama":
            scores = list(metadata.get("tokenizer.ggml.scores") or [0.0] * len(tokens))
            if len(scores) != len(tokens):
                raise ValueError(f"invalid GGUF tokenizer: {len(scores)} scores for {len(tokens)} tokens")
            merges = ([tuple(m.split(" ", 1)) for m in metadata["tokenizer.ggml.merges"]]
                      if metadata.get("tokenizer.ggml.merges") else _spm_merges(tokens, scores))
            unk_id = metadata.get("tokenizer.ggml.unknown_token_id", 0)
            unk = tokens[unk_id] if isinstance(unk_id, int) and 0 <= unk_id < len(tokens) else None
            tok = tk.Tokenizer(models.BPE(vocab, merges, unk_token=unk, fuse_unk=True, byte_fallback=True))
            space_prefix = bool(metadata.get("tokenizer.ggml.add_space_prefix", True))
            # Prepend applies to each piece of text between special tokens, as llama.cpp's "prefix
            # with space if previous is special".
            tok.normalizer = normalizers.Sequence(([normalizers.Prepend("▁")] if space_prefix else [])
                                                  + [normalizers.Replace(" ", "▁")])
            tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Fuse(), decoders.Replace("▁", " ")]
                                            + ([decoders.Strip(" ", 1, 0)] if space_prefix else []))
        else:
            merges = [tuple(m.split(" ", 1)) for m in metadata.get("tokenizer.ggml.merges", [])]
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
        # llama.cpp's default: a BOS first for SentencePiece vocabularies, none for byte-level BPE.
        self.add_bos_token = bool(metadata.get("tokenizer.ggml.add_bos_token", kind == "llama"))
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
