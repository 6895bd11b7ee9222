"""The package's arguments, checked before ctypes sees them.

ctypes turns a Python int into a C int, size_t or pointer by keeping its low bits, without a
word: root=2**32+2 arrives as root 2, a shape of 2**70 elements as count 0 (a no-op that
succeeds), mem_alloc(-1) as SIZE_MAX, a pointer -4096 as 0xfffffffffffff000; a float scalar
1e300 becomes inf in a C float; a str is cut at its first NUL. The C library checks what it is
given, but it can only check what arrives. So every value crosses into C through one of these
helpers, which hand it on unchanged or refuse it, naming the argument and the value:

  TypeError      not the kind of value meant (a bool or a float where an integer is meant, bytes
                 where a str is meant): truncating 1.5 to 1 would turn op=1.5 into prod;
  OverflowError  an integer the C type cannot hold (a C int, size_t or pointer);
  ValueError     a value of the right kind the argument cannot take (a negative dimension, a
                 NUL in a string, a scalar the dtype cannot hold).

What a value means (is root a rank, is op a live scaled sum) stays the C library's to judge:
its messages say it with the communicator's state at hand.
"""
import ctypes
import math
import operator
import os

INT_MIN, INT_MAX = -2 ** 31, 2 ** 31 - 1
SIZE_MAX = 2 ** 64 - 1  # size_t, and pointers (uintptr_t), on the 64-bit Linux the library builds for


def _integral(name, value):
    """value as a Python int: ints and what says it is one (__index__: numpy, torch integers);
    bools refused, since True where a rank or a count is meant is a slip, not a 1."""
    if type(value) is int:
        return value
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise TypeError("hidet_nccl: %s must be an integer, not %s %r" % (name, type(value).__name__, value))


def _within(name, value, lo, hi, ctype):
    value = _integral(name, value)
    if not lo <= value <= hi:
        raise OverflowError("hidet_nccl: %s %d does not fit %s (%d .. %d)" % (name, value, ctype, lo, hi))
    return value


# Each check starts with the case of nearly every call (an int in range), which costs a
# collective well under a microsecond; the rest is in _within.
def c_int(name, value):
    """An int argument of the C API (communicator ids, ranks, ops, colors, flags, handles)."""
    if type(value) is int and INT_MIN <= value <= INT_MAX:
        return value
    return _within(name, value, INT_MIN, INT_MAX, "a C int")


def size(name, value):
    """A size_t argument (byte and element counts)."""
    if type(value) is int and 0 <= value <= SIZE_MAX:
        return value
    return _within(name, value, 0, SIZE_MAX, "size_t")


def pointer(name, value):
    """An address (device buffers, streams, an ncclComm_t) as an int; 0 is NULL."""
    if type(value) is int and 0 <= value <= SIZE_MAX:
        return value
    return _within(name, value, 0, SIZE_MAX, "a pointer")


def shape(name, dims):
    """The element count of an array of shape dims: every dimension a non-negative integer (a
    negative pair would multiply to a positive count), the product within size_t (2**70
    elements would otherwise arrive as 0)."""
    count = 1
    for n in dims:
        if type(n) is not int or n < 0:
            return _shape(name, dims)
        count *= n
    if count > SIZE_MAX:
        raise OverflowError("hidet_nccl: %s has shape %r: %d elements do not fit size_t" % (name, tuple(dims), count))
    return count


def _shape(name, dims):
    """shape() for dims that are not all non-negative ints: taken through __index__, or refused."""
    count = 1
    for i, n in enumerate(dims):
        if type(n) is not int:
            n = _integral("%s shape[%d]" % (name, i), n)
        if n < 0:
            raise ValueError("hidet_nccl: %s has shape %r, with negative dimension %d" % (name, tuple(dims), n))
        count *= n
    if count > SIZE_MAX:
        raise OverflowError("hidet_nccl: %s has shape %r: %d elements do not fit size_t" % (name, tuple(dims), count))
    return count


def real(name, value):
    """A double argument (seconds): a real number, never a bool or a string float() would parse."""
    if isinstance(value, (bool, str, bytes)):
        raise TypeError("hidet_nccl: %s must be a number, not %s %r" % (name, type(value).__name__, value))
    try:
        return float(value)
    except OverflowError:
        raise OverflowError("hidet_nccl: %s %r does not fit a C double" % (name, value)) from None
    except (TypeError, ValueError):
        raise TypeError("hidet_nccl: %s must be a number, not %s %r" % (name, type(value).__name__, value)) from None


def _no_nul(name, value, data):
    if b"\0" in data:
        raise ValueError("hidet_nccl: %s %r holds a NUL character, where C would cut it" % (name, value))
    return data


def text(name, value):
    """A str argument as the C string (UTF-8) the library gets; bytes are refused, as a tag of
    b"x" would otherwise be recorded as "b'x'"."""
    if not isinstance(value, str):
        raise TypeError("hidet_nccl: %s must be a str, not %s %r" % (name, type(value).__name__, value))
    try:
        data = value.encode()
    except UnicodeEncodeError as e:
        raise ValueError("hidet_nccl: %s %r is not valid text (%s)" % (name, value, e.reason)) from None
    return _no_nul(name, value, data)


def path(name, value):
    """A file system path (str, bytes or os.PathLike, as open() takes) as the bytes the OS gets."""
    try:
        data = os.fsencode(value)
    except TypeError:
        raise TypeError("hidet_nccl: %s must be a path (str, bytes or os.PathLike), not %s %r"
                        % (name, type(value).__name__, value)) from None
    return _no_nul(name, value, data)


# premul_sum's host scalar: the C type of each dtype's scalar (complex: of its real part).
_INT_SCALARS = {"int8": ctypes.c_int8, "uint8": ctypes.c_uint8, "int32": ctypes.c_int32, "uint32": ctypes.c_uint32,
                "int64": ctypes.c_int64, "uint64": ctypes.c_uint64}
_FLOAT_SCALARS = {"float32": ctypes.c_float, "float64": ctypes.c_double, "tfloat32": ctypes.c_float,
                  "complex64": ctypes.c_float, "complex128": ctypes.c_double}


def scalar(dtype, value):
    """premul_sum's scalar as the C value of dtype, refused where the dtype cannot hold it,
    since ctypes wraps integers (int8 1000 -> -24) and rounds floats to inf (float32 1e300).
    A float scalar must be finite: NaN or inf would make every element of the scaled sum NaN or
    inf, never a scale anyone means; a float is refused for an integer dtype (2.5 is not an
    int32), as is a bool for any."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("hidet_nccl: a %s scalar must be a number, not %s %r" % (dtype, type(value).__name__, value))
    ctype = _INT_SCALARS.get(dtype)
    if ctype is not None:
        if not isinstance(value, int):
            raise TypeError("hidet_nccl: a %s scalar must be an integer, not %r" % (dtype, value))
        bits = 8 * ctypes.sizeof(ctype)
        lo, hi = (0, 2 ** bits - 1) if dtype.startswith("u") else (-2 ** (bits - 1), 2 ** (bits - 1) - 1)
        if not lo <= value <= hi:
            raise ValueError("hidet_nccl: scalar %d does not fit %s (%d .. %d)" % (value, dtype, lo, hi))
        return ctype(value)
    ctype = _FLOAT_SCALARS.get(dtype)
    if ctype is None:
        raise TypeError("hidet_nccl: a %s scalar from Python is not supported; give a one-element device array of "
                        "that type" % dtype)
    try:
        c = ctype(value)
    except OverflowError:  # an int past a double's range
        c = None
    if c is None or not math.isfinite(c.value):
        real = "float32" if ctype is ctypes.c_float else "float64"
        what = dtype if dtype == real else "%s (the scalar type of %s)" % (real, dtype)
        raise ValueError("hidet_nccl: scalar %r is not a finite %s" % (value, what))
    return c
