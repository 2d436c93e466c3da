"""The kernels that split their work over our pool, checked against live torch on the shapes where the
split matters (odd sizes, tails shorter than a block, non-contiguous inputs, 0-d and empty tensors),
and run at 1, 2 and 3 threads: integer ops, copies, selections and max/min must give the same bits at
every thread count (as torch's do); float sums are fixed per output element too (each element is
summed by one task in one order), so they must match bit for bit as well.
"""

import os

import numpy as np
import pytest
import torch

import candle_bind as cb

F, CF = torch.nn.functional, cb.nn.functional
rng = np.random.default_rng(0)


def both(a):
    return torch.from_numpy(np.ascontiguousarray(a)), cb.from_numpy(np.ascontiguousarray(a))


def close(c, t, rtol=1e-5, atol=1e-5):
    assert tuple(c.shape) == tuple(t.shape)
    assert str(c.dtype) == str(t.dtype)
    np.testing.assert_allclose(np.asarray(c.numpy(), dtype=np.float64), t.numpy().astype(np.float64), rtol=rtol, atol=atol)


@pytest.fixture
def threads():
    """Runs the test body at several thread counts, restoring the count afterwards."""
    before = cb.get_num_threads()
    yield [1, 2, 3]
    cb.set_num_threads(before)


def at_each(threads, fn):
    """fn() at every thread count: the results, as numpy arrays."""
    out = []
    for n in threads:
        cb.set_num_threads(n)
        r = fn()
        out.append(r.numpy().copy() if hasattr(r, "numpy") else [x.numpy().copy() for x in r])
    return out


def same_bits(results):
    for r in results[1:]:
        np.testing.assert_array_equal(np.asarray(r), np.asarray(results[0]))


REDUCE_CASES = [((4, 128, 1536), 0), ((4, 128, 1536), 1), ((4, 128, 1536), (0, 1)), ((3, 5, 7, 9), (1, 2)),
                ((3, 5, 7, 9), -1), ((2, 3), 0), ((5, 1, 3), 1), ((7, 600), 0), ((2, 1000, 3), 1), ((9, 70001), 0),
                ((1, 1), 0), ((0, 4), 1), ((4, 0, 3), 0)]


@pytest.mark.parametrize("shape,dims", REDUCE_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.uint8])
def test_reductions_over_any_dims(shape, dims, dtype, threads):
    a = (rng.standard_normal(shape) * 10).astype(dtype)
    t, c = both(a)
    for op in ["sum", "mean", "amax", "amin"]:
        if op == "mean" and dtype in (np.int64, np.uint8):
            continue
        for keep in (False, True):
            try:
                want = getattr(t, op)(dims, keepdim=keep)
            except (RuntimeError, IndexError) as e:
                with pytest.raises(type(e)):
                    getattr(c, op)(dims, keepdim=keep)
                continue
            res = at_each(threads, lambda: getattr(c, op)(dims, keepdim=keep))
            same_bits(res)
            # f32 sums: ours add runs of 8 in f32 then fold in f64, torch's add in f32 throughout
            # (ours are the closer to the exact sum); the tolerance is torch's own error.
            loose = dtype == np.float32 and op in ("sum", "mean")
            close(getattr(c, op)(dims, keepdim=keep), want, *((1e-4, 1e-3) if loose else (1e-5, 1e-5)))


def test_reductions_propagate_nan_and_read_views(threads):
    a = rng.standard_normal((64, 300)).astype(np.float32)
    a[5, 7] = np.nan
    t, c = both(a)
    for d in (0, 1):
        for op in ["amax", "amin", "sum"]:
            close(getattr(c, op)(d), getattr(t, op)(d))
            close(getattr(c.t(), op)(d), getattr(t.t(), op)(d))
            close(getattr(c[:, 1::3], op)(d), getattr(t[:, 1::3], op)(d))
    close(c.max(1).values, t.max(1).values)
    close(cb.tensor(2.5).amax(0), torch.tensor(2.5).amax(0))


def test_short_row_sums(threads):
    # Rows under 64 (pooling heads: 7x7 = 49) take one to four 16-lane loads, the last masked:
    # every length, mean and sum, a 4-D mean over the last two dims as adaptive_avg_pool2d(x, 1).
    for n in range(1, 64):
        a = rng.standard_normal((37, n)).astype(np.float32)
        t, c = both(a)
        same_bits(at_each(threads, lambda: c.sum(-1)))
        close(c.sum(-1), t.sum(-1), rtol=1e-5, atol=1e-5)
        close(c.mean(-1), t.mean(-1), rtol=1e-5, atol=1e-6)
    t, c = both(rng.standard_normal((8, 512, 7, 7)).astype(np.float32))
    close(cb.nn.functional.adaptive_avg_pool2d(c, 1), torch.nn.functional.adaptive_avg_pool2d(t, 1), rtol=1e-5, atol=1e-6)


def test_row_max_min_tails_and_nan():
    # Rows of 64 and more take the AVX-512 row kernel: every tail length past its 64-wide steps,
    # NaN anywhere (first, middle, in the tail), infinities.
    for n in (64, 65, 79, 80, 127, 128, 200, 1536):
        a = rng.standard_normal((6, n)).astype(np.float32)
        a[1, 0] = np.nan
        a[2, n // 2] = np.nan
        a[3, -1] = np.nan
        a[4, 5] = np.inf
        a[5, -2] = -np.inf
        t, c = both(a)
        for op in ("amax", "amin"):
            assert np.array_equal(getattr(c, op)(-1).numpy(), getattr(t, op)(-1).numpy(), equal_nan=True), (n, op)
        assert np.array_equal(c.max(-1).values.numpy(), t.max(-1).values.numpy(), equal_nan=True)


@pytest.mark.parametrize("op", ["cumsum", "sum", "mean", "amax", "amin"])
def test_row_kernels_edge_shapes(op):
    # 0-d with dim 0 / -1, empty rows and empty batches, one-element dims, rows of 64 and 100 under
    # a single leading row: the same values, shapes and error types as torch, never a panic.
    for shape, dim in [((), 0), ((), -1), ((0, 70), 1), ((70, 0), 1), ((70, 0), 0), ((1, 1), -1),
                       ((1, 64), -1), ((1, 100), 1), ((3, 1, 49), -1), ((1,), 0)]:
        a = rng.standard_normal(shape).astype(np.float32)
        t, c = both(a)
        try:
            want = getattr(t, op)(dim)
        except Exception as e:  # noqa: BLE001 - the type is compared
            with pytest.raises(type(e)):
                getattr(c, op)(dim)
            continue
        got = getattr(c, op)(dim)
        assert tuple(got.shape) == tuple(want.shape) and str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (op, shape, dim)
        close(got, want, rtol=1e-6, atol=1e-6)


def test_cumsum_rows(threads):
    a = rng.standard_normal((33, 4099)).astype(np.float32)
    t, c = both(a)
    # torch runs an f32 row's sums in f64 and rounds each; so does the host path (8 at a time on
    # AVX-512: the same f32 results but for a rare double rounding). The device path (log2(n)
    # shifted adds in f32, CANDLE_BIND_GENERIC=1) agrees within float tolerance.
    host = os.environ.get("CANDLE_BIND_GENERIC") != "1"
    tol = dict(rtol=0, atol=0) if host else dict(rtol=1e-5, atol=1e-2)
    for d in (0, 1, -1):
        same_bits(at_each(threads, lambda: c.cumsum(d)))
        close(c.cumsum(d), t.cumsum(d), rtol=1e-6 if host else 1e-4, atol=1e-5 if host else 1e-3)
        assert not host or (c.cumsum(d).numpy() == t.cumsum(d).numpy()).mean() > 0.999
    # Every tail length of the 8-wide steps, a strided view, a reversed dim.
    for n in range(1, 20):
        a = rng.standard_normal((3, n)).astype(np.float32) * 1e3
        t, c = both(a)
        close(c.cumsum(1), t.cumsum(1), **tol)
    t, c = both(rng.standard_normal((40, 300)).astype(np.float32))
    close(c[:, ::3].cumsum(1), t[:, ::3].cumsum(1), **tol)
    close(c.flip(1).cumsum(1), t.flip(1).cumsum(1), **tol)
    ai = rng.integers(-5, 5, (17, 5000))
    t, c = both(ai)
    same_bits(at_each(threads, lambda: c.cumsum(1)))
    close(c.cumsum(1), t.cumsum(1), 0, 0)


GATHER_SHAPES = [(4, 128, 1536), (3, 5, 7), (6,), (2, 3, 4, 5), (40000,), (70, 3, 700)]


@pytest.mark.parametrize("shape", GATHER_SHAPES)
def test_gather_scatter_along_every_dim(shape, threads):
    x = rng.standard_normal(shape).astype(np.float32)
    t, c = both(x)
    for d in range(-len(shape), len(shape)):
        ish = list(shape)
        ish[d] = max(1, shape[d] - 1)
        other = 0 if d % len(shape) != 0 else -1
        if len(shape) > 1:
            ish[other] = max(1, ish[other] - 1)  # an index smaller than self in another dim too
        idx = rng.integers(0, shape[d], ish)
        ti, ci = both(idx)
        same_bits(at_each(threads, lambda: c.gather(d, ci)))
        close(c.gather(d, ci), t.gather(d, ti), 0, 0)
        src = rng.standard_normal(ish).astype(np.float32)
        ts, cs = both(src)
        res = at_each(threads, lambda: cb.zeros_like(c).scatter_add_(d, ci, cs))
        same_bits(res)
        close(cb.zeros_like(c).scatter_add_(d, ci, cs), torch.zeros_like(t).scatter_add_(d, ti, ts), 0, 0)
        close(c.scatter(d, ci, 2.5), t.scatter(d, ti, 2.5), 0, 0)
        close(c.scatter_reduce(d, ci, cs, "prod"), t.scatter_reduce(d, ti, ts, "prod"), 1e-6, 1e-6)
        ii = rng.integers(-9, 9, shape)
        tii, cii = both(ii)
        close(cii.scatter_add(d, ci, cb.from_numpy(np.ascontiguousarray(idx))), tii.scatter_add(d, ti, ti), 0, 0)


def test_gather_scatter_views_zero_d_empty_and_errors():
    x = rng.standard_normal((64, 300)).astype(np.float32)
    idx = rng.integers(0, 64, (300, 64))
    t, c = both(x)
    ti, ci = both(idx)
    close(c.gather(0, ci.t()), t.gather(0, ti.t()), 0, 0)
    close(c.t().gather(1, ci), t.t().gather(1, ti), 0, 0)
    close(cb.zeros(64, 300).scatter_add_(0, ci.t(), c), torch.zeros(64, 300).scatter_add_(0, ti.t(), t), 0, 0)
    close(cb.tensor(3.0).gather(0, cb.tensor(0)), torch.tensor(3.0).gather(0, torch.tensor(0)), 0, 0)
    close(cb.arange(5.0).gather(0, cb.tensor(2)), torch.arange(5.0).gather(0, torch.tensor(2)), 0, 0)
    close(cb.arange(5.0).gather(0, cb.tensor([4, 0], dtype=cb.int32)), torch.arange(5.0).gather(0, torch.tensor([4, 0], dtype=torch.int32)), 0, 0)
    close(cb.arange(6.0).reshape(2, 3).gather(1, cb.zeros(2, 0, dtype=cb.int64)),
          torch.arange(6.0).reshape(2, 3).gather(1, torch.zeros(2, 0, dtype=torch.int64)), 0, 0)
    for bad in [lambda m: m.arange(5.0).gather(0, m.tensor([5])), lambda m: m.arange(5.0).gather(0, m.tensor([-1])),
                lambda m: m.arange(5.0).scatter(0, m.tensor([7]), 1.0),
                lambda m: m.arange(5.0).scatter_add(0, m.tensor([-1]), m.tensor([1.0]))]:
        with pytest.raises(RuntimeError):
            bad(torch)
        with pytest.raises(RuntimeError, match="out of bounds"):
            bad(cb)


def test_gather_scatter_last_dim_bounds_in_the_same_pass(threads):
    """The last-dim paths check bounds while they copy: an index out of bounds anywhere in a large
    index (any row, any task) raises torch's error and an in-place scatter leaves self as it was."""
    x = rng.standard_normal((8, 64, 1000)).astype(np.float32)
    idx = rng.integers(0, 1000, (8, 64, 1000))
    src = rng.standard_normal((8, 64, 1000)).astype(np.float32)
    t, c = both(x)
    ts, cs = both(src)
    for n in threads:
        cb.set_num_threads(n)
        for where, v in [((7, 63, 999), 1000), ((0, 0, 0), -1), ((3, 17, 500), 1 << 40)]:
            bad = idx.copy()
            bad[where] = v
            ti, ci = both(bad)
            for m, a, i, sv in [(torch, t, ti, ts), (cb, c, ci, cs)]:
                with pytest.raises(RuntimeError, match="out of bounds"):
                    a.gather(-1, i)
                y = m.zeros_like(a)
                with pytest.raises(RuntimeError, match="out of bounds"):
                    y.scatter_add_(-1, i, sv)
                if m is cb:  # torch keeps what it wrote before the bad index; we write nothing
                    assert float(y.abs().sum()) == 0
        # A source read through a transpose, an index narrower than self, 16-bit and integer data.
        ti, ci = both(idx[..., :999])
        tst, cst = both(src.transpose(0, 2, 1).copy())
        close(c.scatter(-1, ci, cst.transpose(1, 2)), t.scatter(-1, ti, tst.transpose(1, 2)), 0, 0)
        close(c.scatter_reduce(-1, ci, cs[..., :999], "prod"), t.scatter_reduce(-1, ti, ts[..., :999], "prod"), 1e-6, 1e-6)
        # 16-bit floats accumulate in float32 and round once, as torch's opmath.
        c, t, cs, ts = c.abs() * 3, t.abs() * 3, cs.abs(), ts.abs()  # no negative floats cast to uint8 (undefined in C, torch wraps)
        for dt in (torch.bfloat16, torch.float16, torch.int64, torch.uint8):
            cdt = getattr(cb, str(dt).split(".")[1])
            close(c.to(cdt).gather(-1, ci).double(), t.to(dt).gather(-1, ti).double(), 0, 0)
            close(c.to(cdt).scatter_add(-1, ci, cs.to(cdt)[..., :999]).double(),
                  t.to(dt).scatter_add(-1, ti, ts.to(dt)[..., :999]).double(), 0, 0)
            for red in ("sum", "prod", "mean"):
                close(c.to(cdt).scatter_reduce(-1, ci, cs.to(cdt)[..., :999], red).double(),
                      t.to(dt).scatter_reduce(-1, ti, ts.to(dt)[..., :999], red).double(), 0, 0)
            tj, cj = both(rng.integers(0, 64, 50))
            # index_add rounds once along the first and last dims, after every add in between (torch's).
            close(c.to(cdt).index_add(1, cj, cs.to(cdt)[:, :50]).double(), t.to(dt).index_add(1, tj, ts.to(dt)[:, :50]).double(), 0, 0)
            close(c.to(cdt).index_add(2, cj, cs.to(cdt)[..., :50]).double(), t.to(dt).index_add(2, tj, ts.to(dt)[..., :50]).double(), 0, 0)
            close(c[0, 0].to(cdt).index_add(0, cj, cs[0, 0, :50].to(cdt)).double(),
                  t[0, 0].to(dt).index_add(0, tj, ts[0, 0, :50].to(dt)).double(), 0, 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.uint8, np.float16])
def test_writes_into_views_and_fills(dtype, threads):
    """copy_ into strided views, fill_, zeros and full at sizes that split over the pool."""
    a = (rng.standard_normal((6, 130, 257)) * 50).astype(dtype)
    b = (rng.standard_normal((6, 130, 257)) * 50).astype(dtype)
    views = [lambda m: m, lambda m: m.transpose(0, 2), lambda m: m[:, 1:, 3:200], lambda m: m[1:5].transpose(1, 2), lambda m: m[..., 3]]
    results = []
    for n in threads:
        cb.set_num_threads(n)
        out = []
        for v in views:
            (tx, cx), (ty, cy) = both(a.copy()), both(b.copy())
            v(cx).copy_(v(cy))
            v(tx).copy_(v(ty))
            close(cx, tx, 0, 0)
            v(cx).fill_(3)
            v(tx).fill_(3)
            close(cx, tx, 0, 0)
            out.append(cx.numpy().copy())
        tdt = torch.from_numpy(a).dtype
        cdt = getattr(cb, str(tdt).split(".")[1])
        close(cb.zeros(70001, dtype=cdt), torch.zeros(70001, dtype=tdt), 0, 0)
        close(cb.full((3, 40000), 7, dtype=cdt), torch.full((3, 40000), 7, dtype=tdt), 0, 0)
        close(cb.zeros_like(cb.from_numpy(a)), torch.zeros_like(torch.from_numpy(a)), 0, 0)
        results.append(out)
    same_bits(results)


@pytest.mark.parametrize("shape", [(4, 128, 1536), (3, 333, 77), (70001,)])
def test_copies_casts_and_numpy_import(shape, threads):
    a = rng.standard_normal(shape).astype(np.float32)
    t, c = both(a)
    views = [lambda m: m, lambda m: m.transpose(0, -1), lambda m: m[..., ::2], lambda m: m.flip(0)]
    for v in views:
        same_bits(at_each(threads, lambda: v(c).contiguous()))
        close(v(c).contiguous(), v(t).contiguous(), 0, 0)
        close(v(c).clone(), v(t).clone(), 0, 0)
        close(v(c).to(cb.bfloat16).float(), v(t).to(torch.bfloat16).float(), 0, 0)
    same_bits(at_each(threads, lambda: cb.from_numpy(a)))
    close(cb.tensor(a), torch.tensor(a), 0, 0)
    ai = rng.integers(-100, 100, shape)
    close(cb.from_numpy(ai), torch.from_numpy(ai), 0, 0)
    c2 = cb.from_numpy(a)
    a[...] = 0  # from_numpy copies: later writes to the array do not reach the tensor
    assert float(c2.abs().sum()) > 0


@pytest.mark.parametrize("mask_kind", ["random", "broadcast"])
def test_where_and_masked_fill(mask_kind, threads):
    a = rng.standard_normal((4, 129, 1537)).astype(np.float32)
    m = rng.standard_normal((4, 129, 1537) if mask_kind == "random" else (129, 1)) > 0
    t, c = both(a)
    tm, cm = both(m)
    same_bits(at_each(threads, lambda: cb.where(cm, c, -c)))
    close(cb.where(cm, c, -c), torch.where(tm, t, -t), 0, 0)
    close(cb.where(cm, c, 0.0), torch.where(tm, t, 0.0), 0, 0)
    close(cb.where(cm, 1.5, c), torch.where(tm, 1.5, t), 0, 0)
    close(c.masked_fill(cm, float("-inf")), t.masked_fill(tm, float("-inf")), 0, 0)
    close(cb.where(cm, c.t() if c.dim() == 2 else c, c), torch.where(tm, t, t), 0, 0)


DW_CASES = [(1, 384, 56, 56, 7, 1, 3), (2, 16, 5, 130, 3, 2, 2), (1, 3, 1, 7, 3, 1, 1), (1, 8, 33, 64, 7, 1, 0),
            (1, 4, 14, 14, 5, 2, "same")]


@pytest.mark.parametrize("h,w,kh,kw,dw", [(6, 130, 3, 5, 1), (7, 7, 7, 7, 1), (9, 17, 1, 3, 2), (5, 64, 5, 1, 1),
                                        (2, 200, 3, 3, 3), (13, 33, 4, 2, 1)])
def test_depthwise_row_tiles(h, w, kh, kw, dw, threads):
    """The AVX-512 row tiles (up to 4 output rows x 64 columns, every tail) against torch, bit for bit
    across thread counts: non-square kernels, column dilation, rows and columns that leave tails."""
    c = 11
    x = rng.standard_normal((2, c, h, w)).astype(np.float32)
    wt = rng.standard_normal((c, 1, kh, kw)).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32)
    (tx, cx), (tw, cw), (tb, cbias) = both(x), both(wt), both(b)
    pad = (kh // 2, (kw // 2) * dw)
    want = F.conv2d(tx, tw, tb, padding=pad, dilation=(1, dw), groups=c)
    same_bits(at_each(threads, lambda: CF.conv2d(cx, cw, cbias, padding=pad, dilation=(1, dw), groups=c)))
    close(CF.conv2d(cx, cw, cbias, padding=pad, dilation=(1, dw), groups=c), want, 1e-4, 1e-4)
    close(CF.conv2d(cx.transpose(2, 3).contiguous().transpose(2, 3), cw, None, padding=pad, dilation=(1, dw), groups=c),
          F.conv2d(tx, tw, None, padding=pad, dilation=(1, dw), groups=c), 1e-4, 1e-4)


@pytest.mark.parametrize("n,c,h,w,k,dil,pad", DW_CASES)
def test_depthwise_register_blocks(n, c, h, w, k, dil, pad, threads):
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = rng.standard_normal((c, 1, k, k)).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32)
    tx, cx = both(x)
    tw, cw = both(wt)
    tb, cbias = both(b)
    want = F.conv2d(tx, tw, tb, padding=pad, dilation=dil, groups=c)
    same_bits(at_each(threads, lambda: CF.conv2d(cx, cw, cbias, padding=pad, dilation=dil, groups=c)))
    close(CF.conv2d(cx, cw, cbias, padding=pad, dilation=dil, groups=c), want, 1e-4, 1e-4)
    x1 = rng.standard_normal((n, c, w * 3)).astype(np.float32)
    t1, c1 = both(x1)
    close(CF.conv1d(c1, cw[:, :, 0], padding=k // 2, groups=c), F.conv1d(t1, tw[:, :, 0], padding=k // 2, groups=c), 1e-4, 1e-4)


@pytest.mark.parametrize("ci,co,h,k,s,p", [(128, 64, 64, 4, 2, 1), (16, 8, 7, 3, 1, 0), (4, 6, 5, 3, 2, 1)])
def test_conv_transpose_threads(ci, co, h, k, s, p, threads):
    x = rng.standard_normal((2, ci, h, h)).astype(np.float32)
    w = rng.standard_normal((ci, co, k, k)).astype(np.float32)
    tx, cx = both(x)
    tw, cw = both(w)
    same_bits(at_each(threads, lambda: CF.conv_transpose2d(cx, cw, stride=s, padding=p)))
    close(CF.conv_transpose2d(cx, cw, stride=s, padding=p), F.conv_transpose2d(tx, tw, stride=s, padding=p), 1e-4, 1e-3)


@pytest.mark.parametrize("name,batch", [("LSTM", 3), ("GRU", 3), ("RNN", 4), ("LSTM", 1), ("GRU", 6)])
def test_recurrent_steps_split_by_units(name, batch, threads):
    """Each step split over the pool by blocks of 16 hidden units (200: 13 blocks, the last of 8), each
    task finishing its units' cell arithmetic; packed (masked) rows too."""
    torch.manual_seed(0)
    t = getattr(torch.nn, name)(24, 200, num_layers=2)
    c = getattr(cb.nn, name)(24, 200, num_layers=2)
    c.load_state_dict(t.state_dict())
    x = rng.standard_normal((9, batch, 24)).astype(np.float32)
    tx, cx = both(x)
    same_bits(at_each(threads, lambda: c(cx)[0]))
    with torch.no_grad():
        close(c(cx)[0], t(tx)[0], 1e-4, 1e-5)
        lengths = [9] + [max(1, 9 - 2 * i) for i in range(1, batch)]
        tp = torch.nn.utils.rnn.pack_padded_sequence(tx, lengths)
        cp = cb.nn.utils.rnn.pack_padded_sequence(cx, lengths)
        tout, th = t(tp)
        cout, ch = c(cp)
    close(cout.data, tout.data, 1e-4, 1e-5)
    for a, b in zip(ch if isinstance(ch, tuple) else (ch,), th if isinstance(th, tuple) else (th,)):
        close(a, b, 1e-4, 1e-5)


@pytest.mark.parametrize("env,want", [({"OMP_NUM_THREADS": "1"}, "1"), ({"MKL_NUM_THREADS": "1"}, "1"),
                                      ({"OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "1"}, "3"),
                                      ({"OMP_NUM_THREADS": "junk"}, None)])
def test_thread_count_from_the_environment_as_torch(env, want):
    """torch starts with OMP_NUM_THREADS, else MKL_NUM_THREADS, else the cores; so do we."""
    import os
    import subprocess
    import sys

    base = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS")}
    code = "import {m}; print({m}.get_num_threads())"
    got = subprocess.run([sys.executable, "-c", code.format(m="candle_bind")], env={**base, **env},
                         capture_output=True, text=True, check=True).stdout.strip()
    if want is None:  # an invalid value is ignored: the default, as with no variable
        want = subprocess.run([sys.executable, "-c", code.format(m="candle_bind")], env=base,
                              capture_output=True, text=True, check=True).stdout.strip()
    assert got == want


def test_interop_threads_set_once_as_torch():
    import subprocess
    import sys

    code = """
import {m} as t
print(t.get_num_interop_threads() >= 1)
t.set_num_interop_threads(3)
print(t.get_num_interop_threads())
for bad in (2, 0):
    try:
        t.set_num_interop_threads(bad)
    except RuntimeError as e:
        print(type(e).__name__)
"""
    out = {m: subprocess.run([sys.executable, "-c", code.format(m=m)], capture_output=True, text=True, check=True).stdout
           for m in ("torch", "candle_bind")}
    assert out["candle_bind"] == out["torch"]


def test_nested_parallel_work_runs_serially_and_agrees():
    """A parallel op started from several Python threads at once (each taking the pool in turn or
    running serially when it is busy) gives the single-thread bits."""
    import threading

    a = rng.standard_normal((64, 4099)).astype(np.float32)
    c = cb.from_numpy(a)
    want = [c.sum(0).numpy().copy(), c.cumsum(1).numpy().copy(), c.amax(1).numpy().copy()]
    got = [None] * 6

    def work(i):
        got[i] = [c.sum(0).numpy().copy(), c.cumsum(1).numpy().copy(), c.amax(1).numpy().copy()]

    ts = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    for g in got:
        for x, y in zip(g, want):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("shape,dim", [((32000, 256), 0), ((4, 600, 33), 1), ((5, 7, 3000), -1), ((70000,), 0), ((3,), 0)])
def test_index_select_and_embedding_rows(shape, dim, threads):
    x = rng.standard_normal(shape).astype(np.float32)
    t, c = both(x)
    idx = rng.integers(0, shape[dim], 17 * 241)
    ti, ci = both(idx)
    same_bits(at_each(threads, lambda: c.index_select(dim, ci)))
    close(c.index_select(dim, ci), t.index_select(dim, ti), 0, 0)
    close(c.index_select(dim, ci.int()), t.index_select(dim, ti.int()), 0, 0)
    close(c.flip(0).index_select(dim, ci), t.flip(0).index_select(dim, ti), 0, 0)
    if len(shape) == 2:
        close(CF.embedding(ci.reshape(17, 241), c), F.embedding(ti.reshape(17, 241), t), 0, 0)
    close(c.index_select(dim, cb.tensor([], dtype=cb.int64)), t.index_select(dim, torch.tensor([], dtype=torch.int64)), 0, 0)
    with pytest.raises(IndexError):
        c.index_select(dim, cb.tensor([shape[dim]]))
    for i in ([0], 0):
        close(cb.tensor(2.5).index_select(0, cb.tensor(i)), torch.tensor(2.5).index_select(0, torch.tensor(i)), 0, 0)
    for m in (torch, cb):
        with pytest.raises(RuntimeError, match="Index to scalar can have only 1 value"):
            m.tensor(2.5).index_select(0, m.tensor([0, 0]))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_in_one_pass(dim, threads):
    a = rng.standard_normal((3, 70000 if dim == 0 else 5, 4)).astype(np.float32)
    parts = [a, a[:, :0] if dim == 1 else a[:0] if dim == 0 else a[..., :0], a[:, ::-1].copy()]
    tp = [torch.from_numpy(np.ascontiguousarray(p)) for p in parts]
    cp = [cb.from_numpy(np.ascontiguousarray(p)) for p in parts]
    same_bits(at_each(threads, lambda: cb.cat(cp, dim)))
    close(cb.cat(cp, dim), torch.cat(tp, dim), 0, 0)
    close(cb.cat([cp[0].transpose(0, 2), cp[0].transpose(0, 2)], dim), torch.cat([tp[0].transpose(0, 2)] * 2, dim), 0, 0)
    close(cb.cat([cb.tensor([1, 2]), cb.tensor([3.5])]), torch.cat([torch.tensor([1, 2]), torch.tensor([3.5])]), 0, 0)
    close(cb.cat([cb.from_numpy(a[:1])]), torch.cat([torch.from_numpy(a[:1])]), 0, 0)
    for m in (torch, cb):
        with pytest.raises(RuntimeError):
            m.cat([m.zeros(2, 3), m.zeros(2, 4)], 0)
    close(cb.full((70001,), 2.5), torch.full((70001,), 2.5), 0, 0)
    close(cb.full((0, 3), 1.0), torch.full((0, 3), 1.0), 0, 0)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_cat_reads_views_in_place(dim, threads):
    """Inputs whose block per output row is contiguous are read where they are: slices (rotary
    embeddings' halves of the last dim), views with gaps in the outer dims, expanded outer dims,
    beside inputs that are copied first (a transpose) and empty ones; every thread count."""
    a = rng.standard_normal((5, 7, 300, 64)).astype(np.float32)
    t, c = both(a)

    def pick(x):
        # All (5, 5, 300, 32): a last-dim slice, a view with gaps in its outer dims, an expanded
        # dim (stride 0), a transposed layout (copied first), and an empty one on the last dim.
        views = [x[:, :5, :, 32:], x[:, 1:6, :, :32], x[:, :5, 7:8, :32].expand(5, 5, 300, 32),
                 x[:, :5, :, :32].transpose(2, 3).contiguous().transpose(2, 3)]
        return views + ([x[:, :5, :, :0]] if dim in (3, -1) else [])

    tv, cv = pick(t), pick(c)
    want = torch.cat(tv, dim)
    same_bits(at_each(threads, lambda: cb.cat(cv, dim)))
    close(cb.cat(cv, dim), want, 0, 0)
    # The rotary pattern itself.
    close(cb.cat((-c[..., 32:], c[..., :32]), -1), torch.cat((-t[..., 32:], t[..., :32]), -1), 0, 0)
    close(cb.cat((c[..., 32:], c[..., :32]), -1), torch.cat((t[..., 32:], t[..., :32]), -1), 0, 0)


@pytest.mark.parametrize("mode,size", [("nearest", (75, 83)), ("nearest", (20, 17)), ("bilinear", (75, 83)),
                                       ("bicubic", (64, 50)), ("nearest-exact", (101, 7))])
def test_interpolate_planes_in_runs(mode, size, threads):
    """Resampling splits runs of whole planes over the pool (a plane is one row on the last dim)."""
    a = rng.standard_normal((3, 37, 41, 43)).astype(np.float32)
    t, c = both(a)
    kw = {} if mode.startswith("nearest") else {"align_corners": False}
    same_bits(at_each(threads, lambda: CF.interpolate(c, size=size, mode=mode, **kw)))
    close(CF.interpolate(c, size=size, mode=mode, **kw), F.interpolate(t, size=size, mode=mode, **kw), 1e-5, 1e-5)
    close(CF.interpolate(c.transpose(2, 3), size=size, mode=mode, **kw), F.interpolate(t.transpose(2, 3), size=size, mode=mode, **kw), 1e-5, 1e-5)


@pytest.mark.parametrize("m,k,n", [(5, 16, 16), (12, 100, 37), (33, 2048, 100), (70, 300, 25), (197, 1536, 100),
                                   (90, 2600, 37), (40, 1030, 50)])
def test_linear_weight_broadcast_tiles(threads, m, k, n):
    """`x @ W.T` on the tiles that broadcast W from its rows (x's rows in the lanes): row and column
    tails, x a view with rows further apart than k, and the same bits at every thread count; k past
    1024 in slices summed into the output (1536: two of 768; 2600 at few rows: four of 650; 1030:
    two of 515, tails of the 16-step prefetch blocks)."""
    xa, wa = rng.standard_normal((m, k + 3)).astype(np.float32), rng.standard_normal((n, k)).astype(np.float32)
    (tx, cx), (tw, cw) = both(xa), both(wa)
    tx, cx = tx[:, 2:2 + k], cx[:, 2:2 + k]
    outs = at_each(threads, lambda: CF.linear(cx, cw))
    # (below AVX-512 the long-k shape takes gemm's kernels, whose k blocking follows a share's rows)
    if k <= 2048 or cb._C.cpu_capability()[0] == "AVX512":
        for o in outs[1:]:
            assert np.array_equal(o, outs[0])
    close(CF.linear(cx, cw), F.linear(tx, tw), rtol=1e-4, atol=1e-4)
