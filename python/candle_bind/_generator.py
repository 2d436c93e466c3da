"""torch.Generator's CPU stream, number for number. A Generator owns an MT19937 engine (numpy's bit
generator, seeded as torch seeds its own: the seed's low 32 bits) and the random functions given
`generator=` draw from it through torch's own transforms: uniforms from 24 random bits (53 from two
draws for float64), `randn` as torch's normal_fill (Box-Muller over blocks of 16 uniforms, the last
block redrawn) from 16 elements on and as its cached-pair float64 Box-Muller below, integers as
`bits % range + low`, `randperm` as its swap loop. So seeded code (diffusers'
`generator=torch.Generator().manual_seed(0)`) sees torch's noise. float16/bfloat16 take the float32
numbers rounded, as torch does for rand and for randn of fewer than 16 or a multiple of 16 elements
(other randn sizes in those dtypes differ from torch's, whose reduced-precision kernel draws its last
partial block its own way).
Calls without a generator draw from candle_bind's own global stream (`torch.manual_seed`), which is
not torch's. numpy is imported on first use."""

from __future__ import annotations

from . import _C

_STATE_BYTES = 624 * 4 + 4 + 1 + 8  # engine key, position, cached normal (flag, value)


class Engine:
    """torch's CPUGeneratorImpl: an mt19937 and the cached second sample of its float64 Box-Muller."""

    def __init__(self, seed: int):
        import numpy as np

        key = np.random.RandomState(seed & 0xFFFFFFFF).get_state()[1]  # numpy's legacy seeding is init_genrand
        self.bits = np.random.MT19937()
        self.bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": 624}}
        self.next_normal = None

    def u32(self, n: int):
        return self.bits.random_raw(n).astype("uint64")

    def u64(self, n: int):
        r = self.u32(2 * n).reshape(n, 2)
        return (r[:, 0] << 32) | r[:, 1]

    def uniform(self, n: int, double: bool):
        """uniform_real_distribution<float/double>(0, 1): 24 (53) random bits over 2^24 (2^53)."""
        import numpy as np

        if double:
            return (self.u64(n) & ((1 << 53) - 1)).astype(np.float64) * (1.0 / (1 << 53))
        return (self.u32(n) & ((1 << 24) - 1)).astype(np.float32) * np.float32(1.0 / (1 << 24))

    def normal(self, n: int, double: bool):
        import numpy as np

        if n < 16:
            return np.array([self._normal_scalar() for _ in range(n)])
        data = self.uniform(n, double)
        full = n - n % 16
        data[:full] = _box_muller_16(data[:full])
        if n % 16:
            data[n - 16:] = _box_muller_16(self.uniform(16, double))
        return data

    def _normal_scalar(self) -> float:
        """normal_distribution<double>: a pair from two 53-bit uniforms, the second kept for the next call."""
        import numpy as np

        if self.next_normal is not None:
            value, self.next_normal = self.next_normal, None
            return value
        u1, u2 = self.uniform(2, True)
        r = np.sqrt(-2.0 * np.log1p(-u2))
        self.next_normal = r * np.sin(2.0 * np.pi * u1)
        return r * np.cos(2.0 * np.pi * u1)

    def get_state(self) -> bytes:
        import numpy as np

        s = self.bits.state["state"]
        cached = self.next_normal is not None
        return (s["key"].astype("<u4").tobytes() + np.uint32(s["pos"]).astype("<u4").tobytes() + bytes([cached])
                + np.float64(self.next_normal if cached else 0.0).astype("<f8").tobytes())

    def set_state(self, raw: bytes) -> None:
        import numpy as np

        key = np.frombuffer(raw[:2496], "<u4").astype(np.uint32)
        pos = int(np.frombuffer(raw[2496:2500], "<u4")[0])
        if pos > 624:
            raise RuntimeError(f"Generator.set_state: invalid engine position {pos}")
        self.bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
        self.next_normal = float(np.frombuffer(raw[2501:2509], "<f8")[0]) if raw[2500] else None


def _box_muller_16(u):
    """torch's normal_fill_16 over consecutive blocks of 16 uniforms: 8 pairs (u[j], u[j + 8])."""
    import numpy as np

    blocks = u.reshape(-1, 16)
    one, two = u.dtype.type(1), u.dtype.type(2)
    radius = np.sqrt(-two * np.log(one - blocks[:, :8]))
    theta = (2.0 * np.pi * blocks[:, 8:]).astype(u.dtype)
    return np.concatenate([radius * np.cos(theta), radius * np.sin(theta)], axis=1).reshape(-1)


def engine(generator, fn="randn"):
    """The engine of a Generator passed as `generator=`, or None for the global stream."""
    from ._runtime import Generator

    if generator is None or getattr(generator, "_default", False):
        return None
    if not isinstance(generator, Generator):
        raise TypeError(f"{fn}(): argument 'generator' must be torch.Generator, not {type(generator).__name__}")
    if generator._engine is None:
        generator._engine = Engine(generator._seed)
    return generator._engine


def _fill(out, values):
    import numpy as np

    if out.numel():
        out.copy_(_C.from_numpy(np.ascontiguousarray(values)).reshape(out.shape).to(out.dtype))
    return out


def wrap(native):
    """torch's randn / rand / randint / randperm: with a Generator, its stream; else `native`. The native
    op still parses the arguments and raises its errors; its numbers are then replaced."""
    name = native.__name__

    def fn(*args, generator=None, **kwargs):
        eng = engine(generator, name)
        if eng is None or (kwargs.get("device") is not None and _C.device(kwargs["device"]).type == "meta"):
            return native(*args, **kwargs)
        if name in ("randn", "rand"):
            out = _C.empty(*args, **kwargs)
            if not out.is_floating_point():
                return native(*args, **kwargs)  # the native op's "not implemented for" error
            n, double = out.numel(), out.dtype == _C.float64
            return _fill(out, eng.normal(n, double) if name == "randn" else eng.uniform(n, double))
        out = native(*args, **kwargs)
        if name == "randperm":
            n, perm = out.numel(), list(range(out.numel()))
            bits = eng.u32(max(n - 1, 0)).tolist()
            for i in range(n - 1):
                z = bits[i] % (n - i) + i
                perm[i], perm[z] = perm[z], perm[i]
            return _fill(out, perm)
        # randint: (high, size) or (low, high, size), as the native op read them
        bounds = args if "size" in kwargs else args[:-1]
        low, high = (0, bounds[0]) if len(bounds) == 1 else bounds[:2]
        span = int(high) - int(low)
        bits = eng.u64(out.numel()) if span >= 1 << 32 else eng.u32(out.numel())
        return _fill(out, (bits % span).astype("int64") + int(low))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = native.__doc__
    return fn


def get_state(generator):
    """The engine's state, then the global stream's (which `manual_seed` also seeds)."""
    return _C.tensor(list(engine(generator).get_state() + bytes(_C.rng_state())), dtype=_C.uint8)


def set_state(generator, state) -> None:
    raw = bytes(state.tolist())
    if len(raw) <= _STATE_BYTES:
        raise RuntimeError(f"Generator.set_state: expected a state from Generator.get_state ({_STATE_BYTES} bytes "
                           f"and the global stream's), got {len(raw)} bytes")
    engine(generator).set_state(raw[:_STATE_BYTES])
    _C.set_rng_state(raw[_STATE_BYTES:])


rand, randn, randint, randperm = (wrap(f) for f in (_C.rand, _C.randn, _C.randint, _C.randperm))
