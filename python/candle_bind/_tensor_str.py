"""`repr(tensor)` as torch prints it: 4 decimals, scientific notation for wide ranges,
summarised past 1000 elements, the dtype shown when it is not the default for its kind."""

from __future__ import annotations

import math

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80

_DEFAULT_DTYPES = ("float32", "int64", "bool")


def _is_float(t) -> bool:
    return t.dtype.is_floating_point


class _Formatter:
    def __init__(self, values: list, floating: bool):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        if not floating:
            for v in values:
                self.max_width = max(self.max_width, len(str(v)))
            return
        finite = [v for v in values if math.isfinite(v)]
        if not finite:
            for v in values:
                self.max_width = max(self.max_width, len(str(v)))
            return
        absvals = [abs(v) for v in finite]
        nonzero = [v for v in absvals if v != 0]
        for v in finite:
            if v != math.ceil(v):
                self.int_mode = False
                break
        lo = min(nonzero) if nonzero else 0.0
        hi = max(nonzero) if nonzero else 0.0
        if self.int_mode:
            if nonzero and (hi / lo > 1000.0 or hi > 1e8):
                self.sci_mode = True
                for v in finite:
                    self.max_width = max(self.max_width, len(f"{v:.{PRECISION}e}"))
            else:
                for v in finite:
                    self.max_width = max(self.max_width, len(f"{v:.0f}."))
        else:
            if nonzero and (hi / lo > 1000.0 or hi > 1e8 or lo < 1e-4):
                self.sci_mode = True
                for v in finite:
                    self.max_width = max(self.max_width, len(f"{v:.{PRECISION}e}"))
            else:
                for v in finite:
                    self.max_width = max(self.max_width, len(f"{v:.{PRECISION}f}"))
        for v in values:
            if not math.isfinite(v):
                self.max_width = max(self.max_width, len(_nonfinite(v)))

    def width(self) -> int:
        return self.max_width

    def format(self, v) -> str:
        if not self.floating:
            s = str(v)
        elif not math.isfinite(v):
            s = _nonfinite(v)
        elif self.sci_mode:
            s = f"{v:.{PRECISION}e}"
        elif self.int_mode:
            s = f"{v:.0f}."
        else:
            s = f"{v:.{PRECISION}f}"
        return " " * (self.max_width - len(s)) + s


def _nonfinite(v: float) -> str:
    return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")


def _summarise(data, shape, summarize):
    """Nested lists with the middle of long dims dropped (Ellipsis marks the cut)."""
    if not shape:
        return data
    n = shape[0]
    if summarize and n > 2 * EDGEITEMS:
        head = [_summarise(data[i], shape[1:], summarize) for i in range(EDGEITEMS)]
        tail = [_summarise(data[i], shape[1:], summarize) for i in range(n - EDGEITEMS, n)]
        return head + [Ellipsis] + tail
    return [_summarise(data[i], shape[1:], summarize) for i in range(n)]


def _flat(data, out):
    if isinstance(data, list):
        for d in data:
            _flat(d, out)
    elif data is not Ellipsis:
        out.append(data)
    return out


def _fmt(data, depth: int, fmt: _Formatter, indent: int) -> str:
    if not isinstance(data, list):
        return fmt.format(data)
    if depth == 1:
        items = [" ..." if d is Ellipsis else fmt.format(d) for d in data]
        per_line = max(1, (LINEWIDTH - indent) // (fmt.width() + 2))
        lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    sep = "," + "\n" * (depth - 1) + " " * (indent + 1)
    parts = ["..." if d is Ellipsis else _fmt(d, depth - 1, fmt, indent + 1) for d in data]
    return "[" + sep.join(parts) + "]"


def tensor_repr(t) -> str:
    prefix = "tensor("
    shape = tuple(t.shape)
    floating = _is_float(t)
    extras = []
    if t.is_meta:  # no data: torch prints the size instead
        body = "..."
        extras.append(f"size={shape}")
    elif t.numel() == 0:
        body = "[]"
        if shape != (0,):
            extras.append(f"size={shape}")
    else:
        data = t.tolist()
        summarize = t.numel() > THRESHOLD
        data = _summarise(data, shape, summarize)
        values = _flat(data, [])
        if _dtype_name(t) == "bool":
            fmt = _Formatter([], False)
            fmt.max_width = max(len(str(v)) for v in values)
        else:
            fmt = _Formatter(values, floating)
        body = _fmt(data, len(shape), fmt, len(prefix))
    name = _dtype_name(t)
    if name not in _DEFAULT_DTYPES or (t.is_meta and name != "float32"):
        extras.append(f"dtype=torch.{name}")
    if t.device.type != "cpu":
        extras.insert(0, f"device='{t.device}'")
    return add_suffixes(prefix + body, extras, len(prefix))


def add_suffixes(text: str, suffixes: list, indent: int) -> str:
    """`text` + ", dtype=..." etc. + ")"; a suffix past the line width goes on its own line, as torch's."""
    parts = [text]
    last = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last + len(suffix) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last += len(suffix) + 2
    return "".join(parts) + ")"


def _dtype_name(t) -> str:
    return repr(t.dtype).rsplit(".", 1)[-1]


class _ComplexFormatter:
    """torch's complex layout: the real and the imaginary parts each formatted as a real tensor, `a+bj`."""

    def __init__(self, values):
        self.re = _Formatter([v.real for v in values], True)
        self.im = _Formatter([v.imag for v in values], True)

    def width(self) -> int:
        return self.re.width() + self.im.width() + 1

    def format(self, v) -> str:
        re = self.re.format(v.real)
        im = (self.im.format(v.imag) + "j").lstrip()
        return re + im if im[0] in "+-" else re + "+" + im


def complex_repr(t, show_dtype: bool) -> str:
    """repr of a complex tensor (its dtype shown when not the default complex one, or when empty)."""
    prefix = "tensor("
    shape = tuple(t.shape)
    extras = []
    if t.numel() == 0:
        body = "[]"
        if shape != (0,):
            extras.append(f"size={shape}")
    else:
        data = _summarise(t.tolist(), shape, t.numel() > THRESHOLD)
        body = _fmt(data, len(shape), _ComplexFormatter(_flat(data, [])), len(prefix))
    if show_dtype or t.numel() == 0:
        extras.append(f"dtype=torch.{_dtype_name(t)}")
    if t.device.type != "cpu":
        extras.insert(0, f"device='{t.device}'")
    return add_suffixes(prefix + body, extras, len(prefix))
