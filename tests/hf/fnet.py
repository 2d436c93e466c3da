"""FNet (token mixing by a 2-d Fourier transform, torch.fft.fftn(...).real) through transformers, from a
tiny checkpoint the test saves.

    python fnet.py <model dir> [section ...]   |   python -m candle_bind run fnet.py <model dir> [section ...]
"""

import sys

import torch
from transformers import FNetForMaskedLM, FNetModel

from common import main, section


@section
def fnet(path):
    model = FNetModel.from_pretrained(path).eval()
    ids = torch.tensor([[1, 5, 7, 9, 2, 3], [4, 8, 15, 16, 23, 42]])
    out = model(input_ids=ids)
    yield "last_hidden_state", out.last_hidden_state
    yield "pooler_output", out.pooler_output
    mlm = FNetForMaskedLM.from_pretrained(path).eval()
    yield "mlm_argmax", mlm(input_ids=ids).logits.argmax(-1)


if __name__ == "__main__":
    main(sys.argv[1])
