"""The hand-kept stubs name everything the native module exports (and nothing it lacks)."""

import ast
import inspect
from pathlib import Path

import candle_bind
import candle_bind._C as C

STUB = Path(candle_bind.__file__).with_name("_C.pyi")


def _stub_names():
    tree = ast.parse(STUB.read_text())
    top, members = set(), {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            top.add(node.name)
            members[node.name] = {n.name if isinstance(n, ast.FunctionDef) else n.target.id
                                  for n in node.body if isinstance(n, (ast.FunctionDef, ast.AnnAssign))}
        elif isinstance(node, ast.FunctionDef):
            top.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            top.add(node.target.id)
    return top, members


def test_module_names_match():
    top, _ = _stub_names()
    # Private helpers the tests call (`_pool_panic_check`) are stubbed too; dunders are not.
    runtime = {n for n in dir(C) if not n.startswith("__") or n == "__version__"}
    runtime -= {"StorageOwner"}
    # torch._C's Python-side names (DispatchKey, DisableTorchFunctionSubclass, ...) are set on it from Python.
    from candle_bind import _torch_c

    runtime -= set(_torch_c.NAMES)
    assert runtime - top == set(), "missing from _C.pyi"
    assert top - runtime == set(), "in _C.pyi but not in _C"


def test_tensor_methods_match():
    _, members = _stub_names()
    # Methods and properties candle_bind adds in Python (`_tensor.py`, `_ops.py`) are not native, nor
    # are torch's alias names bound to native methods (`greater` is `gt`).
    runtime = {n for n, v in vars(C.Tensor).items()
               if not n.startswith("__") and not inspect.isfunction(getattr(v, "__func__", v))
               and not isinstance(v, property)
               and getattr(v, "__name__", n) == n}
    assert runtime - members["Tensor"] == set(), "Tensor methods missing from _C.pyi"
    assert {n for n in members["Tensor"] if not n.startswith("__")} - runtime == set()


def test_stubs_type_check(tmp_path):
    """mypy accepts the stub file itself (names, annotations). Checked as a copy: mypy refuses files
    that live inside site-packages, where a non-editable install puts it."""
    from mypy import api

    copy = tmp_path / "candle_bind_C.pyi"
    copy.write_text(STUB.read_text())
    out, err, status = api.run([str(copy), "--no-error-summary", "--cache-dir", str(tmp_path / ".mypy_cache")])
    assert status == 0, out + err
