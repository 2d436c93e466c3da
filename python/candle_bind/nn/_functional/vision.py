"""Vision functionals (torch's docs grouping): pad, pixel/channel shuffle, interpolate, upsample, grid_sample."""

from __future__ import annotations

import builtins
import functools
import math
from typing import Optional, Sequence

from ... import _C
from ..._C import Tensor
from ..._tensor import not_implemented
# Functionals call each other as F.x, looked up at call time as the one-file module's globals were:
# a monkeypatched nn.functional.x reaches these callers too.
from .. import functional as F
from ..._opmath import opmath, round_to, rounding_dtype


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: Optional[float] = None) -> Tensor:
    """torch.nn.functional.pad: pairs (left, right) from the last dim backwards; negative pads crop."""
    if len(pad) % 2 != 0:
        raise RuntimeError("Padding length must be divisible by 2")
    npairs = len(pad) // 2
    if npairs > input.dim():
        raise RuntimeError("Padding length should be less than or equal to two times the input dimension "
                           f"but got padding length {len(pad)} and input of dimension {input.dim()}")
    pairs = [(int(pad[2 * i]), int(pad[2 * i + 1])) for i in range(npairs)]  # pairs[0] is the last dim
    if input.is_complex():  # the real and imaginary parts pad alike (the fill value split the same way)
        from ... import complex as _complex

        fill = complex(0 if value is None else value)
        return _complex(F.pad(input.real, pad, mode, fill.real if value is not None else None),
                        F.pad(input.imag, pad, mode, fill.imag if value is not None else None))
    if mode == "constant":
        fill = 0 if value is None else value
        shape = list(input.shape)
        src = [builtins.slice(None)] * input.dim()
        dst = [builtins.slice(None)] * input.dim()
        x = input
        for i, (lo, hi) in enumerate(pairs):
            d = input.dim() - 1 - i
            n = shape[d]
            new = n + lo + hi
            if new < 0:
                raise RuntimeError(f"The input size {n}, plus negative padding {lo} and {hi} resulted in a negative output size, which is invalid. Check dimension {d} of your input.")
            shape[d] = new
            # Crop for negative pads, place after the positive ones.
            s0, s1 = max(-lo, 0), n - max(-hi, 0)
            src[d] = builtins.slice(s0, max(s1, s0))
            dst[d] = builtins.slice(max(lo, 0), max(lo, 0) + max(s1 - s0, 0))
        out = _C.full(shape, fill, dtype=input.dtype, device=input.device)
        out[tuple(dst)] = x[tuple(src)]
        return out
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    _check_nonconstant_pad(input, pairs, mode)
    x = input
    for i, (lo, hi) in enumerate(pairs):
        d = input.dim() - 1 - i
        n = x.shape[d]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, but got: padding ({lo}, {hi}) at dimension {d} of input {list(input.shape)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if mode == "circular" and (lo < 0 or hi < 0):  # torch crops the negative sides first, then wraps
            x = x.narrow(d, max(-lo, 0), n - max(-lo, 0) - max(-hi, 0))
            n, lo, hi = x.shape[d], max(lo, 0), max(hi, 0)
        shape = list(x.shape)
        shape[d] = n + lo + hi
        _C.reserve(shape, x.dtype)  # the size is the user's: checked before the index is built
        j = _C.arange(-lo, n + hi)
        if mode == "reflect":
            j = j.abs()
            idx = _C.where(j >= n, 2 * (n - 1) - j, j)
        elif mode == "replicate":
            idx = j.clamp(0, builtins.max(n - 1, 0))
        else:
            idx = j.remainder(builtins.max(n, 1))
        x = x.index_select(d, idx.to(x.device))
    return x


def _check_nonconstant_pad(input, pairs, mode):
    """torch's checks for reflect / replicate / circular padding: 1-3 padded dims on a (batched)
    input of that rank, non-empty non-batch dims and outputs of at least 1 (reflect, replicate),
    no negative output size (circular)."""
    k, nd = len(pairs), input.dim()
    if k not in (1, 2, 3) or nd not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {2 * k} is not supported for {nd}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    shape = list(input.shape)
    if mode == "circular":
        for i, (lo, hi) in enumerate(pairs):
            if shape[nd - 1 - i] + lo + hi < 0:
                raise RuntimeError("Negative padding value is resulting in an empty dimension")
        return
    if builtins.any(s == 0 for s in shape[1 if nd == k + 2 else 0:]):
        raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and other "
                           f"non-zero dimensions for input, but got: {shape}")
    if mode == "reflect":
        for i, (lo, hi) in enumerate(pairs):
            d = nd - 1 - i
            if lo >= shape[d] or hi >= shape[d]:
                raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                                   f"but got: padding ({lo}, {hi}) at dimension {d} of input {shape}")
    names = "DHW"[3 - k:]
    ins = [shape[nd - k + j] for j in range(k)]
    outs = [ins[j] + pairs[k - 1 - j][0] + pairs[k - 1 - j][1] for j in range(k)]
    if builtins.any(o < 1 for o in outs):
        if k == 1:
            raise RuntimeError(f"input (W: {ins[0]}) is too small. Calculated output W: {outs[0]}")
        raise RuntimeError("Calculated output " + " ".join(f"{c}: {o}" for c, o in zip(names, outs))
                           + " must be >= 1 in every dimension (input "
                           + ", ".join(f"{c}: {v}" for c, v in zip(names, ins)) + ")")


def pixel_shuffle(input, upscale_factor):
    r = int(upscale_factor)
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    r = int(downscale_factor)
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width to be divisible by downscale_factor, but got {h}x{w} and {r}")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input, groups):
    n, c = input.shape[0], input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = input.shape[2:]
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


def _source_index(out_size, in_size, scale, align_corners, cubic=False):
    """torch's area_pixel_compute_source_index for every output position."""
    idx = _C.arange(out_size, dtype=_C.float64)
    if align_corners:
        ratio = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        return idx * ratio
    src = (idx + 0.5) * scale - 0.5
    return src if cubic else src.clamp_min(0.0)


def _cubic_weights(t, A=-0.75):
    def near(x):  # |x| <= 1
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _along(x, d, idx):
    return x.index_select(d, idx.long().to(x.device))


def _weights_shape(w, x, d):
    shape = [1] * x.dim()
    shape[d] = w.shape[0]
    return w.reshape(*shape).to(x.dtype).to(x.device)


@functools.lru_cache(maxsize=256)
def _taps(mode, L, O, scale, ac):
    """(indices, weights) per output position along one axis, as torch's kernels compute them: in float32,
    their opmath type for float32, half and bfloat16 inputs (so a value halfway between two integers
    rounds as torch's does). Cached: computing them in Python took as long as the resampling itself, and a
    network resizes the same few shapes again and again (callers never modify the lists)."""
    import numpy as np

    f32 = np.float32
    scale = f32(scale)
    if mode in ("nearest", "nearest-exact"):
        off = 0.0 if mode == "nearest" else 0.5
        return [[min(int(math.floor(f32(j + off) * scale)), L - 1)] for j in range(O)], [[1.0]] * O
    idx, wts = [], []
    ratio = f32((L - 1) / (O - 1)) if O > 1 else f32(0.0)
    for j in range(O):
        if ac:
            src = ratio * f32(j)
        else:
            src = scale * (f32(j) + f32(0.5)) - f32(0.5)
            if mode != "bicubic":
                src = max(src, f32(0.0))
        i0 = math.floor(src)
        t = src - f32(i0)
        if mode == "bicubic":
            A = f32(-0.75)
            one, two = f32(1.0), f32(2.0)
            w = [((A * (t + one) - f32(5) * A) * (t + one) + f32(8) * A) * (t + one) - f32(4) * A,
                 ((A + two) * t - (A + f32(3))) * t * t + one,
                 ((A + two) * (one - t) - (A + f32(3))) * (one - t) * (one - t) + one,
                 ((A * (two - t) - f32(5) * A) * (two - t) + f32(8) * A) * (two - t) - f32(4) * A]
            idx.append([min(max(i0 + k - 1, 0), L - 1) for k in range(4)])
            wts.append([float(v) for v in w])
            continue
        if mode == "bicubic":
            A = -0.75
            w = [((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A,
                 ((A + 2) * t - (A + 3)) * t * t + 1,
                 ((A + 2) * (1 - t) - (A + 3)) * (1 - t) * (1 - t) + 1,
                 ((A * (2 - t) - 5 * A) * (2 - t) + 8 * A) * (2 - t) - 4 * A]
            idx.append([min(max(i0 + k - 1, 0), L - 1) for k in range(4)])
            wts.append(w)
        else:
            i0 = min(i0, L - 1)
            t = min(max(t, f32(0.0)), f32(1.0))
            idx.append([i0, min(i0 + 1, L - 1)])
            wts.append([float(f32(1.0) - t), float(t)])
    return idx, wts


@functools.lru_cache(maxsize=256)
def _taps_aa(mode, L, O, scale, ac, antialias=True, delta=0.0):
    """Antialiased taps (torch's `_compute_weights_aa`): the bilinear (triangle) or bicubic (a = -0.5) filter
    stretched over `scale` input pixels when downsampling, weights normalised per output position. With
    `antialias=False` (torch's uint8 kernels) the filter is not stretched and bicubic's a is -0.75; `delta`
    is their 0.5 shift for align_corners."""
    interp = 2 if mode == "bilinear" else 4
    stretch = scale >= 1.0 and antialias
    support = interp * 0.5 * scale if stretch else interp * 0.5
    invscale = 1.0 / scale if stretch else 1.0
    a = -0.5 if antialias else -0.75

    def filt(x):
        x = abs(x)
        if mode == "bilinear":
            return 1.0 - x if x < 1.0 else 0.0
        if x < 1.0:
            return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
        return (((x - 5.0) * x + 8.0) * x - 4.0) * a if x < 2.0 else 0.0

    idx, wts = [], []
    for i in range(O):
        center = scale * (i + 0.5 - delta)
        lo = max(int(center - support + 0.5 + delta), 0)
        hi = min(int(center + support + 0.5 + delta), L)
        w = [filt((j - center + 0.5 - delta) * invscale) for j in range(lo, hi)]
        total = sum(w)
        idx.append(list(range(lo, hi)))
        wts.append([v / total for v in w] if total != 0.0 else w)
    return idx, wts


def _merged(index, weights):
    """(index, summed weight) pairs: a border pixel a clamped window names twice counts once."""
    total: dict = {}
    for i, w in zip(index, weights):
        total[i] = total.get(i, 0.0) + w
    return list(total.items())


def _resize_uint8(input, out, scales, mode, ac, antialias):
    """torch's uint8 bilinear/bicubic images (<= 4 channels): double weights turned into int16 with PIL's
    precision rule, a horizontal then a vertical pass, each rounded and saturated to uint8 (torch's AVX2
    kernel, PIL's arithmetic). Exact integers, so it runs in numpy."""
    import numpy as np

    x = input.cpu().numpy()
    for d in (3, 2):  # the width first, as torch's kernel
        L, O = x.shape[d], out[d - 2]
        if L == O and scales[d - 2] in (None, 1.0):
            continue
        if ac:
            scale = (L - 1) / (O - 1) if O > 1 else 0.0
        else:
            scale = L / O if scales[d - 2] is None else 1.0 / scales[d - 2]
        if mode == "bicubic" and not antialias:  # torch's cubic taps, border pixels repeated (merged here)
            idx, wts = zip(*(zip(*_merged(ix, w)) for ix, w in zip(*_taps(mode, L, O, scale, ac))))
        else:
            idx, wts = _taps_aa(mode, L, O, scale, ac, antialias, 0.5 if ac and not antialias else 0.0)
        w_max = builtins.max((v for w in wts for v in w), default=0.0)
        precision = 0
        while precision < 22 and int(0.5 + w_max * (1 << (precision + 1))) < (1 << 15):
            precision += 1
        dense = np.zeros((O, L), dtype=np.int64)
        for j, (ix, w) in enumerate(zip(idx, wts)):
            for i, v in zip(ix, w):
                v *= 1 << precision
                dense[j, i] = int(-0.5 + v) if v < 0 else int(0.5 + v)
        moved = np.moveaxis(x.astype(np.int64), d, -1)
        acc = (moved @ dense.T + (1 << (precision - 1) if precision else 0)) >> precision
        x = np.moveaxis(np.clip(acc, 0, 255).astype(np.uint8), -1, d)
    return _C.from_numpy(np.ascontiguousarray(x)).to(input.device)


_INTERPOLATE_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """torch's F.interpolate (half precision computed in float32: opmath); torch's CPU has no half antialias."""
    if antialias and getattr(input, "dtype", None) in (_C.float16, _C.bfloat16) and mode in ("bilinear", "bicubic"):
        raise not_implemented("compute_index_ranges_weights", input.dtype)
    return _interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)


def _scale(L, O, scale_factor):
    """Input positions per output position along an axis: from the sizes, or the given factor."""
    return (L / O) if scale_factor is None else 1.0 / scale_factor


@opmath
def _interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                 antialias=False):
    """torch's F.interpolate for nearest, nearest-exact, (bi/tri)linear, bicubic and area, with size
    or scale_factor, align_corners and recompute_scale_factor; separable, one spatial dim at a time."""
    n = input.dim() - 2
    if n < 1 or mode not in _INTERPOLATE_MODES:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact (got {mode})")
    expected = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
    if mode in expected and expected[mode] != n:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {expected[mode] + 2}D input")
    if mode in ("nearest", "area", "nearest-exact") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear")
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    if antialias and (mode not in ("bilinear", "bicubic") or input.dim() != 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input")
    if antialias and input.dtype in (_C.float16, _C.bfloat16):
        raise not_implemented("compute_index_ranges_weights", input.dtype)
    if not input.is_floating_point() and mode != "area" and (
            input.dtype != _C.uint8 or mode in ("linear", "trilinear")):
        kernel = {"nearest": "nearest", "nearest-exact": "nearest", "bicubic": "cubic"}.get(mode, "linear")
        raise not_implemented(f"compute_indices_weights_{kernel}", input.dtype)
    spatial = list(input.shape[2:])
    if size is not None:
        out = list(size) if isinstance(size, (list, tuple)) else [int(size)] * n
        if len(out) != n:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with spatial dimensions of {spatial} and output size of {out}.")
        scales = [None] * n
    else:
        sf = list(scale_factor) if isinstance(scale_factor, (list, tuple)) else [float(scale_factor)] * n
        if len(sf) != n:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input with spatial dimensions of {spatial} and scale_factor of shape {sf}.")
        if not builtins.all(math.isfinite(f) for f in sf):
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
        out = [int(math.floor(s * f)) for s, f in zip(spatial, sf)]
        scales = [None if recompute_scale_factor else f for f in sf]
    out = [int(o) for o in out]
    if mode == "area":  # adaptive pooling (its checks; empty outputs allowed)
        if builtins.all(o >= 0 for o in out):
            _C.reserve(list(input.shape[:2]) + out, input.dtype)
        return (F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d)[n - 1](input, out)
    if builtins.any(o <= 0 for o in out) or builtins.any(s <= 0 for s in spatial):
        names = "DHW"[3 - n:]
        show = lambda v: ", ".join(f"{c}: {x}" for c, x in zip(names, v))  # noqa: E731
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({show(spatial)}) and output ({show(out)})")
    _C.reserve(list(input.shape[:2]) + out, input.dtype)
    if input.numel() == 0:  # nothing to resample: no taps to build for the (possibly huge) sizes
        return _C.empty(*input.shape[:2], *out, dtype=input.dtype, device=input.device)
    if mode == "area":
        return (F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d)[n - 1](input, out)
    ac = bool(align_corners)
    if input.dtype == _C.uint8 and mode in ("bilinear", "bicubic") and input.shape[1] <= 4:
        return _resize_uint8(input, out, scales, mode, ac, antialias)
    if mode in ("nearest", "nearest-exact") and input.device.type == "cpu":
        # Every dim's source positions, then one gather pass over the output (in the input's dtype).
        idx = [list(range(L)) if O == L and sc in (None, 1.0) else [i[0] for i in _taps(mode, L, O, _scale(L, O, sc), ac)[0]]
               for L, O, sc in zip(spatial, out, scales)]
        return _C.resample_nearest(input, idx)
    x = input
    for i in reversed(range(n)):  # the last dim first: its gather pass then runs on the smaller tensor
        d = 2 + i
        L, O = spatial[i], out[i]
        if O == L and scales[i] in (None, 1.0) and mode != "bicubic":
            continue
        scale = _scale(L, O, scales[i])
        if ac and antialias:
            scale = (L - 1) / (O - 1) if O > 1 else 0.0
        if x.dtype != _C.float64 or antialias:
            # Taps and weights per output position, applied along the dim by one Rust pass.
            idx, wts = (_taps_aa if antialias else _taps)(mode, L, O, scale, ac)
            if mode != "bilinear" and not antialias and (half := rounding_dtype()) is not None:
                # torch's half linear/bicubic kernels keep the weights in the input's dtype (linear's first
                # as 1 - the rounded second); its bilinear kernel keeps float32 weights
                wts = round_to(wts, half)
                if mode in ("linear", "trilinear"):
                    wts = round_to([[1.0 - w1, w1] for _, w1 in wts], half)
            x = _C.resample_axis(x.contiguous(), d, idx, wts)
            continue
        if mode in ("nearest", "nearest-exact"):
            pos = _C.arange(O, dtype=_C.float64)
            src = (pos * scale) if mode == "nearest" else ((pos + 0.5) * scale)
            x = _along(x, d, src.floor().clamp(0, L - 1))
        elif mode in ("linear", "bilinear", "trilinear"):
            src = _source_index(O, L, scale, ac)
            i0 = src.floor().clamp(0, L - 1)
            i1 = (i0 + 1).clamp(max=L - 1)
            w = src - i0
            x = _along(x, d, i0) * _weights_shape(1 - w, x, d) + _along(x, d, i1) * _weights_shape(w, x, d)
        elif mode == "bicubic":
            src = _source_index(O, L, scale, ac, cubic=True)
            i0 = src.floor()
            t = src - i0
            ws = _cubic_weights(t)
            acc = None
            for k in range(4):
                idx = (i0 + (k - 1)).clamp(0, L - 1)
                term = _along(x, d, idx) * _weights_shape(ws[k], x, d)
                acc = term if acc is None else acc + term
            x = acc
        else:
            raise NotImplementedError(f"Input Error: unsupported interpolation mode {mode!r}")
    return x if x is not input else input.clone()


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return F.interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    import warnings

    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return F.interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    import warnings

    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return F.interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def affine_grid(theta, size, align_corners=False):
    """Sampling grid (N, H, W, 2) — or (N, D, H, W, 3) — for the affine maps in `theta`."""
    size = list(size)
    spatial = size[2:]
    if len(spatial) not in (2, 3) or tuple(theta.shape[1:]) != (len(spatial), len(spatial) + 1):
        raise ValueError(f"Expected a batch of {len(spatial)}D affine matrices of shape Nx{len(spatial)}x{len(spatial) + 1} for size {size}. Got {list(theta.shape)}.")
    if not (align_corners and min(spatial) == 1) and min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")

    def coords(n):
        if n <= 1:
            return _C.zeros(max(n, 1), dtype=theta.dtype, device=theta.device)
        if align_corners:
            return _C.arange(n, dtype=theta.dtype, device=theta.device) * (2.0 / (n - 1)) - 1
        return (_C.arange(n, dtype=theta.dtype, device=theta.device) * 2 + 1) / n - 1

    axes = [coords(n) for n in reversed(spatial)]  # x, y(, z): innermost first
    grids = []
    mesh_shape = list(spatial)
    for i, a in enumerate(axes):
        shape = [1] * len(spatial)
        shape[len(spatial) - 1 - i] = a.shape[0]
        grids.append(a.reshape(*shape).expand(*mesh_shape))
    grids.append(_C.ones(*mesh_shape, dtype=theta.dtype, device=theta.device))
    base = _C.stack(grids, -1).reshape(1, -1, len(spatial) + 1)
    out = base.matmul(theta.transpose(1, 2))
    return out.reshape(size[0], *spatial, len(spatial))


def _grid_coord(g, n, align_corners, padding_mode):
    x = (g + 1) / 2 * (n - 1) if align_corners else ((g + 1) * n - 1) / 2
    return _pad_coord(x, n, align_corners, padding_mode)


def _pad_coord(x, n, align_corners, padding_mode):
    """torch's compute_coordinates: a pixel coordinate clipped (border) or reflected (reflection)."""
    if padding_mode == "border":
        x = x.clamp(0, n - 1)
    elif padding_mode == "reflection":
        lo, hi = (0.0, n - 1.0) if align_corners else (-0.5, n - 0.5)
        span = hi - lo
        if span <= 0:
            x = x * 0
        else:
            t = (x - lo).abs()
            flips = (t / span).floor()
            extra = t - flips * span
            x = _C.where(flips % 2 == 0, extra + lo, span - extra + lo)
            x = x.clamp(0, n - 1)
    return x


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """2-D grid sampling (bilinear, nearest or bicubic; zeros, border or reflection padding) as torch's;
    5-D inputs sample a volume (trilinear or nearest)."""
    if input.dim() not in (4, 5) or grid.dim() != input.dim():
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', but got: '{padding_mode}'")
    ac = bool(align_corners)
    if input.dim() == 5:
        return _grid_sample_3d(input, grid, mode, padding_mode, ac)
    N, C, H, W = input.shape
    Ho, Wo = grid.shape[1], grid.shape[2]
    flat = input.reshape(N, C, H * W)
    if mode == "bicubic":
        # torch's bicubic: 4x4 taps around the unnormalised point, each tap's coordinate padded.
        gx, gy = grid[..., 0].to(input.dtype), grid[..., 1].to(input.dtype)
        x = (gx + 1) / 2 * (W - 1) if ac else ((gx + 1) * W - 1) / 2
        y = (gy + 1) / 2 * (H - 1) if ac else ((gy + 1) * H - 1) / 2
        x0, y0 = x.floor(), y.floor()
        wxs = [w.unsqueeze(1) for w in _cubic_weights(x - x0)]
        wys = [w.unsqueeze(1) for w in _cubic_weights(y - y0)]

        def tap_padded(xi, yi):
            xi, yi = _pad_coord(xi, W, ac, padding_mode), _pad_coord(yi, H, ac, padding_mode)
            inside = (xi >= 0) & (xi <= W - 1) & (yi >= 0) & (yi <= H - 1)
            idx = (yi.clamp(0, H - 1).floor() * W + xi.clamp(0, W - 1).floor()).long()
            vals = flat.gather(2, idx.reshape(N, 1, Ho * Wo).expand(N, C, Ho * Wo)).reshape(N, C, Ho, Wo)
            return vals * inside.unsqueeze(1).to(input.dtype)

        out = None
        for i in range(4):
            row = None
            for j in range(4):
                term = tap_padded(x0 + (j - 1), y0 + (i - 1)) * wxs[j]
                row = term if row is None else row + term
            row = row * wys[i]
            out = row if out is None else out + row
        return out
    x = _grid_coord(grid[..., 0].to(input.dtype), W, ac, padding_mode)
    y = _grid_coord(grid[..., 1].to(input.dtype), H, ac, padding_mode)

    def tap(xi, yi):
        inside = (xi >= 0) & (xi <= W - 1) & (yi >= 0) & (yi <= H - 1)
        idx = (yi.clamp(0, H - 1) * W + xi.clamp(0, W - 1)).long().reshape(N, 1, Ho * Wo).expand(N, C, Ho * Wo)
        vals = flat.gather(2, idx).reshape(N, C, Ho, Wo)
        return vals * inside.unsqueeze(1).to(input.dtype)

    if mode == "nearest":
        return tap(x.round(), y.round())
    x0, y0 = x.floor(), y.floor()
    wx, wy = (x - x0).unsqueeze(1), (y - y0).unsqueeze(1)
    return (tap(x0, y0) * (1 - wx) * (1 - wy) + tap(x0 + 1, y0) * wx * (1 - wy)
            + tap(x0, y0 + 1) * (1 - wx) * wy + tap(x0 + 1, y0 + 1) * wx * wy)


def _grid_sample_3d(input, grid, mode, padding_mode, ac):
    """Volume sampling: grid (N, Do, Ho, Wo, 3) of (x, y, z) points, the 8 corner taps weighted (trilinear)."""
    if mode == "bicubic" and input.dtype in (_C.float16, _C.bfloat16):  # torch sums the 64 taps in float32
        return _grid_sample_3d(input.float(), grid.float(), mode, padding_mode, ac).to(input.dtype)
    N, C, D, H, W = input.shape
    Do, Ho, Wo = grid.shape[1:4]
    m = Do * Ho * Wo
    flat = input.reshape(N, C, D * H * W)
    if mode == "bicubic":  # torch's tricubic: 4x4x4 taps around the unnormalised point, each tap padded
        pts = [grid[..., i].to(input.dtype) for i in range(3)]
        sizes = (W, H, D)
        pts = [(g + 1) / 2 * (n - 1) if ac else ((g + 1) * n - 1) / 2 for g, n in zip(pts, sizes)]
        base = [p.floor() for p in pts]
        weights = [[w.unsqueeze(1) for w in _cubic_weights(p - b)] for p, b in zip(pts, base)]

        def tap_padded(xi, yi, zi):
            xi, yi, zi = (_pad_coord(c, n, ac, padding_mode) for c, n in zip((xi, yi, zi), sizes))
            inside = (xi >= 0) & (xi <= W - 1) & (yi >= 0) & (yi <= H - 1) & (zi >= 0) & (zi <= D - 1)
            idx = ((zi.clamp(0, D - 1).floor() * H + yi.clamp(0, H - 1).floor()) * W + xi.clamp(0, W - 1).floor()).long()
            vals = flat.gather(2, idx.reshape(N, 1, m).expand(N, C, m)).reshape(N, C, Do, Ho, Wo)
            return vals * inside.unsqueeze(1).to(input.dtype)

        out = None
        for k in range(4):
            for i in range(4):
                for j in range(4):
                    term = tap_padded(base[0] + (j - 1), base[1] + (i - 1), base[2] + (k - 1))
                    term = term * weights[0][j] * weights[1][i] * weights[2][k]
                    out = term if out is None else out + term
        return out
    x = _grid_coord(grid[..., 0].to(input.dtype), W, ac, padding_mode)
    y = _grid_coord(grid[..., 1].to(input.dtype), H, ac, padding_mode)
    z = _grid_coord(grid[..., 2].to(input.dtype), D, ac, padding_mode)

    def tap(xi, yi, zi):
        inside = (xi >= 0) & (xi <= W - 1) & (yi >= 0) & (yi <= H - 1) & (zi >= 0) & (zi <= D - 1)
        idx = ((zi.clamp(0, D - 1) * H + yi.clamp(0, H - 1)) * W + xi.clamp(0, W - 1)).long()
        vals = flat.gather(2, idx.reshape(N, 1, m).expand(N, C, m)).reshape(N, C, Do, Ho, Wo)
        return vals * inside.unsqueeze(1).to(input.dtype)

    if mode == "nearest":
        return tap(x.round(), y.round(), z.round())
    x0, y0, z0 = x.floor(), y.floor(), z.floor()
    wx, wy, wz = (x - x0).unsqueeze(1), (y - y0).unsqueeze(1), (z - z0).unsqueeze(1)
    out = None
    for dz in (0, 1):
        for dy in (0, 1):
            for dx in (0, 1):
                w = (wx if dx else 1 - wx) * (wy if dy else 1 - wy) * (wz if dz else 1 - wz)
                term = tap(x0 + dx, y0 + dy, z0 + dz) * w
                out = term if out is None else out + term
    return out
