"""The cache's value format: tensors and NumPy arrays as their raw bytes
behind a small typed header (no pickle on the hot path); tuples, lists and
dicts of them, and None, bool, int, float, str and bytes, likewise. Anything
else (a PIL image, a namedtuple, a tensor subclass) falls back to pickle,
which `encode` reports so the cache can count it.

Layout (little-endian): b"BGC1", then one value:

  N | T | F                     None, True, False
  i int64 | f float64          int (64-bit; larger ints are pickled), float
  s u32 n, utf-8 | y u32 n, raw str, bytes
  t | l u32 n, n values        tuple, list
  d u32 n, n (key, value)      dict, insertion order kept
  X u8 dtype, u8 ndim, pad to 8, i64 shape[ndim], u64 nbytes, pad to 16, data
                               torch.Tensor (CPU, strided; data 16-byte aligned)
  A u8 n, dtype.str, u8 ndim, pad to 8, i64 shape[ndim], u64 nbytes, pad to 16, data
                               numpy.ndarray; a numpy scalar is 'a', same layout
  P u64 n, pickle              the fallback

Decoding views the buffer (a writable bytearray from the store): tensors and
arrays share its memory, with no copy.
"""
import pickle
import struct

import numpy as np
import torch

MAGIC = b"BGC1"

# Codes are part of the format: append, never reorder.
_TORCH_DTYPE_NAMES = [
    "float32", "float64", "float16", "bfloat16", "complex32", "complex64", "complex128",
    "bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
    "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
    "float4_e2m1fn_x2", "bits8", "bits16", "bits1x8", "bits2x4", "bits4x2",
]
_DTYPE_OF_CODE = {}
_CODE_OF_DTYPE = {}
for _code, _name in enumerate(_TORCH_DTYPE_NAMES, start=1):
    _dtype = getattr(torch, _name, None)
    if isinstance(_dtype, torch.dtype):
        _DTYPE_OF_CODE[_code] = _dtype
        _CODE_OF_DTYPE[_dtype] = _code

_RAW_NUMPY_KINDS = set("biufcmM")  # bool, ints, floats, complex, timedelta, datetime
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


class _Writer:
    """Collects the parts of one record; `size` is the offset of the next byte."""

    def __init__(self):
        self.parts = [MAGIC]
        self.size = len(MAGIC)
        self.pickled = False

    def add(self, part):
        self.parts.append(part)
        self.size += len(part)

    def pad(self, alignment):
        n = -self.size % alignment
        if n:
            self.add(b"\0" * n)


def encode(value):
    """Returns (bytes, pickled): the record of `value`, and whether any part
    of it fell back to pickle."""
    w = _Writer()
    _put(w, value)
    return b"".join(w.parts), w.pickled


def _put(w, v):
    t = type(v)
    if v is None:
        w.add(b"N")
    elif t is bool:
        w.add(b"T" if v else b"F")
    elif t is int and -(1 << 63) <= v < (1 << 63):
        w.add(b"i" + _I64.pack(v))
    elif t is float:
        w.add(b"f" + _F64.pack(v))
    elif t is str:
        data = v.encode("utf-8", "surrogatepass")
        w.add(b"s" + _U32.pack(len(data)))
        w.add(data)
    elif t is bytes:
        w.add(b"y" + _U32.pack(len(v)))
        w.add(v)
    elif t is tuple or t is list:
        w.add((b"t" if t is tuple else b"l") + _U32.pack(len(v)))
        for item in v:
            _put(w, item)
    elif t is dict:
        w.add(b"d" + _U32.pack(len(v)))
        for key, item in v.items():
            _put(w, key)
            _put(w, item)
    elif t is torch.Tensor and _raw_tensor(v):
        _put_tensor(w, v)
    elif (t is np.ndarray or isinstance(v, np.generic)) and _raw_array(v):
        _put_array(w, v)
    else:
        data = pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL)
        w.add(b"P" + _U64.pack(len(data)))
        w.add(data)
        w.pickled = True


def _raw_tensor(t):
    return t.layout == torch.strided and t.dtype in _CODE_OF_DTYPE and not t.is_quantized


def _raw_array(a):
    return a.dtype.kind in _RAW_NUMPY_KINDS and a.dtype.fields is None and a.ndim < 256


def _put_shape(w, shape, nbytes):
    w.pad(8)
    w.add(struct.pack(f"<{len(shape)}q", *shape) + _U64.pack(nbytes))
    w.pad(16)


def _put_tensor(w, t):
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.resolve_conj().resolve_neg().contiguous()
    w.add(b"X" + bytes([_CODE_OF_DTYPE[t.dtype], t.dim()]))
    raw = t.reshape(-1).view(torch.uint8) if t.numel() else None
    _put_shape(w, t.shape, 0 if raw is None else raw.numel())
    if raw is not None:
        w.add(memoryview(raw.numpy()))


def _put_array(w, a):
    scalar = isinstance(a, np.generic)
    a = np.asarray(a)
    if not a.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
        a = a.copy(order="C")
    name = a.dtype.str.encode("ascii")
    w.add((b"a" if scalar else b"A") + bytes([len(name)]) + name + bytes([a.ndim]))
    _put_shape(w, a.shape, a.nbytes)
    if a.nbytes:
        w.add(memoryview(a.reshape(-1).view(np.uint8)))


def decode(buffer):
    """The value of a record made by `encode`. `buffer` should be writable
    (a bytearray) so that tensors may view it; raises ValueError when it is
    not such a record."""
    view = memoryview(buffer)
    if view[: len(MAGIC)] != MAGIC:
        raise ValueError("bagua cache: a stored value does not start with the cache's "
                         f"format marker {MAGIC!r}: written by another program or version?")
    value, end = _get(buffer, view, len(MAGIC))
    if end != len(view):
        raise ValueError(f"bagua cache: a stored value has {len(view) - end} bytes after its end")
    return value


def _get(buf, view, pos):
    tag = view[pos:pos + 1].tobytes()
    pos += 1
    if tag == b"N":
        return None, pos
    if tag == b"T":
        return True, pos
    if tag == b"F":
        return False, pos
    if tag == b"i":
        return _I64.unpack_from(view, pos)[0], pos + 8
    if tag == b"f":
        return _F64.unpack_from(view, pos)[0], pos + 8
    if tag in (b"s", b"y"):
        (n,) = _U32.unpack_from(view, pos)
        data = view[pos + 4:pos + 4 + n].tobytes()
        return (data.decode("utf-8", "surrogatepass") if tag == b"s" else data), pos + 4 + n
    if tag in (b"t", b"l"):
        (n,) = _U32.unpack_from(view, pos)
        pos += 4
        items = []
        for _ in range(n):
            item, pos = _get(buf, view, pos)
            items.append(item)
        return (tuple(items) if tag == b"t" else items), pos
    if tag == b"d":
        (n,) = _U32.unpack_from(view, pos)
        pos += 4
        out = {}
        for _ in range(n):
            key, pos = _get(buf, view, pos)
            out[key], pos = _get(buf, view, pos)
        return out, pos
    if tag == b"X":
        code, ndim = view[pos], view[pos + 1]
        shape, nbytes, pos = _get_shape(view, pos + 2, ndim)
        dtype = _DTYPE_OF_CODE.get(code)
        if dtype is None:
            raise ValueError(f"bagua cache: stored tensor dtype code {code} is unknown to "
                             f"this torch {torch.__version__}")
        if nbytes == 0:
            return torch.empty(shape, dtype=dtype), pos
        raw = torch.frombuffer(buf, dtype=torch.uint8, count=nbytes, offset=pos)
        return raw.view(dtype).reshape(shape), pos + nbytes
    if tag in (b"A", b"a"):
        n = view[pos]
        dtype = np.dtype(view[pos + 1:pos + 1 + n].tobytes().decode("ascii"))
        ndim = view[pos + 1 + n]
        shape, nbytes, pos = _get_shape(view, pos + 2 + n, ndim)
        if nbytes == 0:
            array = np.empty(shape, dtype=dtype)
        else:
            array = np.frombuffer(buf, dtype=dtype, count=nbytes // dtype.itemsize,
                                  offset=pos).reshape(shape)
        return (array[()] if tag == b"a" else array), pos + nbytes
    if tag == b"P":
        (n,) = _U64.unpack_from(view, pos)
        return pickle.loads(view[pos + 8:pos + 8 + n]), pos + 8 + n
    raise ValueError(f"bagua cache: a stored value holds an unknown tag {tag!r} at byte {pos - 1}")


def _get_shape(view, pos, ndim):
    pos += -pos % 8
    shape = struct.unpack_from(f"<{ndim}q", view, pos)
    pos += 8 * ndim
    (nbytes,) = _U64.unpack_from(view, pos)
    pos += 8
    pos += -pos % 16
    return shape, nbytes, pos
