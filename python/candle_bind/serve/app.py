"""The ASGI application (Starlette): OpenAI's routes over one model.

Every route reads its body under the size limit, checks it into plain parameters (`protocol`), hands a
`Job` to the model's worker thread (`engine`) and turns the job's events into OpenAI's JSON or SSE
shapes. Anything a client can get wrong is answered with OpenAI's error body (`errors`); an unexpected
failure is a 500 with the same body, and the server carries on.
"""

from __future__ import annotations

import asyncio
import base64
import hmac
import os
import time
import uuid
from dataclasses import dataclass
from typing import Any, AsyncIterator, Dict, List, Optional, Sequence

import numpy as np
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from .engine import Job, Worker
from .errors import APIError, bad_request, unavailable
from .metrics import Metrics
from .protocol import Fields, check_model, embedding_inputs, messages, parse_json, prompts, sampling

PUBLIC_PATHS = {"/health", "/v1/health"}


@dataclass
class Options:
    model_path: str
    alias: Optional[str] = None
    ctx_size: int = 0              # 0: the model's trained context
    n_predict: int = -1            # default max_tokens; -1: up to the context
    parallel: int = 4              # sequences decoded together (continuous batching)
    max_queue: int = 256
    max_body: int = 4 << 20
    api_key: Optional[str] = None
    batch_size: int = 32           # embeddings per forward
    max_inputs: int = 2048         # embeddings per request
    shutdown_timeout: float = 30.0
    device: Optional[str] = None   # where a GGUF model runs ("cuda" in a CUDA build); default the CPU


class Host:
    """The served model, its worker thread and the server's counters."""

    def __init__(self, opts: Options):
        self.opts = opts
        path = opts.model_path
        self.model_id = opts.alias or os.path.basename(os.path.normpath(path))
        self.names = [self.model_id, path, os.path.basename(os.path.normpath(path))]
        self.created = int(time.time())
        self.metrics = Metrics()
        self.fingerprint = "fp_candle_bind"
        if os.path.isdir(path):
            from .embed import Encoder

            self.kind = "embedding"
            self.encoder = Encoder(path, batch_size=opts.batch_size)
            self.vocab_size = self.encoder.vocab_size
            self.worker = Worker("candle_bind-embed", self.encoder, opts.max_queue, max_batch=max(opts.batch_size * 8, 1))
        else:
            from ..models import from_gguf
            from .generate import Generator

            self.kind = "llm"
            self.llm = from_gguf(path, device=opts.device)
            self.tokenizer = self.llm.tokenizer
            self.vocab_size = self.llm.vocab_size
            trained = self.llm.context_length
            self.ctx_size = min(opts.ctx_size, trained) if opts.ctx_size > 0 else trained
            slots = max(1, opts.parallel)
            self.worker = Worker("candle_bind-generate", Generator(self.llm, self.ctx_size, slots), opts.max_queue,
                                 max_batch=slots)
        m = self.metrics
        m.gauge("queue_depth", "Requests waiting for the model.", lambda: self.worker.depth)
        m.gauge("requests_running", "Requests the model is working on.", lambda: self.worker.running)

    # prompts
    def chat_prompt(self, msgs: List[Dict[str, str]]) -> List[int]:
        try:
            text = self.tokenizer.apply_chat_template(msgs, add_generation_prompt=True)
        except ValueError as e:  # the template's raise_exception (roles out of order, ...)
            raise bad_request(f"the chat template refused these messages: {e}", "messages", "invalid_messages") from None
        except Exception as e:  # noqa: BLE001 - a template error is the request's, not the server's
            raise bad_request(f"the chat template failed on these messages: {type(e).__name__}: {e}", "messages") from None
        return self.tokenizer.encode(text)

    def budgets(self, ids: Sequence[List[int]], max_tokens: Optional[int], param: str) -> List[int]:
        """New tokens allowed for each prompt; a prompt or request past the context is a 400 as OpenAI's."""
        out = []
        for p in ids:
            if not p:
                raise bad_request("the prompt has no tokens", param, "invalid_value")
            room = self.ctx_size - len(p)
            if room <= 0:
                raise bad_request(f"This model's maximum context length is {self.ctx_size} tokens. However, your "
                                  f"{param} resulted in {len(p)} tokens. Please reduce the length of the {param}.",
                                  param, "context_length_exceeded")
            if max_tokens is None:
                out.append(room if self.opts.n_predict <= 0 else min(room, self.opts.n_predict))
            elif max_tokens > room:
                raise bad_request(f"This model's maximum context length is {self.ctx_size} tokens. However, you "
                                  f"requested {len(p) + max_tokens} tokens ({len(p)} in the {param}, {max_tokens} in "
                                  f"the completion). Please reduce the length of the {param} or completion.",
                                  "max_tokens", "context_length_exceeded")
            else:
                out.append(max_tokens)
        return out


class ClientGone(Exception):
    """The client disconnected: its job is cancelled and nothing more is sent."""


async def _disconnected(receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


class Exchange:
    """One request's job as seen from the event loop: its events, watched for the client leaving."""

    def __init__(self, request: Request, job: Job):
        self.job = job
        self.watch = asyncio.ensure_future(_disconnected(request.receive))

    async def next(self):
        get = asyncio.ensure_future(self.job.events.get())
        done, _ = await asyncio.wait({get, self.watch}, return_when=asyncio.FIRST_COMPLETED)
        if get in done:
            return get.result()
        get.cancel()
        raise ClientGone()

    def close(self) -> None:
        self.job.cancel()  # a no-op once the job is done; frees its slot otherwise
        self.watch.cancel()


class SSEResponse(Response):
    """Server-sent events from an async iterator; closing (finished, failed or the client gone) cancels the job."""

    media_type = "text/event-stream"

    def __init__(self, events: AsyncIterator[str], exchange: Exchange, on_close):
        self.status_code = 200
        self.raw_headers = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache"),
                            (b"x-accel-buffering", b"no")]
        self.events = events
        self.exchange = exchange
        self.on_close = on_close

    async def __call__(self, scope, receive, send) -> None:
        status = 200
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            async for data in self.events:
                await send({"type": "http.response.body", "body": data.encode("utf-8"), "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except (ClientGone, OSError, asyncio.CancelledError):
            status = 499  # nginx's "client closed request", for the metrics only
        finally:
            self.exchange.close()
            self.on_close(status)


def _sse(obj: Any) -> str:
    import json

    return "data: " + json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n\n"


def build_app(host: Host) -> Starlette:
    opts, metrics = host.opts, host.metrics

    def finish(endpoint: str, status: int, started: float) -> None:
        metrics.inc("requests_total", help="Requests answered, by endpoint and HTTP status.", endpoint=endpoint, status=str(status))
        metrics.observe("request_duration_seconds", time.perf_counter() - started,
                        help="Time from a request's arrival to its last byte.", endpoint=endpoint)

    def error_response(e: APIError) -> JSONResponse:
        headers = {"www-authenticate": "Bearer"} if e.status == 401 else ({"retry-after": "1"} if e.status in (429, 503) else None)
        return JSONResponse(e.body(), status_code=e.status, headers=headers)

    def endpoint(name: str):
        """A route that answers any failure with OpenAI's error body and counts itself in the metrics."""
        def wrap(fn):
            async def route(request: Request) -> Response:
                started = time.perf_counter()
                try:
                    response = await fn(request, started)
                except APIError as e:
                    response = error_response(e)
                except (ClientGone, ClientDisconnect):
                    finish(name, 499, started)
                    return Response(status_code=499)
                except Exception as e:  # noqa: BLE001 - never a traceback page, never a dead server
                    response = error_response(APIError(500, f"internal error: {type(e).__name__}: {e}", code="internal_error"))
                if not isinstance(response, SSEResponse):
                    finish(name, response.status_code, started)
                return response
            return route
        return wrap

    async def read_json(request: Request) -> Fields:
        if not host.worker.accepting:
            raise unavailable()
        limit = opts.max_body
        length = request.headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                raise bad_request("invalid Content-Length header", code="invalid_request")
            if int(length) > limit:
                raise APIError(413, f"the request body is {int(length)} bytes, over this server's limit of {limit} "
                               "(--max-body-size)", code="request_too_large")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise APIError(413, f"the request body is over this server's limit of {limit} bytes (--max-body-size)",
                               code="request_too_large")
            chunks.append(chunk)
        return Fields(parse_json(b"".join(chunks)))

    def need(kind: str, path: str) -> None:
        if host.kind != kind:
            what = "an embedding model: use /v1/embeddings" if host.kind == "embedding" else "a generative model: use /v1/chat/completions or /v1/completions"
            raise bad_request(f"`{host.model_id}` is {what} ({path} is not available)", "model", "model_not_supported")

    # generation --------------------------------------------------------------------------------------
    async def generate(request: Request, started: float, chat: bool) -> Response:
        from .generate import GenTask

        path = "/v1/chat/completions" if chat else "/v1/completions"
        f = await read_json(request)
        model = check_model(f, host.names)
        need("llm", path)
        s = sampling(f, host.vocab_size, chat)
        if chat:
            msgs = messages(f)
            ids = [await asyncio.to_thread(host.chat_prompt, msgs)]
            echo = [""]
        else:
            raw = prompts(f, host.vocab_size)
            ids = await asyncio.to_thread(lambda: [host.tokenizer.encode(p) if isinstance(p, str) else p for p in raw])
            want_echo = f.boolean("echo", False)
            echo = [(p if isinstance(p, str) else host.tokenizer.decode(p)) if want_echo else "" for p in raw]
        if len(ids) * s.n > 64:
            raise bad_request(f"{len(ids)} prompts x n={s.n} choices is over this server's 64 choices per request", "n", "invalid_value")
        budgets = host.budgets(ids, s.max_tokens, "messages" if chat else "prompt")
        job = host.worker.submit(Job(GenTask(ids, budgets, s, echo)))
        ex = Exchange(request, job)
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex[:24]
        head = {"id": rid, "object": "chat.completion.chunk" if chat else "text_completion",
                "created": int(time.time()), "model": model}
        if chat:
            head["system_fingerprint"] = host.fingerprint
        endpoint_name = "chat" if chat else "completions"
        try:
            first = await ex.next()  # waits out the queue: a 503 there is still an HTTP error, not a stream
        except BaseException:
            ex.close()
            raise
        if first[0] == "error":
            ex.close()
            raise first[1]

        def note_done(usage: Dict[str, int]) -> None:
            metrics.inc("prompt_tokens_total", usage["prompt_tokens"], help="Prompt tokens processed.")
            metrics.inc("completion_tokens_total", usage["completion_tokens"], help="Tokens generated.")
            if job.first_token is not None:
                metrics.observe("time_to_first_token_seconds", job.first_token - job.submitted,
                                help="Time from a request's arrival in the queue to its first token.")
            if job.started is not None:
                metrics.observe("queue_wait_seconds", job.started - job.submitted, help="Time requests waited for the model.")

        if s.stream:
            async def events() -> AsyncIterator[str]:
                ev = first
                seen = set()
                while True:
                    kind, v = ev
                    if kind == "error":
                        yield _sse(v.body())
                        return
                    if kind == "done":
                        note_done(v)
                        if s.include_usage:
                            yield _sse({**head, "choices": [], "usage": v})
                        yield "data: [DONE]\n\n"
                        return
                    i = v["index"]
                    extra = {"usage": None} if s.include_usage else {}
                    if chat and i not in seen:
                        seen.add(i)
                        yield _sse({**head, "choices": [{"index": i, "delta": {"role": "assistant", "content": ""},
                                                         "logprobs": None, "finish_reason": None}], **extra})
                    if kind == "token" and (v["text"] or v["logprobs"]):
                        lp = _logprobs_chat([v["logprobs"]]) if chat else _logprobs_text([v])
                        lp = lp if v["logprobs"] else None
                        choice = ({"index": i, "delta": {"content": v["text"]}, "logprobs": lp, "finish_reason": None} if chat
                                  else {"index": i, "text": v["text"], "logprobs": lp, "finish_reason": None})
                        yield _sse({**head, "choices": [choice], **extra})
                    elif kind == "end":
                        choice = ({"index": i, "delta": {}, "logprobs": None, "finish_reason": v["finish_reason"]} if chat
                                  else {"index": i, "text": "", "logprobs": None, "finish_reason": v["finish_reason"]})
                        yield _sse({**head, "choices": [choice], **extra})
                    ev = await ex.next()

            return SSEResponse(events(), ex, lambda status: finish(endpoint_name, status, started))

        try:
            texts: Dict[int, List[str]] = {}
            lps: Dict[int, List[Dict[str, Any]]] = {}
            reasons: Dict[int, str] = {}
            ev = first
            while ev[0] != "done":
                kind, v = ev
                if kind == "error":
                    raise v
                i = v["index"]
                if kind == "token":
                    texts.setdefault(i, []).append(v["text"])
                    if v["logprobs"]:
                        lps.setdefault(i, []).append(v)
                else:
                    reasons[i] = v["finish_reason"]
                ev = await ex.next()
        finally:
            ex.close()
        usage = ev[1]
        note_done(usage)
        choices = []
        for i in sorted(reasons):
            text = "".join(texts.get(i, []))
            if chat:
                lp = _logprobs_chat([t["logprobs"] for t in lps.get(i, [])]) if s.logprobs is not None else None
                choices.append({"index": i, "message": {"role": "assistant", "content": text, "refusal": None},
                                "logprobs": lp, "finish_reason": reasons[i]})
            else:
                lp = _logprobs_text(lps.get(i, [])) if s.logprobs is not None else None
                choices.append({"index": i, "text": text, "logprobs": lp, "finish_reason": reasons[i]})
        body = {**head, "object": "chat.completion" if chat else "text_completion", "choices": choices, "usage": usage}
        return JSONResponse(body)

    @endpoint("chat")
    async def chat_completions(request: Request, started: float) -> Response:
        return await generate(request, started, chat=True)

    @endpoint("completions")
    async def completions(request: Request, started: float) -> Response:
        return await generate(request, started, chat=False)

    # embeddings ---------------------------------------------------------------------------------------
    @endpoint("embeddings")
    async def embeddings(request: Request, started: float) -> Response:
        f = await read_json(request)
        model = check_model(f, host.names)
        need("embedding", "/v1/embeddings")
        inputs = embedding_inputs(f, host.vocab_size, opts.max_inputs)
        fmt = f.string("encoding_format") or "float"
        if fmt not in ("float", "base64"):
            raise bad_request(f"'encoding_format' must be 'float' or 'base64', got {fmt!r}", "encoding_format", "invalid_value")
        dims = f.integer("dimensions", None, 1)
        if dims is not None and dims != host.encoder.dim:
            raise bad_request(f"this model's embeddings have {host.encoder.dim} dimensions; 'dimensions' {dims} is not "
                              "supported", "dimensions", "invalid_value")
        ids = await asyncio.to_thread(host.encoder.tokenize, inputs)
        job = host.worker.submit(Job(ids, size=len(ids)))
        ex = Exchange(request, job)
        try:
            kind, v = await ex.next()
        finally:
            ex.close()
        if kind == "error":
            raise v
        vectors, tokens = v
        metrics.inc("embedding_inputs_total", len(ids), help="Inputs embedded.")
        metrics.inc("prompt_tokens_total", tokens, help="Prompt tokens processed.")
        data = []
        for i, vec in enumerate(vectors):
            emb: Any = (base64.b64encode(np.ascontiguousarray(vec, dtype="<f4").tobytes()).decode("ascii")
                        if fmt == "base64" else vec.tolist())
            data.append({"object": "embedding", "index": i, "embedding": emb})
        return JSONResponse({"object": "list", "data": data, "model": model,
                             "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    # the rest -----------------------------------------------------------------------------------------
    def model_card() -> Dict[str, Any]:
        card = {"id": host.model_id, "object": "model", "created": host.created, "owned_by": "candle_bind"}
        if host.kind == "llm":
            card["meta"] = {"n_ctx": host.ctx_size, "n_vocab": host.vocab_size, "parallel": opts.parallel}
        else:
            card["meta"] = {"dimensions": host.encoder.dim, "max_seq_length": host.encoder.max_seq_length}
        return card

    @endpoint("models")
    async def list_models(request: Request, started: float) -> Response:
        return JSONResponse({"object": "list", "data": [model_card()]})

    @endpoint("models")
    async def get_model(request: Request, started: float) -> Response:
        name = request.path_params["name"]
        if name not in host.names:
            raise APIError(404, f"The model `{name}` does not exist", "model", "model_not_found")
        return JSONResponse(model_card())

    @endpoint("health")
    async def health(request: Request, started: float) -> Response:
        if not host.worker.accepting:
            raise unavailable()
        return JSONResponse({"status": "ok"})

    @endpoint("metrics")
    async def prometheus(request: Request, started: float) -> Response:
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4")

    routes = [
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/completions", completions, methods=["POST"]),
        Route("/completions", completions, methods=["POST"]),
        Route("/v1/embeddings", embeddings, methods=["POST"]),
        Route("/embeddings", embeddings, methods=["POST"]),
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/models", list_models, methods=["GET"]),
        Route("/v1/models/{name:path}", get_model, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/v1/health", health, methods=["GET"]),
        Route("/metrics", prometheus, methods=["GET"]),
    ]

    async def http_error(request: Request, exc: HTTPException) -> Response:
        # Starlette's plain-text 404/405 for routes it does not know become OpenAI's body.
        what = {404: "Invalid URL", 405: "Method not allowed"}.get(exc.status_code, exc.detail)
        err = APIError(exc.status_code, f"{what} ({request.method} {request.url.path})")
        finish("unknown", exc.status_code, time.perf_counter())
        return JSONResponse(err.body(), exc.status_code, headers=exc.headers)

    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error})
    return Guard(app, host)


class Guard:
    """The outermost ASGI layer: the API key, checked before anything else is read."""

    def __init__(self, app, host: Host):
        self.app = app
        self.host = host
        key = host.opts.api_key
        self._key = None if not key else key.encode("utf-8")

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if self._key is not None and scope["path"] not in PUBLIC_PATHS and not self._authorized(scope):
            err = APIError(401, "Incorrect API key provided. Pass it as 'Authorization: Bearer <key>'.",
                           code="invalid_api_key")
            self.host.metrics.inc("requests_total", help="Requests answered, by endpoint and HTTP status.",
                                  endpoint="auth", status="401")
            return await JSONResponse(err.body(), 401, headers={"www-authenticate": "Bearer"})(scope, receive, send)
        await self.app(scope, receive, send)

    def _authorized(self, scope) -> bool:
        for name, value in scope.get("headers", []):
            if name == b"authorization" and value[:7].lower() == b"bearer ":
                return hmac.compare_digest(value[7:].strip(), self._key)
            if name in (b"x-api-key", b"api-key"):
                return hmac.compare_digest(value.strip(), self._key)
        return False


def _logprobs_chat(items: List[Optional[Dict[str, Any]]]) -> Dict[str, Any]:
    return {"content": [{"token": x["token"], "logprob": x["logprob"], "bytes": x["bytes"],
                         "top_logprobs": [{"token": t["token"], "logprob": t["logprob"], "bytes": t["bytes"]}
                                          for t in x["top"]]} for x in items if x]}


def _logprobs_text(events: List[Dict[str, Any]]) -> Dict[str, Any]:
    items = [(e["logprobs"], e.get("offset", 0)) for e in events if e["logprobs"]]
    return {"tokens": [x["token"] for x, _ in items], "token_logprobs": [x["logprob"] for x, _ in items],
            "top_logprobs": [{t["token"]: t["logprob"] for t in x["top"]} for x, _ in items],
            "text_offset": [o for _, o in items]}
