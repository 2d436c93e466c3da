"""What needs torchaudio's compiled operators, under the shim: torchaudio runs without its extension (as it
does when the library is absent) and the functions that need it raise clear errors. Run under the shim only.

    python -m candle_bind run torchaudio_unsupported.py [section ...]
"""

import sys

import torch
import torchaudio
import torchaudio.functional as AF

from harness import emit, main, section  # noqa: F401


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the error is the result
        return [type(e).__name__, str(e)]
    return None


@section
def extension():
    yield "version", torchaudio.__version__
    yield "available", torchaudio._extension._IS_TORCHAUDIO_EXT_AVAILABLE
    yield "align_available", torchaudio._extension._IS_ALIGN_AVAILABLE


@section
def errors():
    log_probs = torch.randn(1, 10, 5).log_softmax(-1)
    yield "forced_align", _error(lambda: AF.forced_align(log_probs, torch.tensor([[1, 2]], dtype=torch.int32)))
    logits = torch.randn(1, 6, 3, 5)
    targets, lengths = torch.tensor([[1, 2]], dtype=torch.int32), torch.tensor([6], dtype=torch.int32)
    yield "rnnt_loss", _error(lambda: AF.rnnt_loss(logits, targets, lengths, torch.tensor([2], dtype=torch.int32)))
    yield "load_library", _error(lambda: torch.ops.load_library("libtorchaudio.so"))


if __name__ == "__main__":
    main()
