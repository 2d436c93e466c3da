"""Tiny harness shared by the scripts in tests/hf (stdlib and torch only, no candle_bind).

Each script is a list of sections; a section prints `key value` lines (value a Python literal) with
keys `<section>.<name>`. A section that raises prints `error:<section> '<traceback>'` instead, so
one broken feature does not hide the others run by the same process."""

import sys
import traceback

import torch

_SECTIONS = []


def section(fn):
    _SECTIONS.append(fn)
    return fn


def emit(key, value):
    """Prints one result; tensors become (nested) lists, floats rounded to 7 significant digits."""
    if isinstance(value, torch.Tensor):
        value = value.detach().float().tolist() if value.is_floating_point() else value.tolist()
    print(key, repr(_rounded(value)), flush=True)


def _rounded(value):
    if isinstance(value, float):
        return float(f"{value:.7g}")
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    return value


_models: dict = {}


def causal_lm(path):
    """The causal LM saved at `path`, loaded once per process."""
    from transformers import AutoModelForCausalLM

    if path not in _models:
        _models[path] = AutoModelForCausalLM.from_pretrained(path).eval()
    return _models[path]


def prompt_inputs(prompt):
    ids = torch.tensor(prompt)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def main(*args):
    wanted = sys.argv[1 + len(args):] or [fn.__name__ for fn in _SECTIONS]
    for fn in _SECTIONS:
        if fn.__name__ not in wanted:
            continue
        try:
            with torch.no_grad():
                for key, value in fn(*args):
                    emit(f"{fn.__name__}.{key}", value)
        except Exception:  # noqa: BLE001 - reported to the test, which fails on it
            print(f"error:{fn.__name__}", repr(traceback.format_exc()), flush=True)
