"""Request bodies checked field by field into plain parameters: a wrong type or a value out of range is a
400 naming the field (`param`), as OpenAI's API answers. Unknown fields are ignored, as llama-server does."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Union

from .errors import APIError, bad_request

_MISSING = object()
MAX_N = 16            # choices per request
MAX_STOP = 16         # stop strings per request
MAX_TOP_LOGPROBS = 20


def parse_json(raw: bytes) -> Dict[str, Any]:
    """The body as a JSON object; invalid UTF-8, bad JSON and non-objects are 400s."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise bad_request(f"the request body is not valid UTF-8 (byte {e.start})", code="invalid_utf8") from None
    if not text.strip():
        raise bad_request("the request body is empty; expected a JSON object", code="invalid_json")
    try:
        body = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise bad_request(f"the request body is not valid JSON: {e}", code="invalid_json") from None
    if not isinstance(body, dict):
        raise bad_request(f"the request body must be a JSON object, got {_kind(body)}", code="invalid_json")
    return body


def _kind(v: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null",
            int: "an integer", float: "a number"}.get(type(v), type(v).__name__)


def text_ok(s: str, param: str) -> str:
    """JSON can carry lone surrogates (\\ud800) that are no UTF-8 text: refuse them here, not in the tokenizer."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise bad_request(f"'{param}' is not valid UTF-8 text (it holds a lone surrogate)", param, "invalid_utf8") from None
    return s


class Fields:
    """Typed reads of one body's fields, each failing with a 400 that names the field."""

    def __init__(self, body: Dict[str, Any]):
        self.body = body

    def get(self, key: str, default: Any = None) -> Any:
        v = self.body.get(key, _MISSING)
        return default if v is _MISSING or v is None else v

    def boolean(self, key: str, default: bool = False) -> bool:
        v = self.get(key, default)
        if not isinstance(v, bool):
            raise bad_request(f"'{key}' must be a boolean, got {_kind(v)}", key, "invalid_type")
        return v

    def integer(self, key: str, default: Optional[int] = None, lo: Optional[int] = None,
                hi: Optional[int] = None) -> Optional[int]:
        v = self.get(key, default)
        if v is None:
            return None
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int):
            raise bad_request(f"'{key}' must be an integer, got {_kind(v)}", key, "invalid_type")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            span = f">= {lo}" if hi is None else f"between {lo} and {hi}" if lo is not None else f"<= {hi}"
            raise bad_request(f"'{key}' must be {span}, got {v}", key, "invalid_value")
        return v

    def number(self, key: str, default: Optional[float] = None, lo: Optional[float] = None,
               hi: Optional[float] = None) -> Optional[float]:
        v = self.get(key, default)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
            raise bad_request(f"'{key}' must be a finite number, got {_kind(v)}", key, "invalid_type")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise bad_request(f"'{key}' must be between {lo} and {hi}, got {v}", key, "invalid_value")
        return float(v)

    def string(self, key: str, required: bool = False) -> Optional[str]:
        v = self.get(key)
        if v is None:
            if required:
                raise bad_request(f"'{key}' is required", key, "missing_required_parameter")
            return None
        if not isinstance(v, str):
            raise bad_request(f"'{key}' must be a string, got {_kind(v)}", key, "invalid_type")
        return text_ok(v, key)


@dataclass
class Sampling:
    """What every generation request shares (chat and completions)."""
    max_tokens: Optional[int] = None
    temperature: float = 1.0
    top_p: Optional[float] = None
    top_k: Optional[int] = None
    seed: Optional[int] = None
    n: int = 1
    stop: List[str] = field(default_factory=list)
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repeat_penalty: float = 1.0
    logit_bias: Dict[int, float] = field(default_factory=dict)
    logprobs: Optional[int] = None      # None: none; k >= 0: the chosen token's and k alternatives
    stream: bool = False
    include_usage: bool = False


def sampling(f: Fields, vocab_size: int, chat: bool) -> Sampling:
    s = Sampling()
    # max_completion_tokens is the chat API's newer name; either is accepted.
    s.max_tokens = f.integer("max_completion_tokens") if chat and f.get("max_completion_tokens") is not None else f.integer("max_tokens")
    if s.max_tokens is not None and s.max_tokens <= 0:
        key = "max_completion_tokens" if chat and f.get("max_completion_tokens") is not None else "max_tokens"
        raise bad_request(f"'{key}' must be at least 1, got {s.max_tokens}", key, "invalid_value")
    s.temperature = f.number("temperature", 1.0, 0.0, 2.0)
    s.top_p = f.number("top_p", None, 0.0, 1.0)
    s.top_k = f.integer("top_k", None, 0)
    s.seed = f.integer("seed")
    s.n = f.integer("n", 1, 1, MAX_N)
    best_of = f.integer("best_of", None, 1)
    if best_of is not None and best_of != s.n:
        raise bad_request("'best_of' other than 'n' is not supported", "best_of", "unsupported_value")
    stop = f.get("stop")
    if isinstance(stop, str):
        stop = [stop]
    if stop is None:
        stop = []
    if not isinstance(stop, list) or not all(isinstance(x, str) for x in stop):
        raise bad_request("'stop' must be a string or an array of strings", "stop", "invalid_type")
    if len(stop) > MAX_STOP:
        raise bad_request(f"'stop' holds at most {MAX_STOP} strings, got {len(stop)}", "stop", "invalid_value")
    s.stop = [text_ok(x, "stop") for x in stop if x]
    s.presence_penalty = f.number("presence_penalty", 0.0, -2.0, 2.0)
    s.frequency_penalty = f.number("frequency_penalty", 0.0, -2.0, 2.0)
    s.repeat_penalty = f.number("repeat_penalty", 1.0, 0.0, 10.0)
    if s.repeat_penalty <= 0:
        raise bad_request("'repeat_penalty' must be > 0", "repeat_penalty", "invalid_value")
    bias = f.get("logit_bias", {})
    if not isinstance(bias, dict):
        raise bad_request("'logit_bias' must be an object mapping token ids to numbers", "logit_bias", "invalid_type")
    for k, v in bias.items():
        try:
            tok = int(k)
        except ValueError:
            raise bad_request(f"'logit_bias' key {k!r} is not a token id", "logit_bias", "invalid_value") from None
        if not 0 <= tok < vocab_size:
            raise bad_request(f"'logit_bias' token id {tok} is outside the vocabulary (0..{vocab_size - 1})", "logit_bias", "invalid_value")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not -100 <= v <= 100:
            raise bad_request(f"'logit_bias' values must be numbers between -100 and 100, got {v!r}", "logit_bias", "invalid_value")
        s.logit_bias[tok] = float(v)
    if chat:
        if f.boolean("logprobs", False):
            s.logprobs = f.integer("top_logprobs", 0, 0, MAX_TOP_LOGPROBS)
        elif f.get("top_logprobs") is not None:
            raise bad_request("'top_logprobs' needs 'logprobs' set to true", "top_logprobs", "invalid_value")
    else:
        s.logprobs = f.integer("logprobs", None, 0, MAX_TOP_LOGPROBS)
    s.stream = f.boolean("stream", False)
    opts = f.get("stream_options")
    if opts is not None:
        if not isinstance(opts, dict):
            raise bad_request("'stream_options' must be an object", "stream_options", "invalid_type")
        if not s.stream:
            raise bad_request("'stream_options' is only allowed when 'stream' is true", "stream_options", "invalid_value")
        s.include_usage = Fields(opts).boolean("include_usage", False)
    return s


def messages(f: Fields) -> List[Dict[str, str]]:
    """Chat messages with their content as plain text (text parts joined)."""
    msgs = f.get("messages")
    if msgs is None:
        raise bad_request("'messages' is required", "messages", "missing_required_parameter")
    if not isinstance(msgs, list) or not msgs:
        raise bad_request("'messages' must be a non-empty array of messages", "messages", "invalid_type")
    out = []
    for i, m in enumerate(msgs):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            raise bad_request(f"'{where}' must be an object", where, "invalid_type")
        role = m.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool"):
            raise bad_request(f"'{where}.role' must be one of system, developer, user, assistant, tool; got {role!r}",
                              f"{where}.role", "invalid_value")
        content = m.get("content")
        if content is None and role == "assistant":
            content = ""
        if isinstance(content, list):
            parts = []
            for j, p in enumerate(content):
                if not isinstance(p, dict) or p.get("type") != "text" or not isinstance(p.get("text"), str):
                    raise bad_request(f"'{where}.content[{j}]': only text parts are supported by this model",
                                      f"{where}.content", "unsupported_content")
                parts.append(p["text"])
            content = "".join(parts)
        if not isinstance(content, str):
            raise bad_request(f"'{where}.content' must be a string or an array of text parts", f"{where}.content", "invalid_type")
        out.append({"role": "system" if role == "developer" else role, "content": text_ok(content, f"{where}.content")})
    if f.get("tools"):
        raise bad_request("tool calling is not supported by this server", "tools", "unsupported_parameter")
    fmt = f.get("response_format")
    if fmt is not None and (not isinstance(fmt, dict) or fmt.get("type") != "text"):
        raise bad_request("only response_format {'type': 'text'} is supported", "response_format", "unsupported_value")
    return out


def prompts(f: Fields, vocab_size: int) -> List[Union[str, List[int]]]:
    """The completions API's `prompt`: a string, strings, token ids, or lists of token ids."""
    p = f.get("prompt", _MISSING)
    if p is _MISSING:
        raise bad_request("'prompt' is required", "prompt", "missing_required_parameter")
    if isinstance(p, str):
        items: Sequence[Any] = [p]
    elif isinstance(p, list) and p and all(isinstance(x, int) and not isinstance(x, bool) for x in p):
        items = [p]
    elif isinstance(p, list) and p:
        items = p
    else:
        raise bad_request("'prompt' must be a string, an array of strings or an array of token ids", "prompt", "invalid_type")
    if len(items) > 64:
        raise bad_request(f"'prompt' holds at most 64 prompts, got {len(items)}", "prompt", "invalid_value")
    out: List[Union[str, List[int]]] = []
    for x in items:
        if isinstance(x, str):
            out.append(text_ok(x, "prompt"))
        elif isinstance(x, list) and x and all(isinstance(t, int) and not isinstance(t, bool) for t in x):
            bad = [t for t in x if not 0 <= t < vocab_size]
            if bad:
                raise bad_request(f"token id {bad[0]} in 'prompt' is outside the vocabulary (0..{vocab_size - 1})", "prompt", "invalid_value")
            out.append(list(x))
        else:
            raise bad_request("'prompt' must be a string, an array of strings or an array of token ids", "prompt", "invalid_type")
    if f.get("suffix"):
        raise bad_request("'suffix' (fill-in-the-middle) is not supported by this model", "suffix", "unsupported_parameter")
    return out


def embedding_inputs(f: Fields, vocab_size: int, max_inputs: int = 2048) -> List[Union[str, List[int]]]:
    """The embeddings API's `input`: a string, strings, token ids, or lists of token ids; none empty."""
    x = f.get("input", _MISSING)
    if x is _MISSING:
        raise bad_request("'input' is required", "input", "missing_required_parameter")
    if isinstance(x, str):
        items: Sequence[Any] = [x]
    elif isinstance(x, list) and x and all(isinstance(t, int) and not isinstance(t, bool) for t in x):
        items = [x]
    elif isinstance(x, list) and x:
        items = x
    else:
        raise bad_request("'input' must be a non-empty string, array of strings or array of token ids", "input", "invalid_type")
    if len(items) > max_inputs:
        raise bad_request(f"'input' holds at most {max_inputs} items, got {len(items)}", "input", "invalid_value")
    out: List[Union[str, List[int]]] = []
    for i, t in enumerate(items):
        if isinstance(t, str) and t:
            out.append(text_ok(t, "input"))
        elif isinstance(t, list) and t and all(isinstance(v, int) and not isinstance(v, bool) for v in t):
            if any(not 0 <= v < vocab_size for v in t):
                raise bad_request(f"'input[{i}]' holds a token id outside the vocabulary (0..{vocab_size - 1})", "input", "invalid_value")
            out.append(list(t))
        else:
            raise bad_request(f"'input[{i}]' must be a non-empty string or array of token ids", "input", "invalid_value")
    return out


def check_model(f: Fields, names: Sequence[str]) -> str:
    """The `model` field: required, and one this server serves (404 otherwise, as OpenAI)."""
    name = f.string("model", required=True)
    if name not in names:
        raise APIError(404, f"The model `{name}` does not exist (this server serves `{names[0]}`)", "model", "model_not_found")
    return name
