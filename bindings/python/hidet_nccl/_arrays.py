"""What the collectives need of an array: its device pointer, element count, hidet dtype and
stream. Taken from a torch tensor directly, else from __cuda_array_interface__, else from
DLPack. What an array says of itself (its shape, address, stream) passes _check like any
argument: an object that offers the interfaces is not thereby telling the truth."""
import ctypes
import sys

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


# hidet's name of each dtype code (in messages).
NAMES = {code: name for name, code in DTYPES.items()}
# __cuda_array_interface__ type strings as (dtype code, bytes per element), every byte order
# accepted; anything else goes to dtype_from_typestr for its error.
_CAI_TYPES = {order + t: (DTYPES[name], int(t[1:])) for order in "<|=" for t, name in _TYPESTR.items()}


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


def array(a, stream, name):
    """What the C library needs of array `a` (a torch tensor, or an object with
    __cuda_array_interface__ or __dlpack__), called `name` in errors, as a tuple
    (data pointer, element count, dtype code, stream, hold): `hold` must stay referenced until
    the C call returns (a DLPack capsule). stream: a call's stream= (an int handle, a
    torch.cuda.Stream, a CuPy stream: stream_handle); None: torch's current stream for a torch
    tensor, the stream the interface names, else the default stream 0.

    Every collective calls this for each buffer: a small collective's cost to a Python program
    is mostly this function, so a torch tensor (of a class seen before) is read right here,
    with six of torch's C methods (is_cuda, is_contiguous, dtype, get_device only when no
    stream is given, data_ptr, numel) and nothing made that is not returned. A tensor's own
    numbers are taken as they are (torch made them): data_ptr() is the address of its first
    element, numel() its count."""
    if stream is not None and (type(stream) is not int or not 0 <= stream <= _check.SIZE_MAX):
        stream = stream_handle(stream)
    if type(a) not in _tensor_classes:
        return _other_array(a, stream, name)
    if not a.is_cuda:
        raise ValueError("hidet_nccl: %s is on %s, not on a CUDA device" % (name, a.device))
    if not a.is_contiguous():
        raise ValueError("hidet_nccl: %s is not contiguous (call .contiguous())" % name)
    code = _torch_codes.get(a.dtype)
    if code is None:
        code = _torch_code(a.dtype)
    if stream is None:
        stream = _torch_stream(a.get_device())
    return a.data_ptr(), a.numel(), code, stream, a


def stream_handle(s):
    """A stream argument as the cudaStream_t int it names: an int handle, a torch.cuda.Stream
    (.cuda_stream), a CuPy stream (.ptr), or another object with .handle."""
    if not isinstance(s, int):
        for attr in ("cuda_stream", "ptr", "handle"):
            if hasattr(s, attr):
                return _check.pointer("stream." + attr, getattr(s, attr))
    try:
        return _check.pointer("stream", s)
    except TypeError:
        raise TypeError("hidet_nccl: stream %r is not a CUDA stream (an int handle, a torch.cuda.Stream, a CuPy "
                        "stream)" % (s,)) from None


# ---- torch tensors
# The classes of torch tensors seen so far: torch.Tensor and its subclasses (a program has few),
# found by _other_array at first sight.
_tensor_classes = set()
# torch.dtype -> dtype code, each found once (refused dtypes are not kept: they raise each time).
_torch_codes = {}


def _torch_code(dtype):
    code = _torch_codes[dtype] = DTYPES[dtype_from_torch(dtype)]
    return code


def _is_tensor_class(cls):
    torch = sys.modules.get("torch")  # a torch tensor's class exists only once torch is imported
    tensor = getattr(torch, "Tensor", None)
    return isinstance(tensor, type) and issubclass(cls, tensor)


def _find_torch_stream(device):
    """torch's current stream on CUDA device `device` (an index) as a cudaStream_t int. The
    public way, torch.cuda.current_stream(device).cuda_stream, makes a Stream object each time
    (microseconds); torch._C._cuda_getCurrentRawStream(device) gives the same handle as an int
    (what torch's own compiled code calls; private, so used only where it exists and agrees
    with the public answer, tried once). The first call that torch answers decides, and
    replaces _torch_stream."""
    global _torch_stream
    import torch

    def public(d):
        return torch.cuda.current_stream(d).cuda_stream

    stream = public(device)  # if torch cannot say, it raises here and nothing is decided
    raw = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)
    try:
        agrees = raw is not None and raw(device) == stream
    except Exception:  # a private function that fails is not used
        agrees = False
    _torch_stream = raw if agrees else public
    return stream


_torch_stream = _find_torch_stream


def torch_stream(device):
    """torch's current stream on CUDA device index `device`, as an int."""
    return _torch_stream(device)


# ---- __cuda_array_interface__ (CuPy, Numba) and DLPack: what such an array says of itself
# (its shape, address, stream) is checked like any argument.
# Classes known not to be torch tensors (a class is one or not for good); a program that makes
# classes without end stops adding them at _OTHER_CLASSES_MAX (they are then looked at each call).
_other_classes = set()
_OTHER_CLASSES_MAX = 256


def _other_array(a, stream, name):
    cls = type(a)
    if cls not in _other_classes:
        if _is_tensor_class(cls):
            _tensor_classes.add(cls)
            return array(a, stream, name)
        if len(_other_classes) < _OTHER_CLASSES_MAX:
            _other_classes.add(cls)
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is not None:
        return _cai_array(a, cai, stream, name)
    if hasattr(a, "__dlpack__"):
        return _dlpack_array(a, stream, name)
    raise TypeError("hidet_nccl: %s is not an array hidet_nccl can use (a torch tensor, or an object with "
                    "__cuda_array_interface__ or __dlpack__)" % type(a).__name__)


def _cai_array(a, cai, stream, name):
    shape = tuple(cai["shape"])
    count = _check.shape(name, shape)
    typestr = cai["typestr"]
    known = _CAI_TYPES.get(typestr) if type(typestr) is str else None
    if known is None:
        dtype_from_typestr(typestr)  # raises, saying why
    code, itemsize = known
    strides = cai.get("strides")
    if strides is not None and not _contiguous(shape, strides, itemsize):
        raise ValueError("hidet_nccl: the array is not C-contiguous")
    if stream is None:
        stream = cai.get("stream") or 0
        if type(stream) is not int or not 0 <= stream <= _check.SIZE_MAX:
            stream = _check.pointer(name + "'s __cuda_array_interface__ stream", stream)
    ptr = cai["data"][0]
    if type(ptr) is not int or not 0 <= ptr <= _check.SIZE_MAX:
        ptr = _check.pointer(name + "'s data pointer", ptr)
    return ptr, count, code, stream, a


def _dlpack_array(a, stream, name):
    capsule = a.__dlpack__()
    managed = _get_capsule(capsule, b"dltensor")
    t = _DLTensor.from_address(managed)  # DLManagedTensor starts with its DLTensor
    if t.device.device_type not in (_KDL_CUDA, _KDL_CUDA_MANAGED):
        raise ValueError("hidet_nccl: the DLPack array is not in CUDA memory (device type %d)" % t.device.device_type)
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
    # The capsule is held until the call returns: its producer may free what it describes when
    # the capsule goes.
    return ptr, count, DTYPES[dtype], 0 if stream is None else stream, (a, capsule)
