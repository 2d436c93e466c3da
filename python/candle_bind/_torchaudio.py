"""torchaudio under the shim. Its Python code (functional, transforms, models, pipelines) runs unmodified;
its compiled libraries (`torchaudio/lib/*.so`, built against torch's C++ ABI) cannot load here.

torchaudio loads them through `torchaudio._extension.utils._load_lib`, which re-raises a load failure (it
only tolerates a library file that is not there, for pex deployments). The shim patches that function right
after the module loads (compat's `_AFTER_IMPORT`) to report the library as absent, so `import torchaudio`
takes the path torchaudio itself supports without its extension: `_IS_TORCHAUDIO_EXT_AVAILABLE` is False,
`lfilter` and `overdrive` use their Python loops. The functions that need a compiled operator
(`forced_align`, `rnnt_loss`, the CUDA CTC decoder) raise NotImplementedError naming the function, the
operator and what to use instead: stand-ins registered under the operators' names here.
"""

from __future__ import annotations

__all__ = ["patch"]

# torch.ops name -> the torchaudio function that calls it, and what to use instead
_COMPILED_ONLY = {
    "torchaudio::rnnt_loss_forward": ("torchaudio.functional.rnnt_loss / torchaudio.transforms.RNNTLoss",
                                      "run it with real torch (a training loss)"),
    "torchaudio::forced_align": ("torchaudio.functional.forced_align", "run it with real torch"),
    "torchaudio_prefixctc::prefixCTC_alloc": ("torchaudio.models.decoder.CUCTCDecoder",
                                              "a CPU CTC decoder (e.g. greedy argmax over the emissions)"),
    "torchaudio_prefixctc::prefixCTC_free": ("torchaudio.models.decoder.CUCTCDecoder", ""),
    "torchaudio_prefixctc::ctc_beam_search_decoder_batch_gpu_v2": ("torchaudio.models.decoder.CUCTCDecoder", ""),
}


def _stand_in(qualname: str, function: str, instead: str):
    def op(*args, **kwargs):
        hint = f"; instead: {instead}" if instead else ""
        op_name = "torch.ops." + qualname.replace("::", ".")
        raise NotImplementedError(f"{function} needs torchaudio's compiled operator {op_name}, which cannot load "
                                  f"under candle_bind (torchaudio's C++ library is built against torch's C++ ABI){hint}")

    return op


def _load_lib(lib: str) -> bool:
    """torchaudio's probe for one of its compiled libraries: absent here (torchaudio runs without it)."""
    return False


def _fail_if_no_align(func):
    """torchaudio's decorator for the alignment functions, with a message that says why here."""
    import functools

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        _stand_in("torchaudio::forced_align", *_COMPILED_ONLY["torchaudio::forced_align"])()

    return wrapped


def patch(module) -> None:
    """Runs right after `torchaudio._extension.utils` loads (before torchaudio imports `_load_lib` from it),
    and after `torchaudio._extension` (before the alignment functions take its `fail_if_no_align`)."""
    from .library import _OPS, CustomOpDef

    if module.__name__ == "torchaudio._extension":
        module.fail_if_no_align = _fail_if_no_align
        return
    module._load_lib = _load_lib
    for qualname, (function, instead) in _COMPILED_ONLY.items():
        _OPS.setdefault(qualname, CustomOpDef(qualname, _stand_in(qualname, function, instead)))
