"""What the collectives need of an array: its device pointer, element count, hidet dtype and
stream. Taken from a torch tensor directly, else from __cuda_array_interface__, else from
DLPack. What an array says of itself (its shape, address, stream) passes _check like any
argument: an object that offers the interfaces is not thereby telling the truth."""
import ctypes

from . import _check

# hidet_nccl_dtype_t values, by hidet's name.
DTYPES = {
    "bool": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "uint8": 5, "uint16": 6, "uint32": 7, "uint64": 8,
    "float16": 9, "bfloat16": 10, "tfloat32": 11, "float32": 12, "float64": 13, "float8_e4m3": 14,
    "float8_e5m2": 15, "complex64": 16, "complex128": 17,
}
OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}

# torch's names where they differ from hidet's; the ones NCCL would get wrong are refused.
_TORCH = {"float8_e4m3fn": "float8_e4m3", "half": "float16", "float": "float32", "double": "float64",
          "cfloat": "complex64", "cdouble": "complex128", "long": "int64", "int": "int32", "short": "int16"}
_TORCH_REFUSED = {
    "float8_e4m3fnuz": "a float8 encoding NCCL does not have (e4m3fnuz: no negative zero, other bias)",
    "float8_e5m2fnuz": "a float8 encoding NCCL does not have (e5m2fnuz)",
    "complex32": "complex of float16 halves, which NCCL cannot reduce; view it as float16 pairs",
}
# __cuda_array_interface__ / numpy type strings (byte order '<', '|' or '=').
_TYPESTR = {"b1": "bool", "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64", "u1": "uint8", "u2": "uint16",
            "u4": "uint32", "u8": "uint64", "f2": "float16", "f4": "float32", "f8": "float64", "c8": "complex64",
            "c16": "complex128"}
# DLPack type codes (kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLComplex, kDLBool) and bits.
_DLPACK = {(0, 8): "int8", (0, 16): "int16", (0, 32): "int32", (0, 64): "int64", (1, 8): "uint8", (1, 16): "uint16",
           (1, 32): "uint32", (1, 64): "uint64", (2, 16): "float16", (2, 32): "float32", (2, 64): "float64",
           (4, 16): "bfloat16", (5, 64): "complex64", (5, 128): "complex128", (6, 8): "bool"}


def dtype_from_torch(name):
    """hidet's name for a torch dtype or its name ("torch.bfloat16", "float8_e4m3fn")."""
    name = str(name)
    name = name[len("torch."):] if name.startswith("torch.") else name
    if name in _TORCH_REFUSED:
        raise TypeError("hidet_nccl: torch.%s is %s" % (name, _TORCH_REFUSED[name]))
    name = _TORCH.get(name, name)
    if name not in DTYPES:
        raise TypeError("hidet_nccl: torch.%s has no hidet data type" % name)
    return name


def dtype_from_typestr(typestr):
    """hidet's name for an array-interface type string ("<f4", "|b1", "<c16")."""
    if not isinstance(typestr, str):
        raise TypeError("hidet_nccl: array type %r is not a str" % (typestr,))
    if len(typestr) < 2 or typestr[0] not in "<|=" or typestr[1:] not in _TYPESTR:
        raise TypeError("hidet_nccl: array type %r is not a little-endian type hidet has (%s)" %
                        (typestr, ", ".join(sorted(_TYPESTR))))
    return _TYPESTR[typestr[1:]]


def dtype_from_dlpack(code, bits, lanes=1):
    """hidet's name for a DLPack (code, bits, lanes)."""
    if lanes != 1 or (code, bits) not in _DLPACK:
        raise TypeError("hidet_nccl: DLPack type (code %d, %d bits, %d lanes) has no hidet data type" %
                        (code, bits, lanes))
    return _DLPACK[(code, bits)]


def _contiguous(shape, strides, itemsize):
    """C-contiguous in bytes-strides (None: contiguous)."""
    if strides is None:
        return True
    expect = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_get_capsule = ctypes.pythonapi.PyCapsule_GetPointer
_get_capsule.restype = ctypes.c_void_p
_get_capsule.argtypes = [ctypes.py_object, ctypes.c_char_p]
_KDL_CUDA, _KDL_CUDA_MANAGED = 2, 13


class View:
    """An array as the C library sees it; `keep` holds what must live while it is used."""

    __slots__ = ("ptr", "count", "dtype", "dtype_code", "stream", "keep")

    def __init__(self, ptr, count, dtype, stream, keep=None):
        self.ptr, self.count, self.dtype, self.stream, self.keep = ptr, count, dtype, stream, keep
        self.dtype_code = DTYPES[dtype]


# What a small collective costs a Python program is mostly this module: per torch dtype its
# hidet name, found once; torch's current stream as the raw handle (no Stream object made).
_torch_dtypes = {}
_torch_stream = None


def _current_torch_stream(device):
    global _torch_stream
    if _torch_stream is None:
        import torch
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        _torch_stream = raw if raw is not None else (lambda d: torch.cuda.current_stream(d).cuda_stream)
    return _torch_stream(device)


def _torch_view(t, stream):
    if not t.is_cuda:
        raise ValueError("hidet_nccl: the tensor is on %s, not on a CUDA device" % t.device)
    if not t.is_contiguous():
        raise ValueError("hidet_nccl: the tensor is not contiguous (call .contiguous())")
    dtype = _torch_dtypes.get(t.dtype)
    if dtype is None:
        dtype = _torch_dtypes[t.dtype] = dtype_from_torch(t.dtype)
    if stream is None:
        stream = _current_torch_stream(t.get_device())
    return View(t.data_ptr(), t.numel(), dtype, stream, t)


def view(a, stream=None, name="array"):
    """The View of array `a` (torch tensor, __cuda_array_interface__, DLPack), called `name` in
    errors. stream: a cudaStream_t as an int, checked by the caller; None: the array
    framework's current stream (torch), the stream the interface names, else the default
    stream. A torch tensor's own numbers are taken as they are (torch made them)."""
    if type(a).__module__.startswith("torch") and hasattr(a, "data_ptr"):
        return _torch_view(a, stream)
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is not None:
        shape = tuple(cai["shape"])
        count = _check.shape(name, shape)
        dtype = dtype_from_typestr(cai["typestr"])
        if not _contiguous(shape, cai.get("strides"), int(cai["typestr"][2:])):
            raise ValueError("hidet_nccl: the array is not C-contiguous")
        if stream is None:
            stream = _check.pointer(name + "'s __cuda_array_interface__ stream", cai.get("stream") or 0)
        return View(_check.pointer(name + "'s data pointer", cai["data"][0]), count, dtype, stream, a)
    if hasattr(a, "__dlpack__"):
        capsule = a.__dlpack__()
        managed = _get_capsule(capsule, b"dltensor")
        t = _DLTensor.from_address(managed)  # DLManagedTensor starts with its DLTensor
        if t.device.device_type not in (_KDL_CUDA, _KDL_CUDA_MANAGED):
            raise ValueError("hidet_nccl: the DLPack array is not in CUDA memory (device type %d)"
                             % t.device.device_type)
        dtype = dtype_from_dlpack(t.dtype.code, t.dtype.bits, t.dtype.lanes)
        if t.ndim < 0:
            raise ValueError("hidet_nccl: %s is a DLPack array of %d dimensions" % (name, t.ndim))
        shape = tuple(t.shape[i] for i in range(t.ndim))
        count = _check.shape(name, shape)
        itemsize = max(t.dtype.bits // 8, 1)
        strides = None if not t.strides else tuple(t.strides[i] * itemsize for i in range(t.ndim))
        if not _contiguous(shape, strides, itemsize):
            raise ValueError("hidet_nccl: the array is not C-contiguous")
        ptr = _check.pointer(name + "'s data pointer + byte_offset", (t.data or 0) + t.byte_offset)
        return View(ptr, count, dtype, 0 if stream is None else stream, (a, capsule))
    raise TypeError("hidet_nccl: %s is not an array hidet_nccl can use (a torch tensor, or an object with "
                    "__cuda_array_interface__ or __dlpack__)" % type(a).__name__)
