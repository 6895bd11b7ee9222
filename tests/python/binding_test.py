"""The Python package on the CPU: loading, the dtype tables, errors with the C library's
messages, and what reaches NCCL from arrays with __cuda_array_interface__ and DLPack, through
the recording stand-in for NCCL (tools/support/fake_nccl.c).
    binding_test.py LIBHIDET_NCCL_SO LIBFAKE_NCCL_SO   (bindings/python on PYTHONPATH)"""
import ctypes
import json
import os
import sys
import tempfile
import unittest

SO, FAKE = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])
os.environ["HIDET_NCCL_SO"] = SO
os.environ["HIDET_NCCL_LIBRARY"] = FAKE
del sys.argv[1:3]

import hidet_nccl as hn  # noqa: E402

NCCL_UINT8, NCCL_UINT32, NCCL_UINT64, NCCL_FLOAT32, NCCL_BFLOAT16 = 1, 3, 5, 7, 9


class FakeComm(ctypes.Structure):
    _fields_ = [("nranks", ctypes.c_int), ("rank", ctypes.c_int)]


class FakeCall(ctypes.Structure):
    _fields_ = [("fn", ctypes.c_char * 32), ("send", ctypes.c_void_p), ("recv", ctypes.c_void_p),
                ("count", ctypes.c_size_t), ("type", ctypes.c_int), ("op", ctypes.c_int), ("rank", ctypes.c_int),
                ("comm", ctypes.c_void_p), ("depth", ctypes.c_int), ("scalar", ctypes.c_ubyte * 8)]


class CudaArray:
    """Device memory by address, as __cuda_array_interface__ describes it (never touched here)."""

    def __init__(self, ptr, shape, typestr, strides=None):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": shape, "typestr": typestr,
                                         "strides": strides, "version": 3}


class DLPackArray:
    """An array that hands out a DLPack capsule (device type CUDA)."""

    def __init__(self, ptr, shape, code, bits):
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.tensor = hn._arrays._DLTensor(ptr, hn._arrays._DLDevice(2, 0), len(shape),
                                           hn._arrays._DLDataType(code, bits, 1), self.shape, None, 0)

    def __dlpack__(self, stream=None):
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.tensor), b"dltensor", None)


def calls():
    n, depth = ctypes.c_int(), ctypes.c_int()
    log = FAKE_LIB.fake_nccl_log(ctypes.byref(n), ctypes.byref(depth))
    return [log[i] for i in range(n.value)]


class Binding(unittest.TestCase):
    def setUp(self):
        FAKE_LIB.fake_nccl_clear()

    def only(self, fn):
        c = calls()
        self.assertEqual([x.fn.decode() for x in c], [fn])
        return c[0]

    def test_loaded_and_tables_agree(self):
        self.assertEqual(hn.__version__, "0.1.0")
        self.assertEqual(hn.nccl_version(), (2, 28, 9))
        self.assertEqual(hn.nccl_path(), FAKE)
        hn._check_tables()

    def test_dtype_names(self):
        self.assertEqual(hn.dtype_from_torch("torch.bfloat16"), "bfloat16")
        self.assertEqual(hn.dtype_from_torch("torch.float8_e4m3fn"), "float8_e4m3")
        self.assertEqual(hn.dtype_from_torch("torch.cdouble"), "complex128")
        for refused in ("torch.float8_e4m3fnuz", "torch.complex32", "torch.qint8"):
            with self.assertRaises(TypeError):
                hn.dtype_from_torch(refused)
        self.assertEqual(hn.dtype_from_typestr("<c8"), "complex64")
        self.assertEqual(hn.dtype_from_typestr("|b1"), "bool")
        with self.assertRaises(TypeError):
            hn.dtype_from_typestr(">f4")  # big-endian
        self.assertEqual(hn.dtype_from_dlpack(4, 16), "bfloat16")
        self.assertEqual(hn.dtype_from_dlpack(5, 128), "complex128")
        with self.assertRaises(TypeError):
            hn.dtype_from_dlpack(2, 32, lanes=4)

    def test_errors_carry_the_message(self):
        with self.assertRaises(hn.HidetNcclError) as e:
            hn.Communicator(12345).rank
        self.assertEqual(e.exception.status, 2)
        self.assertIn("12345", str(e.exception))
        with self.assertRaises(hn.HidetNcclError) as e:
            COMM.broadcast(CudaArray(0x1000, (4,), "<f4"), root=7)
        self.assertIn("root 7 is not a rank", str(e.exception))
        with self.assertRaises(TypeError):
            COMM.all_reduce([1, 2, 3])

    def test_cuda_array_interface(self):
        COMM.all_reduce(CudaArray(0x1000, (2, 3), "<c8"))  # complex sum: float32 pairs
        c = self.only("ncclAllReduce")
        self.assertEqual((c.send, c.recv, c.count, c.type), (0x1000, 0x1000, 12, NCCL_FLOAT32))
        FAKE_LIB.fake_nccl_clear()
        COMM.all_gather(CudaArray(0x1000, (5,), "|b1"), out=CudaArray(0x2000, (20,), "|b1"))
        c = self.only("ncclAllGather")
        self.assertEqual((c.count, c.type, c.recv), (5, NCCL_UINT8, 0x2000))
        with self.assertRaises(ValueError):  # out must hold size x the block
            COMM.all_gather(CudaArray(0x1000, (5,), "<f4"), out=CudaArray(0x2000, (19,), "<f4"))
        with self.assertRaises(ValueError):  # not contiguous
            COMM.all_reduce(CudaArray(0x1000, (4, 4), "<f4", strides=(32, 4)))

    def test_dlpack(self):
        COMM.broadcast(DLPackArray(0x3000, (7,), 4, 16), root=2)  # bfloat16, moved as bytes
        c = self.only("ncclBroadcast")
        self.assertEqual((c.count, c.type, c.rank), (14, NCCL_UINT8, 2))
        FAKE_LIB.fake_nccl_clear()
        COMM.reduce_scatter(DLPackArray(0x3000, (8,), 4, 16), out=DLPackArray(0x4000, (2,), 4, 16), op="max")
        c = self.only("ncclReduceScatter")
        self.assertEqual((c.count, c.type), (2, NCCL_BFLOAT16))

    def test_group_and_point_to_point(self):
        with hn.group():
            COMM.send(CudaArray(0x1000, (4,), "<i8"), peer=2)
            COMM.recv(CudaArray(0x2000, (4,), "<i8"), peer=0)
        names = [x.fn.decode() for x in calls()]
        self.assertEqual(names, ["ncclGroupStart", "ncclSend", "ncclRecv", "ncclGroupEnd"])
        self.assertEqual(calls()[1].type, NCCL_UINT64)

    def test_scaled_sum(self):
        with COMM.premul_sum("float32", 0.25) as op:
            c = self.only("ncclRedOpCreatePreMulSum")
            self.assertEqual(bytes(c.scalar[:4]), bytes(ctypes.c_float(0.25)))
            FAKE_LIB.fake_nccl_clear()
            COMM.all_reduce(CudaArray(0x1000, (4,), "<f4"), op=op)
            self.assertEqual(self.only("ncclAllReduce").op, c.op)
        FAKE_LIB.fake_nccl_clear()
        with self.assertRaises(hn.HidetNcclError):
            COMM.all_reduce(CudaArray(0x1000, (4,), "<f4"), op=op.code if op.code is not None else 64)

    def test_all_to_all_blocks(self):
        COMM.all_to_all(CudaArray(0x1000, (8,), "<f4"), out=CudaArray(0x9000, (8,), "<f4"))
        self.assertEqual(self.only("ncclAlltoAll").count, 2)
        with self.assertRaises(ValueError):
            COMM.all_to_all(CudaArray(0x1000, (6,), "<f4"), out=CudaArray(0x9000, (6,), "<f4"))

    def test_shrink_and_revoke(self):
        os.environ["HIDET_NCCL_NONBLOCKING"] = "1"  # the blocking form asks CUDA for the device
        hn.call("hidet_nccl_settings_reload")
        try:
            child = COMM.shrink([3], hn.SHRINK_ABORT)
            c = self.only("ncclCommShrink")
            self.assertEqual((c.count, c.op), (1, 1))
            self.assertEqual((child.size, child.rank), (3, 1))
            with self.assertRaises(hn.HidetNcclError) as e:
                COMM.shrink([1])
            self.assertIn("this rank", str(e.exception))
            child.revoke()
            with self.assertRaises(hn.HidetNcclError) as e:
                child.all_reduce(CudaArray(0x1000, (4,), "<f4"))
            self.assertIn("revoked by hidet_nccl_comm_revoke", str(e.exception))
            child.destroy()
        finally:
            del os.environ["HIDET_NCCL_NONBLOCKING"]
            hn.call("hidet_nccl_settings_reload")

    def test_tag_and_trace_dump(self):
        with self.assertRaises(hn.HidetNcclError):
            hn.set_tag("x" * 60)
        hn.set_tag("step 7")
        COMM.all_reduce(CudaArray(0x1000, (4,), "<f4"))
        hn.set_tag(None)
        with tempfile.TemporaryDirectory() as d:
            path = hn.trace_dump(d)
            self.assertTrue(path.startswith(d))
            with open(path) as f:
                lines = [json.loads(line) for line in f]
        ops = [x for x in lines if x["type"] == "op" and x["tag"] == "step 7"]
        self.assertEqual([(x["coll"], x["dtype"], x["count"]) for x in ops], [("all_reduce", "float32", 4)])
        with self.assertRaises(hn.HidetNcclError) as e:
            hn.trace_dump("/no/such/dir")
        self.assertIn("must exist", str(e.exception))


if __name__ == "__main__":
    FAKE_LIB = ctypes.CDLL(FAKE)
    FAKE_LIB.fake_nccl_log.restype = ctypes.POINTER(FakeCall)
    FAKE_COMM = FakeComm(4, 1)
    COMM = hn.adopt(ctypes.addressof(FAKE_COMM))
    if COMM.size != 4 or COMM.rank != 1:
        raise SystemExit("the stand-in communicator is not rank 1 of 4")
    unittest.main(verbosity=2)
