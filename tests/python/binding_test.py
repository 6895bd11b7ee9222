"""The Python package on the CPU: loading, the dtype tables, errors with the C library's
messages, and what reaches NCCL from arrays with __cuda_array_interface__ and DLPack, through
the recording stand-in for NCCL (tools/support/fake_nccl.c); and hostile or careless arguments
(HostileArguments), refused before they reach C, where ctypes would wrap or cut them.
    binding_test.py LIBHIDET_NCCL_SO LIBFAKE_NCCL_SO PATH   (bindings/python on PYTHONPATH)
PATH is how the collectives reach C, "extension" (hidet_nccl/_calls, which must then be there)
or "ctypes" (forced): run_binding_test.sh runs every case through each. CallPaths compares the
two paths directly, whichever PATH is."""
import contextlib
import ctypes
import json
import math
import os
import pathlib
import sys
import tempfile
import types
import unittest
from unittest import mock

SO, FAKE, PATH = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2]), sys.argv[3]
os.environ["HIDET_NCCL_SO"] = SO
os.environ["HIDET_NCCL_LIBRARY"] = FAKE
del sys.argv[1:4]

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


class Recorder:
    """Stands in for the package's C functions (hidet_nccl._c, and hidet_nccl._calls, through
    which the collectives call): records each call, returns success. The calls on torch tensors
    done whole in the extension (hidet_nccl._lib.TORCH_CALLS) decline, as through ctypes: what
    is recorded is the C function's arguments, from the general path."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        if name in hn._lib.TORCH_CALLS:
            return hn._lib._declined
        return lambda *args: self.calls.append((name, args)) or 0


def recording(seen):
    """Every C call of the package goes to `seen` (a Recorder) within the block."""
    return mock.patch.multiple(hn, _c=seen, _calls=seen)


class TorchDtype:
    """A stand-in for a torch.dtype: hashable, its str "torch.<name>"."""

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name


TORCH_DTYPES = {name: TorchDtype(name) for name in ("float32", "bfloat16", "float8_e4m3fn", "complex32", "qint8")}


class Tensor:
    """A stand-in for torch.Tensor (no torch here): what the package asks of a tensor, answered
    as torch documents it (get_device() is -1 off the GPU; data_ptr() the first element's
    address). `asked` counts the calls of each method."""

    def __init__(self, ptr, count, dtype="float32", device=0, cuda=True, contiguous=True):
        self.ptr, self.count, self.dtype, self.index = ptr, count, TORCH_DTYPES[dtype], device if cuda else -1
        self.is_cuda, self.contiguous, self.asked = cuda, contiguous, {}
        self.device = "cuda:%d" % device if cuda else "cpu"

    def _ask(self, what, value):
        self.asked[what] = self.asked.get(what, 0) + 1
        return value

    def is_contiguous(self):
        return self._ask("is_contiguous", self.contiguous)

    def get_device(self):
        return self._ask("get_device", self.index)

    def data_ptr(self):
        return self._ask("data_ptr", self.ptr)

    def numel(self):
        return self._ask("numel", self.count)


@contextlib.contextmanager
def torch_stand_in(raw=None, public=lambda d: 0x5150):
    """sys.modules["torch"] is a stand-in whose Tensor is the class above: torch.cuda's public
    current_stream(d).cuda_stream is public(d); torch._C._cuda_getCurrentRawStream is raw (None:
    absent). The package's choice between them is made afresh inside and forgotten after."""
    torch = types.ModuleType("torch")
    torch.Tensor = Tensor
    torch._C = types.SimpleNamespace() if raw is None else types.SimpleNamespace(_cuda_getCurrentRawStream=raw)
    torch.public_asked = []

    def current_stream(d=None):
        torch.public_asked.append(d)
        return types.SimpleNamespace(cuda_stream=public(d))
    torch.cuda = types.SimpleNamespace(is_initialized=lambda: True, current_device=lambda: 0,
                                       current_stream=current_stream)
    with mock.patch.dict(sys.modules, {"torch": torch}), \
            mock.patch.object(hn._arrays, "_torch_stream", hn._arrays._find_torch_stream):
        yield torch


def failing_once():
    """torch.cuda's current_stream(d).cuda_stream failing once (CUDA not ready), then 0x5150."""
    answers = [RuntimeError("CUDA error: initialization error"), 0x5150, 0x5150]

    def public(d):
        a = answers.pop(0)
        if isinstance(a, Exception):
            raise a
        return a
    return public


def calls():
    n, depth = ctypes.c_int(), ctypes.c_int()
    log = FAKE_LIB.fake_nccl_log(ctypes.byref(n), ctypes.byref(depth))
    return [log[i] for i in range(n.value)]


class FakeNcclCase(unittest.TestCase):
    def setUp(self):
        FAKE_LIB.fake_nccl_clear()

    def only(self, fn):
        c = calls()
        self.assertEqual([x.fn.decode() for x in c], [fn])
        return c[0]


class Binding(FakeNcclCase):
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

    def test_all_reduce_route(self):
        """How all_reduce would run, asked of the adopted communicator (no library memory: NCCL as
        it is); the arguments are checked as all_reduce checks them, and nothing reaches NCCL."""
        x = CudaArray(0x1000, (4,), "<f4")
        self.assertEqual(COMM.all_reduce_route(x), "nccl plain")
        self.assertEqual(COMM.all_reduce_route(x, out=CudaArray(0x2000, (4,), "<f4"), op="max"), "nccl plain")
        self.assertEqual(COMM.all_reduce_route(DLPackArray(0x3000, (7,), 4, 16), op=hn.OPS["avg"]), "nccl plain")
        self.assertEqual(calls(), [])
        with self.assertRaises(ValueError):  # out must match the input
            COMM.all_reduce_route(x, out=CudaArray(0x2000, (5,), "<f4"))
        with self.assertRaises(hn.HidetNcclError) as e:
            COMM.all_reduce_route(x, op=64)
        self.assertEqual(e.exception.status, 1)
        self.assertEqual(hn.REGISTER_OWN, 3)

    def test_dlpack(self):
        COMM.broadcast(DLPackArray(0x3000, (7,), 4, 16), root=2)  # bfloat16, moved as bytes
        c = self.only("ncclBroadcast")
        self.assertEqual((c.count, c.type, c.rank), (14, NCCL_UINT8, 2))
        FAKE_LIB.fake_nccl_clear()
        COMM.reduce_scatter(DLPackArray(0x3000, (8,), 4, 16), out=DLPackArray(0x4000, (2,), 4, 16), op="max")
        c = self.only("ncclReduceScatter")
        self.assertEqual((c.count, c.type), (2, NCCL_BFLOAT16))

    def test_wait_and_barrier_default_to_the_collectives_stream(self):
        """A bare wait() covers what a bare collective on a torch tensor queued: torch's current
        stream when torch is in use (it is looked for, never imported), else stream 0."""
        seen = Recorder()
        with torch_stand_in(raw=lambda d: 0x5150), recording(seen):
            COMM.wait()
            COMM.barrier()
            COMM.wait(stream=0x77)
        self.assertEqual([args[1] for _, args in seen.calls], [0x5150, 0x5150, 0x77])
        seen.calls.clear()
        with mock.patch.dict(sys.modules), recording(seen):
            sys.modules.pop("torch", None)
            COMM.wait()
            self.assertNotIn("torch", sys.modules)
        self.assertEqual(seen.calls[0][1][1], 0)
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
        """The recorder records with a trace directory set (a communicator's ring is made at its
        first collective); trace_dump() then writes there. Without one, COMM was not recorded,
        and a dump's header says why."""
        with self.assertRaises(hn.HidetNcclError):
            hn.set_tag("x" * 60)
        fake = FakeComm(4, 2)
        with tempfile.TemporaryDirectory() as d:
            os.environ["HIDET_NCCL_TRACE_DIR"] = d
            hn.call("hidet_nccl_settings_reload")
            try:
                comm = hn.adopt(ctypes.addressof(fake))
                hn.set_tag("step 7")
                comm.all_reduce(CudaArray(0x1000, (4,), "<f4"))
                hn.set_tag(None)
                path = hn.trace_dump()
                self.assertTrue(path.startswith(d))
                with open(path) as f:
                    lines = [json.loads(line) for line in f]
                comm.destroy()
            finally:
                del os.environ["HIDET_NCCL_TRACE_DIR"]
                hn.call("hidet_nccl_settings_reload")
            self.assertEqual(lines[0]["recorder"], "on")
            ops = [x for x in lines if x["type"] == "op" and x["tag"] == "step 7"]
            self.assertEqual([(x["coll"], x["dtype"], x["count"]) for x in ops], [("all_reduce", "float32", 4)])
            COMM.all_reduce(CudaArray(0x1000, (4,), "<f4"))
            with open(hn.trace_dump(d)) as f:
                lines = [json.loads(line) for line in f]
        self.assertEqual(lines[0]["recorder"],
                         "off (neither HIDET_NCCL_TRACE_DIR nor HIDET_NCCL_TRACE_ENTRIES set; set one to record)")
        self.assertEqual([x for x in lines if x.get("comm") == COMM.id], [])
        with self.assertRaises(hn.HidetNcclError) as e:
            hn.trace_dump("/no/such/dir")
        self.assertIn("must exist", str(e.exception))


class HealStub:
    """Stands in for the C library's comm_heal, comm_joined and comm_size (hidet_nccl._c and the
    functions call() reaches): records each call, writes the answer given into the out-arguments
    as C would, returns success."""

    def __init__(self, new_id, n_joined, joined):
        self.new_id, self.n_joined, self.joined, self.calls = new_id, n_joined, joined, []

    def hidet_nccl_comm_heal(self, comm_id, timeout_s, new_id, n_joined):
        self.calls.append(("heal", comm_id, timeout_s))
        new_id._obj.value, n_joined._obj.value = self.new_id, self.n_joined
        return 0

    def hidet_nccl_comm_size(self, comm_id, size):
        size._obj.value = len(self.joined)
        return 0

    def comm_size(self, comm_id):  # hidet_nccl._calls' (Communicator.size)
        return 0, len(self.joined)

    def hidet_nccl_comm_joined(self, comm_id, joined, n_joined):
        self.calls.append(("joined", comm_id, len(joined)))
        for r, flag in enumerate(self.joined):
            joined[r] = flag
        n_joined._obj.value = sum(self.joined)
        return 0


class Heal(FakeNcclCase):
    """Communicator.heal and .joined (issue 39), as recover is exposed: the C library's refusals
    reach Python as HidetNcclError with its status and message, the timeout is checked in Python,
    heal returns (a new Communicator, ranks taken in), or this same object when the communicator
    went on unchanged (so that destroying "the old one" never destroys the new), and joined()
    lists the new ranks. A heal that takes ranks in needs a bootstrap and restarted processes:
    examples/python/cg_heal.py on the GPU (tools/gpu/heal_example.sh)."""

    @contextlib.contextmanager
    def c_answers(self, new_id, n_joined, joined):
        stub = HealStub(new_id, n_joined, joined)
        with mock.patch.multiple(hn, _c=stub, _calls=stub), mock.patch.object(hn._lib, "functions", stub):
            yield stub

    def test_borrowed_refused_as_recover_is(self):
        """The adopted communicator was not made over a bootstrap: heal is refused by the C library
        (INVALID_USAGE, the same refusal as recover's), nothing reaches NCCL, and it goes on."""
        for method in (COMM.heal, COMM.recover):
            with self.subTest(method.__name__):
                with self.assertRaises(hn.HidetNcclError) as e:
                    method(5.0)
                self.assertEqual((e.exception.status, e.exception.status_name), (10, "invalid usage"))
                self.assertIn("communicator id %d is borrowed" % COMM.id, str(e.exception))
                self.assertEqual(calls(), [])
        COMM.all_reduce(CudaArray(0x1000, (4,), "<f4"))
        self.only("ncclAllReduce")

    def test_unknown_id_and_bad_timeouts(self):
        with self.assertRaises(hn.HidetNcclError) as e:
            hn.Communicator(12345).heal()
        self.assertEqual(e.exception.status, 2)
        self.assertIn("12345", str(e.exception))
        for timeout in (float("nan"), -1.0, float("inf")):
            with self.subTest(timeout=timeout), self.assertRaises(hn.HidetNcclError) as e:
                COMM.heal(timeout)
            self.assertEqual(e.exception.status, 1)
            self.assertIn("timeout_s", str(e.exception))
        for timeout in ("5", True, None, b"5"):
            with self.subTest(timeout=timeout), self.assertRaises(TypeError) as e:
                COMM.heal(timeout)
            self.assertIn("timeout_s", str(e.exception))
        self.assertEqual(calls(), [])

    def test_joined_of_a_communicator_no_heal_made(self):
        self.assertEqual(COMM.joined(), [])
        with self.assertRaises(hn.HidetNcclError) as e:
            hn.Communicator(12345).joined()
        self.assertEqual(e.exception.status, 2)

    def test_what_heal_returns(self):
        old = hn.Communicator(7)
        with self.c_answers(new_id=9, n_joined=2, joined=[0, 1, 0, 1]) as c:
            new, n_joined = old.heal(30)
            self.assertEqual((type(new), new.id, n_joined), (hn.Communicator, 9, 2))
            self.assertEqual(new.joined(), [1, 3])
        self.assertEqual(c.calls, [("heal", 7, 30.0), ("joined", 9, 4)])
        self.assertIsInstance(c.calls[0][2], float)
        with self.c_answers(new_id=7, n_joined=0, joined=[0, 0, 0]) as c:  # nothing changed: the same id
            same, n_joined = old.heal()
            self.assertIs(same, old)
            self.assertEqual((n_joined, same.joined()), (0, []))
        self.assertEqual(c.calls, [("heal", 7, 0.0), ("joined", 7, 3)])
        with self.c_answers(new_id=4, n_joined=1, joined=[1]) as c:  # one rank, itself new
            self.assertEqual(hn.Communicator(4).joined(), [0])


class TorchPath(FakeNcclCase):
    """A torch tensor's path (a stand-in for torch: no torch here; tests/python/torch_gpu_test.py
    runs real torch on a GPU): what reaches NCCL, the stream asked of torch, the checks."""

    def test_what_reaches_nccl(self):
        with torch_stand_in(raw=lambda d: 0x7000 + d):
            t = Tensor(0x1000, 6, "bfloat16", device=1)
            COMM.all_reduce(t)
            c = self.only("ncclAllReduce")
            self.assertEqual((c.send, c.recv, c.count, c.type), (0x1000, 0x1000, 6, NCCL_BFLOAT16))
            self.assertEqual(t.asked, {"is_contiguous": 1, "get_device": 1, "data_ptr": 1, "numel": 1})
            FAKE_LIB.fake_nccl_clear()
            COMM.all_gather(Tensor(0x1000, 2), out=Tensor(0x2000, 8))
            self.assertEqual(self.only("ncclAllGather").recv, 0x2000)
            FAKE_LIB.fake_nccl_clear()
            COMM.reduce_scatter(Tensor(0x2000, 8), out=Tensor(0x1000, 2), op="max")
            c = self.only("ncclReduceScatter")
            self.assertEqual((c.send, c.recv, c.count), (0x2000, 0x1000, 2))
            self.assertEqual(hn.dtype_of(Tensor(0x1000, 1, "float8_e4m3fn")), "float8_e4m3")

    def test_stream(self):
        """torch's current stream of the tensor's device: through torch._C._cuda_getCurrentRawStream
        where it exists and agrees with torch.cuda.current_stream(device).cuda_stream (asked once,
        when the choice is made), else through the public call each time; stream= when given."""
        cases = (("raw agrees", lambda d: 0x5150 + d, lambda d: 0x5150 + d, 1),
                 ("no raw", None, lambda d: 0x5150 + d, 3),
                 ("raw disagrees", lambda d: 0x9999, lambda d: 0x5150 + d, 3),
                 ("raw raises", lambda d: 1 // 0, lambda d: 0x5150 + d, 3))
        for label, raw, public, public_calls in cases:
            with self.subTest(label), torch_stand_in(raw=raw, public=public) as torch:
                seen = Recorder()
                with recording(seen):
                    for device in (0, 2, 2):
                        COMM.all_reduce(Tensor(0x1000, 4, device=device))
                    t = Tensor(0x1000, 4, device=2)
                    COMM.broadcast(t, root=1, stream=0x77)
                self.assertEqual([args[-1] for _, args in seen.calls], [0x5150, 0x5152, 0x5152, 0x77])
                self.assertNotIn("get_device", t.asked)
                self.assertEqual(len(torch.public_asked), public_calls)

    def test_torch_failing_decides_nothing(self):
        """When torch cannot say its current stream, its error comes out and the choice waits."""
        public = failing_once()
        with torch_stand_in(raw=lambda d: 0x5150, public=public) as torch, \
                recording(Recorder()):
            with self.assertRaisesRegex(RuntimeError, "initialization error"):
                COMM.all_reduce(Tensor(0x1000, 4))
            COMM.all_reduce(Tensor(0x1000, 4))
            COMM.all_reduce(Tensor(0x1000, 4))
            self.assertEqual(len(torch.public_asked), 2)  # the failure, then the choice
            self.assertEqual(hn._calls.calls[-1][1][-1], 0x5150)

    def test_refused(self):
        """Bad tensors are refused, each call (a refused dtype is not remembered as a good one),
        before NCCL is called."""
        with torch_stand_in(raw=lambda d: 0):
            for _ in range(2):
                with self.assertRaisesRegex(ValueError, "tensor is on cpu, not on a CUDA device"):
                    COMM.all_reduce(Tensor(0x1000, 4, cuda=False))
                with self.assertRaisesRegex(ValueError, "tensor is not contiguous"):
                    COMM.all_reduce(Tensor(0x1000, 4, contiguous=False))
                with self.assertRaisesRegex(ValueError, "out is not contiguous"):
                    COMM.all_reduce(Tensor(0x1000, 4), out=Tensor(0x2000, 4, contiguous=False))
                with self.assertRaisesRegex(TypeError, "complex32 is complex of float16 halves"):
                    COMM.all_reduce(Tensor(0x1000, 4, "complex32"))
                with self.assertRaisesRegex(TypeError, "qint8 has no hidet data type"):
                    COMM.broadcast(Tensor(0x1000, 4, "qint8"))
                with self.assertRaisesRegex(ValueError, "out holds 4 bfloat16, the input 4 float32"):
                    COMM.all_reduce(Tensor(0x1000, 4), out=Tensor(0x2000, 4, "bfloat16"))
                with self.assertRaisesRegex(ValueError, r"out holds 7 float32, expected 4 x 2 float32"):
                    COMM.all_gather(Tensor(0x1000, 2), out=Tensor(0x2000, 7))
                with self.assertRaisesRegex(OverflowError, "root"):
                    COMM.broadcast(Tensor(0x1000, 4), root=2 ** 32 + 2)
            self.assertEqual(calls(), [])

    def test_subclass(self):
        """A subclass of torch.Tensor (as torch.nn.Parameter, or one of a user's module) is a tensor."""
        class Parameter(Tensor):
            pass
        Parameter.__module__ = "my_models"
        with torch_stand_in(raw=lambda d: 0):
            COMM.all_reduce(Parameter(0x3000, 5))
        c = self.only("ncclAllReduce")
        self.assertEqual((c.send, c.count, c.type), (0x3000, 5, NCCL_FLOAT32))


class Index:
    """An integer that is not an int (as numpy's and torch's are): taken through __index__."""

    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value


class HostileArguments(FakeNcclCase):
    """Issue 27, items 11-13: ctypes keeps an integer's low bits (root 2**32+2 is root 2), a
    C float turns 1e300 into inf and C cuts a string at its NUL, all without a word; each such
    value must be refused in Python, naming the argument and the value, before NCCL is called."""

    def refused(self, error, fn, *words):
        """fn() raises `error` (exactly: an OverflowError is no ValueError) whose message holds
        every one of words, and nothing reached NCCL. A subtest each, so that every case is seen."""
        with self.subTest(error=error.__name__, words=words):
            FAKE_LIB.fake_nccl_clear()
            with self.assertRaises(Exception) as e:
                fn()
            self.assertIs(type(e.exception), error, e.exception)
            for word in words:
                self.assertIn(str(word), str(e.exception))
            self.assertEqual([x.fn.decode() for x in calls()], [])

    def test_integers_that_ctypes_would_wrap(self):
        x = CudaArray(0x1000, (4,), "<f4")
        self.refused(OverflowError, lambda: COMM.broadcast(x, root=2 ** 32 + 2), "root", 2 ** 32 + 2)
        self.refused(OverflowError, lambda: COMM.reduce(x, root=-2 ** 31 - 1), "root", -2 ** 31 - 1)
        self.refused(OverflowError, lambda: COMM.gather(x, out=CudaArray(0x2000, (16,), "<f4"), root=2 ** 32),
                     "root")
        self.refused(OverflowError, lambda: COMM.scatter(CudaArray(0x2000, (16,), "<f4"), x, root=2 ** 33), "root")
        self.refused(OverflowError, lambda: COMM.send(x, peer=2 ** 32 + 2), "peer", 2 ** 32 + 2)
        self.refused(OverflowError, lambda: COMM.recv(x, peer=2 ** 32 + 2), "peer", 2 ** 32 + 2)
        self.refused(OverflowError, lambda: COMM.all_reduce(x, op=2 ** 32), "op", 2 ** 32)
        self.refused(OverflowError, lambda: hn.Communicator(COMM.id + 2 ** 32), "comm_id", COMM.id + 2 ** 32)
        self.refused(OverflowError, lambda: COMM.mem_alloc(-1), "nbytes", -1)
        self.refused(OverflowError, lambda: COMM.mem_alloc(2 ** 64), "nbytes", 2 ** 64)
        self.refused(OverflowError, lambda: COMM.split(2 ** 32), "color", 2 ** 32)
        self.refused(OverflowError, lambda: COMM.split(0, key=-2 ** 40), "key", -2 ** 40)
        self.refused(OverflowError, lambda: COMM.shrink([0, 2 ** 32 + 3]), "exclude[1]", 2 ** 32 + 3)
        self.refused(OverflowError, lambda: COMM.shrink([3], flags=2 ** 32 + 1), "flags", 2 ** 32 + 1)
        self.refused(OverflowError, lambda: COMM.register(0x1000, -1), "nbytes", -1)
        self.refused(OverflowError, lambda: COMM.register(0x1000, 4096, flags=2 ** 32 + 1), "flags")
        self.refused(OverflowError, lambda: COMM.deregister(2 ** 32), "handle", 2 ** 32)

    def test_pointers_that_ctypes_would_wrap(self):
        self.refused(OverflowError, lambda: COMM.all_reduce(CudaArray(-4096, (4,), "<f4")), "data pointer", -4096)
        self.refused(OverflowError, lambda: COMM.all_reduce(CudaArray(2 ** 64 + 0x1000, (4,), "<f4")),
                     "data pointer")
        dl = DLPackArray(0x3000, (4,), 2, 32)
        dl.tensor.byte_offset = 2 ** 64 - 0x1000  # data + offset past 2**64: would wrap to 0x2000
        self.refused(OverflowError, lambda: COMM.all_reduce(dl), "byte_offset", 2 ** 64 + 0x2000)
        self.refused(OverflowError, lambda: hn.mem_free(-4096), "ptr", -4096)
        self.refused(OverflowError, lambda: hn.adopt(-4096), "nccl_comm", -4096)
        self.refused(OverflowError, lambda: COMM.register(-4096, 4096), "ptr", -4096)
        x = CudaArray(0x1000, (4,), "<f4")
        self.refused(OverflowError, lambda: COMM.all_reduce(x, stream=-1), "stream", -1)
        self.refused(OverflowError, lambda: COMM.barrier(stream=2 ** 64), "stream", 2 ** 64)
        self.refused(OverflowError, lambda: COMM.wait(stream=-1), "stream", -1)
        x.__cuda_array_interface__["stream"] = -5
        self.refused(OverflowError, lambda: COMM.all_reduce(x), "stream", -5)

    def test_floats_and_bools_where_an_integer_is_meant(self):
        x = CudaArray(0x1000, (4,), "<f4")
        self.refused(TypeError, lambda: COMM.all_reduce(x, op=1.5), "op", "1.5")  # not prod
        self.refused(TypeError, lambda: COMM.all_reduce(x, op=True), "op", "True")
        self.refused(TypeError, lambda: COMM.broadcast(x, root=2.0), "root", "2.0")
        self.refused(TypeError, lambda: COMM.send(x, peer=None), "peer", "None")
        self.refused(TypeError, lambda: COMM.broadcast(x, root="1"), "root", "'1'")
        self.refused(TypeError, lambda: hn.Communicator(True), "comm_id", "True")
        self.refused(TypeError, lambda: COMM.mem_alloc(4096.0), "nbytes", "4096.0")
        self.refused(TypeError, lambda: COMM.shrink([3], flags=1.5), "flags", "1.5")
        self.refused(TypeError, lambda: COMM.all_reduce(x, stream=1.5), "stream", "1.5")
        self.refused(TypeError, lambda: COMM.wait(timeout_s="5"), "timeout_s", "'5'")
        self.refused(TypeError, lambda: COMM.wait(timeout_s=True), "timeout_s", "True")
        with COMM.premul_sum("float32", 0.5) as op:
            pass
        FAKE_LIB.fake_nccl_clear()
        self.refused(ValueError, lambda: COMM.all_reduce(x, op=op), "destroyed")  # not ctypes' ArgumentError

    def test_integers_that_are_not_ints(self):
        """What says it is an integer (__index__: numpy's, torch's) is taken as one."""
        COMM.broadcast(CudaArray(0x1000, (Index(2), Index(3)), "<f4"), root=Index(2))
        c = self.only("ncclBroadcast")
        self.assertEqual((c.count, c.rank), (6, 2))

    def test_shapes(self):
        self.refused(OverflowError, lambda: COMM.all_reduce(CudaArray(0x1000, (2 ** 70,), "<f4")), "shape",
                     2 ** 70)
        self.refused(OverflowError, lambda: COMM.all_reduce(CudaArray(0x1000, (2 ** 32, 2 ** 32), "<f4")), "shape")
        self.refused(ValueError, lambda: COMM.all_reduce(CudaArray(0x1000, (-2, -3), "<f4")), "shape", -2)
        self.refused(ValueError, lambda: COMM.all_gather(CudaArray(0x1000, (4,), "<f4"),
                                                         out=CudaArray(0x2000, (-4, -4), "<f4")), "out", -4)
        self.refused(TypeError, lambda: COMM.all_reduce(CudaArray(0x1000, (2.5, 2), "<f4")), "shape[0]", "2.5")
        self.refused(TypeError, lambda: COMM.all_reduce(CudaArray(0x1000, (True, 4), "<f4")), "shape[0]")
        self.refused(ValueError, lambda: COMM.all_reduce(DLPackArray(0x3000, (-2, -3), 2, 32)), "shape", -2)
        self.refused(OverflowError, lambda: COMM.all_reduce(DLPackArray(0x3000, (2 ** 62, 8), 2, 32)), "shape")
        COMM.all_reduce(CudaArray(0x1000, (0, 4), "<f4"))  # an empty array is fine (and nothing to queue)
        self.assertEqual(calls(), [])

    def test_premul_sum_scalars_the_dtype_cannot_hold(self):
        for dtype, scalar in (("int8", 1000), ("int8", -129), ("uint8", -1), ("uint8", 256), ("int32", 2 ** 40),
                              ("uint32", 2 ** 32), ("int64", 2 ** 63), ("uint64", -1), ("uint64", 2 ** 64),
                              ("float32", 1e300), ("float32", -1e39), ("float32", 2 ** 200), ("float64", 2 ** 1024),
                              ("complex64", 1e300), ("tfloat32", 1e39), ("float32", math.nan),
                              ("float64", math.inf), ("float64", -math.inf)):
            self.refused(ValueError, lambda: COMM.premul_sum(dtype, scalar), dtype, repr(scalar))
        self.refused(TypeError, lambda: COMM.premul_sum("int32", 2.5), "int32", "2.5")
        self.refused(TypeError, lambda: COMM.premul_sum("float32", True), "float32", "True")
        self.refused(ValueError, lambda: COMM.premul_sum("float33", 1.0), "float33")
        self.refused(ValueError, lambda: COMM.premul_sum("float32", CudaArray(0x1000, (1,), "<f8")), "float32",
                     "float64")  # a double read as a float would be garbage
        self.refused(ValueError, lambda: COMM.premul_sum("float32", CudaArray(0x1000, (2,), "<f4")), "2")

    def test_premul_sum_scalars_at_the_edges(self):
        for dtype, scalar, expect in (("int8", -128, ctypes.c_int8(-128)), ("uint8", 255, ctypes.c_uint8(255)),
                                      ("int64", -2 ** 63, ctypes.c_int64(-2 ** 63)),
                                      ("uint64", 2 ** 64 - 1, ctypes.c_uint64(2 ** 64 - 1)),
                                      ("float32", 3.4028234e38, ctypes.c_float(3.4028234e38)),
                                      ("float32", 1e-50, ctypes.c_float(0.0)),  # underflow to 0 is a value
                                      ("complex128", 1e300, ctypes.c_double(1e300))):
            FAKE_LIB.fake_nccl_clear()
            with COMM.premul_sum(dtype, scalar):
                c = self.only("ncclRedOpCreatePreMulSum")
                self.assertEqual(bytes(c.scalar[:ctypes.sizeof(expect)]), bytes(expect), dtype)
        FAKE_LIB.fake_nccl_clear()
        with COMM.premul_sum("float32", CudaArray(0x1000, (1,), "<f4")):  # read on the device
            self.assertEqual(self.only("ncclRedOpCreatePreMulSum").send, 0x1000)

    def test_strings(self):
        self.refused(TypeError, lambda: hn.set_tag(b"x"), "tag", "b'x'")
        self.refused(TypeError, lambda: hn.set_tag(5), "tag", "5")
        self.refused(ValueError, lambda: hn.set_tag("ab\0cd"), "tag", "'ab\\x00cd'")
        self.refused(ValueError, lambda: hn.set_tag("\udc80"), "tag")
        with tempfile.TemporaryDirectory() as d:
            self.refused(ValueError, lambda: hn.trace_dump(d + "\0x"), "directory", "NUL")
            self.refused(ValueError, lambda: hn.trace_dump(d.encode() + b"\0x"), "directory", "NUL")
            self.refused(TypeError, lambda: hn.trace_dump(5), "directory", "5")
            self.refused(TypeError, lambda: COMM.all_reduce(CudaArray(0x1000, (4,), b"<f4")), "b'<f4'")
            self.assertTrue(hn.trace_dump(pathlib.Path(d)).startswith(d))
            self.assertTrue(hn.trace_dump(d.encode()).startswith(d))  # bytes paths, as open() takes them


class CallPaths(FakeNcclCase):
    """The collectives' two ways into C (hidet_nccl._lib.calls): the extension module
    (hidet_nccl/_calls, bindings/python/calls.c) and ctypes. The same arguments reach NCCL
    through both; what ctypes would wrap, cut or take for a pointer (2**32 as comm_id 0, -1 as a
    count of 2**64-1, a str as a pointer) the extension refuses, naming the argument, in
    _check.py's words for an int; bool, float, str and None (None but for a pointer) are
    TypeErrors, not ctypes' ArgumentError. Nothing refused reaches NCCL; nothing crashes."""

    def setUp(self):
        super().setUp()
        if hn._lib.extension is None:
            self.skipTest(hn._lib.extension_missing)  # only in a run of PATH ctypes without the module
        self.ext, self.lib = hn._lib.extension, hn._lib.load()
        hn._lib.calls.bind("extension")  # binds the module (the choice of PATH is restored below)

    def tearDown(self):
        hn._lib.calls.bind(PATH)

    def test_the_path_of_this_run(self):
        hn._lib.calls.bind(PATH)
        self.assertEqual(hn.call_path(), PATH)
        source = self.ext if PATH == "extension" else self.lib
        for name in hn._lib.CALLS:
            self.assertIs(getattr(hn._calls, name), getattr(source, name), name)
        x = CudaArray(0x1000, (4,), "<f4")
        COMM.all_reduce(x)
        self.only("ncclAllReduce")

    def test_same_arguments_reach_nccl(self):
        cases = (
            ("hidet_nccl_all_reduce", (COMM.id, 0x1000, 0x2000, 4, 12, 2, 0x77)),
            ("hidet_nccl_broadcast", (COMM.id, 0x1000, 0x1000, 5, 3, 2, 0x77)),
            ("hidet_nccl_reduce", (COMM.id, 0x1000, 0x2000, 6, 13, 3, 0, 0x77)),
            ("hidet_nccl_all_gather", (COMM.id, 0x1000, 0x2000, 2, 12, 0x77)),
            ("hidet_nccl_reduce_scatter", (COMM.id, 0x2000, 0x1000, 2, 12, 0, 0x77)),
            ("hidet_nccl_all_to_all", (COMM.id, 0x1000, 0x2000, 2, 12, 0x77)),
            ("hidet_nccl_gather", (COMM.id, 0x1000, None, 2, 12, 0, 0x77)),  # None: NULL, off root
            ("hidet_nccl_scatter", (COMM.id, None, 0x1000, 2, 12, 0, 0x77)),
        )

        def logged():
            return [(c.fn, c.send, c.recv, c.count, c.type, c.op, c.rank) for c in calls()]
        for name, args in cases:
            with self.subTest(name):
                FAKE_LIB.fake_nccl_clear()
                self.assertEqual(getattr(self.lib, name)(*args), 0)
                through_ctypes = logged()
                FAKE_LIB.fake_nccl_clear()
                self.assertEqual(getattr(self.ext, name)(*args), 0)
                self.assertEqual(logged(), through_ctypes)
                self.assertNotEqual(through_ctypes, [])
        FAKE_LIB.fake_nccl_clear()
        for fn in (self.lib, self.ext):  # a group of a send and a receive, each way
            self.assertEqual([fn.hidet_nccl_group_start(), fn.hidet_nccl_send(COMM.id, 0x1000, 4, 4, 2, 0),
                              fn.hidet_nccl_recv(COMM.id, 0x2000, 4, 4, 0, 0), fn.hidet_nccl_group_end()], [0] * 4)
        names = [c.fn.decode() for c in calls()]
        self.assertEqual(names, ["ncclGroupStart", "ncclSend", "ncclRecv", "ncclGroupEnd"] * 2)

    def test_statuses_and_messages(self):
        """A failure is the library's status and message either way (what check() raises)."""
        said = []
        for fn in (self.lib, self.ext):
            self.assertEqual(fn.hidet_nccl_all_reduce(12345, 0x1000, 0x1000, 4, 12, 0, 0), 2)
            self.assertIn("communicator id 12345", self.lib.hidet_nccl_last_error().decode())
            self.assertEqual(fn.hidet_nccl_all_reduce(COMM.id, 0x1000, 0x1000, 4, 99, 0, 0), 1)  # no dtype 99
            self.assertIn("99", self.lib.hidet_nccl_last_error().decode())
            self.assertEqual(fn.hidet_nccl_barrier(COMM.id, 0x77), 6)  # its device buffer: CUDA, no GPU here
            said.append(self.lib.hidet_nccl_last_error().decode())
        self.assertEqual(said[0], said[1])
        self.assertEqual(calls(), [])

    def ext_refuses(self, error, name, args, words, ctypes_does):
        """The extension's function `name` refuses args with `error` whose message holds words;
        ctypes' function of the name does what ctypes_does says: "wraps" (the call reaches C,
        with another value, or more arguments) or the exception it raises (ctypes.ArgumentError,
        TypeError). Nothing reaches NCCL."""
        with self.subTest(name=name, args=args):
            FAKE_LIB.fake_nccl_clear()
            with self.assertRaises(Exception) as e:
                getattr(self.ext, name)(*args)
            self.assertIs(type(e.exception), error, e.exception)
            for word in words:
                self.assertIn(str(word), str(e.exception))
            self.assertEqual(calls(), [])
            if ctypes_does != "wraps":
                with self.assertRaises(ctypes_does):
                    getattr(self.lib, name)(*args)
            else:
                self.assertIsInstance(getattr(self.lib, name)(*args), int)  # reached C, wrapped or cut

    def test_what_ctypes_would_wrap_the_extension_refuses(self):
        c = COMM.id
        int_range, size_range = "(-2147483648 .. 2147483647)", "(0 .. 18446744073709551615)"
        for v in (2 ** 32 + c, -2 ** 31 - 1):  # ctypes: comm_id c (or 2**31-1), wrapped
            self.ext_refuses(OverflowError, "hidet_nccl_all_reduce", (v, 0x1000, 0x1000, 4, 12, 0, 0),
                             ["hidet_nccl: comm_id %d does not fit a C int %s" % (v, int_range)], "wraps")
        self.ext_refuses(OverflowError, "hidet_nccl_broadcast", (c, 0x1000, 0x1000, 4, 12, 2 ** 32 + 2, 0),
                         ["root", 2 ** 32 + 2, "a C int"], "wraps")
        self.ext_refuses(OverflowError, "hidet_nccl_send", (c, 0x1000, 4, 12, 2 ** 32 + 2, 0),
                         ["peer", 2 ** 32 + 2], "wraps")
        self.ext_refuses(OverflowError, "hidet_nccl_reduce", (c, 0x1000, 0x1000, 4, 12, 2 ** 32, 0, 0),
                         ["op", 2 ** 32], "wraps")
        self.ext_refuses(OverflowError, "hidet_nccl_all_gather", (c, 0x1000, 0x2000, 2, 2 ** 32 + 12, 0),
                         ["dtype", 2 ** 32 + 12], "wraps")
        for v in (-1, 2 ** 64, 2 ** 70):  # ctypes: SIZE_MAX, 0, 0
            self.ext_refuses(OverflowError, "hidet_nccl_all_reduce", (c, 0x1000, 0x1000, v, 12, 0, 0),
                             ["hidet_nccl: count %d does not fit size_t %s" % (v, size_range)], "wraps")
        self.ext_refuses(OverflowError, "hidet_nccl_reduce_scatter", (c, 0x2000, 0x1000, -2, 12, 0, 0),
                         ["recvcount", -2], "wraps")
        for v in (-4096, 2 ** 64 + 0x1000):  # ctypes: 0xfffffffffffff000, 0x1000
            self.ext_refuses(OverflowError, "hidet_nccl_all_reduce", (c, v, 0x1000, 4, 12, 0, 0),
                             ["hidet_nccl: sendbuff %d does not fit a pointer %s" % (v, size_range)],
                             "wraps")
        self.ext_refuses(OverflowError, "hidet_nccl_recv", (c, 0x1000, 4, 12, 0, -1), ["stream", -1], "wraps")

    def test_what_is_not_an_integer(self):
        c = COMM.id
        for v, shown in ((1.5, "float 1.5"), ("2", "str '2'"), (None, "NoneType None"), (b"2", "bytes b'2'")):
            self.ext_refuses(TypeError, "hidet_nccl_all_reduce", (v, 0x1000, 0x1000, 4, 12, 0, 0),
                             ["hidet_nccl: comm_id must be an integer, not " + shown], ctypes.ArgumentError)
            self.ext_refuses(TypeError, "hidet_nccl_broadcast", (c, 0x1000, 0x1000, v, 12, 0, 0),
                             ["count must be an integer, not " + shown], ctypes.ArgumentError)
        # bool: ctypes takes True as 1, _check.py refuses it (a slip, not a rank)
        self.ext_refuses(TypeError, "hidet_nccl_broadcast", (c, 0x1000, 0x1000, 4, 12, True, 0),
                         ["hidet_nccl: root must be an integer, not bool True"], "wraps")
        # a pointer: an int or None; ctypes takes a str (its characters' address) or bytes as one
        for v, shown, ctypes_does in ((1.5, "float 1.5", ctypes.ArgumentError), ("x", "str 'x'", "wraps"),
                                      (b"x", "bytes b'x'", "wraps"), (False, "bool False", "wraps")):
            self.ext_refuses(TypeError, "hidet_nccl_all_reduce", (c, 0x1000, v, 4, 12, 0, 0),
                             ["hidet_nccl: recvbuff must be an integer or None, not " + shown], ctypes_does)
        self.ext_refuses(TypeError, "hidet_nccl_barrier", (c, [0x77]), ["stream", "list [119]"], ctypes.ArgumentError)
        # the argument count: too few, as ctypes; too many, which ctypes passes on as C varargs
        for args, ctypes_does in (((c,), TypeError), ((c, 0x1000, 0x1000, 4, 12, 0, 0, 0), "wraps")):
            self.ext_refuses(TypeError, "hidet_nccl_all_reduce", args, ["hidet_nccl_all_reduce() takes 7 arguments",
                                                                       "(%d given)" % len(args)], ctypes_does)

    def test_messages_are_check_pys(self):
        """For an int argument the extension says what _check.c_int says (the same words)."""
        for v in (2 ** 32 + 2, 1.5, True, "1", Index(2 ** 40)):
            with self.subTest(v=v):
                with self.assertRaises((TypeError, OverflowError)) as python:
                    hn._check.c_int("root", v)
                with self.assertRaises(type(python.exception)) as ext:
                    self.ext.hidet_nccl_broadcast(COMM.id, 0x1000, 0x1000, 4, 12, v, 0)
                self.assertEqual(str(ext.exception), str(python.exception))
        with self.assertRaises(OverflowError) as python:
            hn._check.size("count", -1)
        with self.assertRaises(OverflowError) as ext:
            self.ext.hidet_nccl_broadcast(COMM.id, 0x1000, 0x1000, -1, 12, 0, 0)
        self.assertEqual(str(ext.exception), str(python.exception))

    def test_integers_that_are_not_ints(self):
        """__index__ (numpy's, torch's integers) is taken, as _check.py and ctypes take it; an
        __index__ that raises its own error is not hidden."""
        self.assertEqual(self.ext.hidet_nccl_broadcast(Index(COMM.id), Index(0x1000), 0x1000, Index(4), 12,
                                                       Index(2), Index(0x77)), 0)
        c = self.only("ncclBroadcast")
        self.assertEqual((c.send, c.count, c.rank), (0x1000, 4, 2))
        FAKE_LIB.fake_nccl_clear()

        class Broken:
            def __index__(self):
                raise ZeroDivisionError("broken __index__")
        with self.assertRaisesRegex(ZeroDivisionError, "broken __index__"):
            self.ext.hidet_nccl_broadcast(COMM.id, 0x1000, 0x1000, 4, 12, Broken(), 0)
        self.assertEqual(calls(), [])

    def test_bind(self):
        """bind() takes every function's address or none: a missing or bad one changes nothing."""
        addresses = {name: ctypes.cast(getattr(self.lib, name), ctypes.c_void_p).value
                     for name in hn._lib.CALLS + ("hidet_nccl_comm_size",)}
        no_size = {k: v for k, v in addresses.items() if k != "hidet_nccl_comm_size"}
        for bad, error in (({}, ValueError), (no_size, ValueError), (dict(addresses, hidet_nccl_send=None), ValueError),
                           (dict(addresses, hidet_nccl_recv=-1), OverflowError), (list(addresses), TypeError)):
            with self.subTest(bad=type(bad).__name__), self.assertRaises(error):
                self.ext.bind(bad)
        self.ext.bind(addresses)
        COMM.all_reduce(CudaArray(0x1000, (4,), "<f4"))
        self.only("ncclAllReduce")

    def test_comm_size(self):
        """Communicator.size's call: (status, size) either way; -1 with a failure."""
        self.assertEqual(self.ext.comm_size(COMM.id), (0, 4))
        self.assertEqual(hn._lib._comm_size_by_ctypes(COMM.id), (0, 4))
        self.assertEqual(self.ext.comm_size(12345), (2, -1))
        self.assertIn("12345", self.lib.hidet_nccl_last_error().decode())
        self.assertEqual(hn._lib._comm_size_by_ctypes(12345), (2, -1))
        for bad, error in (((2 ** 32,), OverflowError), ((None,), TypeError), ((), TypeError), ((1, 2), TypeError)):
            with self.subTest(bad=bad), self.assertRaises(error):
                self.ext.comm_size(*bad)
        for path in ("extension", "ctypes"):
            hn._lib.calls.bind(path)
            self.assertEqual(COMM.size, 4)
            with self.assertRaises(hn.HidetNcclError) as e:
                hn.Communicator(12345).size
            self.assertEqual(e.exception.status, 2)

    def test_repeat(self):
        """The benchmarks' C loop: n calls, or up to the first failure, whose status it returns."""
        self.assertEqual(self.ext.repeat(3, "hidet_nccl_all_reduce", COMM.id, 0x1000, 0x1000, 4, 12, 0, 0), 0)
        self.assertEqual(self.ext.repeat(2, "hidet_nccl_send", COMM.id, 0x1000, 4, 12, 0, 0), 0)
        self.assertEqual([c.fn.decode() for c in calls()], ["ncclAllReduce"] * 3 + ["ncclSend"] * 2)
        FAKE_LIB.fake_nccl_clear()
        self.assertEqual(self.ext.repeat(3, "hidet_nccl_all_reduce", 12345, 0x1000, 0x1000, 4, 12, 0, 0), 2)
        for bad, error in (((-1, "hidet_nccl_all_reduce", COMM.id, 0x1000, 0x1000, 4, 12, 0, 0), OverflowError),
                           ((1, "hidet_nccl_comm_check", COMM.id), ValueError), ((1, None), TypeError), ((1,), TypeError),
                           ((1, "hidet_nccl_all_reduce", COMM.id), TypeError)):
            with self.subTest(bad=bad), self.assertRaises(error):
                self.ext.repeat(*bad)
        self.assertEqual(calls(), [])


class FusedTorch(FakeNcclCase):
    """A torch tensor's call done whole in the extension (calls.c, hidet_nccl._lib.TORCH_CALLS:
    the method's arguments as given, the tensors read there through the stand-in's methods),
    against the general path (the same extension with fused=False: _arrays.array, then the C
    function): the same calls reach NCCL, the same statuses and messages come back, and every
    case out of the ordinary is declined (-1) there and refused, or taken, by the general path
    in its own words. torch's own exceptions go out as they are. No reference is kept."""

    S = 0x5150 + 2 ** 40  # torch's current stream, one object (its references are counted below)

    def setUp(self):
        super().setUp()
        if hn._lib.extension is None:
            self.skipTest(hn._lib.extension_missing)
        self.ext = hn._lib.extension
        stand_in = torch_stand_in(raw=lambda d: self.S, public=lambda d: self.S)
        stand_in.__enter__()
        self.addCleanup(stand_in.__exit__, None, None, None)
        self.addCleanup(hn._lib.calls.bind, PATH)
        hn._lib.calls.bind("extension")
        COMM.all_reduce(Tensor(0x1000, 4))  # the class taken in, torch's stream chosen (general path)
        FAKE_LIB.fake_nccl_clear()

    def outcome(self, call, fused):
        """(exception type, message, what reached NCCL, (made, declined) by the fused functions)
        of call() with the fused functions bound or not."""
        hn._lib.calls.bind("extension", fused=fused)
        FAKE_LIB.fake_nccl_clear()
        before = self.ext.torch_counts()
        error = None
        try:
            call()
        except Exception as e:  # noqa: BLE001 -- compared below, whatever it is
            error = e
        after = self.ext.torch_counts()
        log = [(c.fn, c.send, c.recv, c.count, c.type, c.op, c.rank) for c in calls()]
        return (type(error), str(error), log, (after[0] - before[0], after[1] - before[1]))

    def same(self, label, call, counts):
        """call() fused and not: the same outcome; the fused functions' (made, declined) counts."""
        with self.subTest(label):
            fused, general = self.outcome(call, True), self.outcome(call, False)
            self.assertEqual(fused[:3], general[:3])
            self.assertEqual(fused[3], counts)
            self.assertEqual(general[3], (0, 0))
            return fused

    def test_same_calls_reach_nccl(self):
        T, made = Tensor, (1, 0)
        cases = (
            ("all_reduce in place", lambda: COMM.all_reduce(T(0x1000, 1000))),
            ("all_reduce out of place, max, stream=", lambda: COMM.all_reduce(T(0x1000, 4), out=T(0x2000, 4),
                                                                               op="max", stream=0x77)),
            ("all_reduce op as an int", lambda: COMM.all_reduce(T(0x1000, 4, "bfloat16"), op=3)),
            ("broadcast root 2", lambda: COMM.broadcast(T(0x1000, 4), root=2)),
            ("broadcast out", lambda: COMM.broadcast(T(0x1000, 4), root=0, out=T(0x2000, 4))),
            ("reduce", lambda: COMM.reduce(T(0x1000, 4), root=3, op="prod")),
            ("reduce out", lambda: COMM.reduce(T(0x1000, 4), root=1, out=T(0x2000, 4), op="min")),
            ("all_gather", lambda: COMM.all_gather(T(0x1000, 2), out=T(0x2000, 8))),
            ("reduce_scatter", lambda: COMM.reduce_scatter(T(0x2000, 8), out=T(0x1000, 2), op="avg")),
            ("all_to_all", lambda: COMM.all_to_all(T(0x1000, 8), out=T(0x2000, 8))),
            ("gather on the root", lambda: COMM.gather(T(0x1000, 2), out=T(0x2000, 8), root=1)),
            ("gather off the root", lambda: COMM.gather(T(0x1000, 2), root=0)),
            ("scatter on the root", lambda: COMM.scatter(T(0x2000, 8), out=T(0x1000, 2), root=1)),
            ("scatter off the root", lambda: COMM.scatter(None, out=T(0x1000, 2), root=0)),
            ("send", lambda: COMM.send(T(0x1000, 4), peer=2)),
            ("recv", lambda: COMM.recv(T(0x1000, 4), peer=0, stream=0)),
            ("an empty tensor", lambda: COMM.all_reduce(T(0x1000, 0))),
        )
        for label, call in cases:
            got = self.same(label, call, made)
            self.assertIs(got[0], type(None), got[1])
            self.assertEqual(len(got[2]), 0 if label == "an empty tensor" else 1, label)  # 0 elements: no NCCL
        hn._lib.calls.bind("extension")
        FAKE_LIB.fake_nccl_clear()
        before = self.ext.torch_counts()[0]
        with hn.group():  # a group of a send and a receive
            COMM.send(T(0x1000, 4), peer=2)
            COMM.recv(T(0x2000, 4), peer=0)
        self.assertEqual([(c.fn.decode(), c.depth) for c in calls()],
                         [("ncclGroupStart", 1), ("ncclSend", 1), ("ncclRecv", 1), ("ncclGroupEnd", 0)])
        self.assertEqual(self.ext.torch_counts()[0], before + 2)

    def test_statuses_and_messages(self):
        """A failure of the library: its status and message, the same either way."""
        for label, call in (("unknown communicator", lambda: hn.Communicator(12345).all_reduce(Tensor(0x1000, 4))),
                            ("peer out of range", lambda: COMM.send(Tensor(0x1000, 4), peer=9)),
                            ("root out of range", lambda: COMM.broadcast(Tensor(0x1000, 4), root=-1))):
            got = self.same(label, call, (1, 0))
            self.assertIs(got[0], hn.HidetNcclError)

    def test_what_reads_what(self):
        """torch_read: the pointer, count, code and stream the fused functions read; the stream
        given, else torch's current stream of the tensor's device (get_device() asked then only)."""
        t = Tensor(0x1000, 6, "bfloat16", device=2)
        self.assertEqual(self.ext.torch_read(t, None), (0x1000, 6, hn.DTYPES["bfloat16"], self.S))
        self.assertEqual(t.asked, {"is_contiguous": 1, "get_device": 1, "data_ptr": 1, "numel": 1})
        t = Tensor(0x1000, 6)
        self.assertEqual(self.ext.torch_read(t, 0x77), (0x1000, 6, hn.DTYPES["float32"], 0x77))
        self.assertNotIn("get_device", t.asked)
        for stream in (-1, 2 ** 64, "0", types.SimpleNamespace(cuda_stream=0)):
            self.assertEqual(self.ext.torch_read(t, stream), -1)
        self.assertEqual(self.ext.torch_read(CudaArray(0x1000, (4,), "<f4"), None), -1)
        t = Tensor(0x1000, 6)
        COMM.all_reduce(t)  # fused: each of torch's calls once
        self.assertEqual(t.asked, {"is_contiguous": 1, "get_device": 1, "data_ptr": 1, "numel": 1})

    def test_stream_asked_as_the_package_asks(self):
        """The stream through _arrays' choice of the moment (raw or public, decided at the first
        call torch answers), asked of the tensor's device."""
        for label, raw, public, public_calls in (("raw agrees", lambda d: 0x5150 + d, lambda d: 0x5150 + d, 1),
                                                 ("no raw", None, lambda d: 0x5150 + d, 3)):
            with self.subTest(label), torch_stand_in(raw=raw, public=public) as torch:
                got = [self.ext.torch_read(Tensor(0x1000, 4, device=d), None)[3] for d in (0, 2, 2)]
                self.assertEqual(got, [0x5150, 0x5152, 0x5152])
                self.assertEqual(len(torch.public_asked), public_calls)

    def test_declined(self):
        """Every case out of the ordinary is declined and goes the general path: refused there in
        its words, or taken (an __index__ integer, a Stream object, an Op, a CUDA array)."""
        T, declined = Tensor, (0, 1)

        class Odd(Tensor):
            """Answers that are not what torch gives: set per instance."""
        odd = {
            "is_cuda 1": dict(is_cuda=1),
            "data_ptr an __index__": dict(data_ptr=lambda: Index(0x1000)),
            "data_ptr negative": dict(data_ptr=lambda: -4096),
            "data_ptr a float": dict(data_ptr=lambda: 4096.0),
            "numel 2**64": dict(numel=lambda: 2 ** 64),
            "numel -1": dict(numel=lambda: -1),
            "numel a bool": dict(numel=lambda: True),
            "is_contiguous 1": dict(is_contiguous=lambda: 1),
        }

        def odd_tensor(**attrs):
            t = Odd(0x1000, 4)
            t.__dict__.update(attrs)
            return t
        COMM.all_reduce(Odd(0x1000, 4))  # the class taken in
        with COMM.premul_sum("float32", 0.5) as half:
            cases = [
                ("a CUDA array", lambda: COMM.all_reduce(CudaArray(0x1000, (4,), "<f4"))),
                ("not an array", lambda: COMM.all_reduce([1, 2])),
                ("on the CPU", lambda: COMM.all_reduce(T(0x1000, 4, cuda=False))),
                ("not contiguous", lambda: COMM.all_reduce(T(0x1000, 4, contiguous=False))),
                ("out not contiguous", lambda: COMM.all_reduce(T(0x1000, 4), out=T(0x2000, 4, contiguous=False))),
                ("complex32", lambda: COMM.all_reduce(T(0x1000, 4, "complex32"))),
                ("qint8", lambda: COMM.broadcast(T(0x1000, 4, "qint8"))),
                ("out of another dtype", lambda: COMM.all_reduce(T(0x1000, 4), out=T(0x2000, 4, "bfloat16"))),
                ("out of another count", lambda: COMM.reduce(T(0x1000, 4), out=T(0x2000, 5))),
                ("out a CUDA array", lambda: COMM.all_reduce(T(0x1000, 4), out=CudaArray(0x2000, (4,), "<f4"))),
                ("all_gather out short", lambda: COMM.all_gather(T(0x1000, 2), out=T(0x2000, 7))),
                ("all_gather out None", lambda: COMM.all_gather(T(0x1000, 2), out=None)),
                ("reduce_scatter in short", lambda: COMM.reduce_scatter(T(0x2000, 9), out=T(0x1000, 2))),
                ("all_to_all not whole blocks", lambda: COMM.all_to_all(T(0x1000, 6), out=T(0x2000, 6))),
                ("all_to_all out None", lambda: COMM.all_to_all(T(0x1000, 8), out=None)),
                ("a Stream object", lambda: COMM.all_reduce(T(0x1000, 4), stream=types.SimpleNamespace(
                    cuda_stream=0x77))),
                ("stream -1", lambda: COMM.all_reduce(T(0x1000, 4), stream=-1)),
                ("stream True", lambda: COMM.send(T(0x1000, 4), peer=0, stream=True)),
                ("stream a str", lambda: COMM.recv(T(0x1000, 4), peer=0, stream="0")),
                ("op an Op", lambda: COMM.all_reduce(T(0x1000, 4), op=half)),
                ("op unknown", lambda: COMM.all_reduce(T(0x1000, 4), op="mean")),
                ("op 1.5", lambda: COMM.reduce(T(0x1000, 4), op=1.5)),
                ("op 2**40", lambda: COMM.reduce_scatter(T(0x2000, 8), out=T(0x1000, 2), op=2 ** 40)),
                ("op an __index__", lambda: COMM.all_reduce(T(0x1000, 4), op=Index(2))),
                ("root 2**32 + 2", lambda: COMM.broadcast(T(0x1000, 4), root=2 ** 32 + 2)),
                ("root True", lambda: COMM.gather(T(0x1000, 2), out=T(0x2000, 8), root=True)),
                ("root an __index__", lambda: COMM.scatter(T(0x2000, 8), out=T(0x1000, 2), root=Index(1))),
                ("peer 2**31", lambda: COMM.send(T(0x1000, 4), peer=2 ** 31)),
                ("peer None", lambda: COMM.recv(T(0x1000, 4), peer=None)),
                ("comm_id 2**40", lambda: hn.Communicator.all_reduce(types.SimpleNamespace(id=2 ** 40),
                                                                     T(0x1000, 4))),
                ("the size not given", lambda: hn.Communicator(12345).all_gather(T(0x1000, 2), out=T(0x2000, 8))),
            ] + [("odd: " + k, lambda a=a: COMM.all_reduce(odd_tensor(**a))) for k, a in odd.items()]
            for label, call in cases:
                self.same(label, call, declined)

    def test_taken_in_then_fused(self):
        """A class or a dtype seen the first time: declined, the general path takes it in, and
        the next call is fused; a refused dtype is declined every time."""
        class Fresh(Tensor):
            pass
        hn._arrays._torch_codes.pop(TORCH_DTYPES["bfloat16"], None)
        self.same("a new class", lambda: COMM.all_reduce(Fresh(0x1000, 4)), (0, 1))
        self.same("then", lambda: COMM.all_reduce(Fresh(0x1000, 4)), (1, 0))
        hn._arrays._torch_codes.pop(TORCH_DTYPES["bfloat16"], None)
        self.same("a new dtype", lambda: COMM.all_reduce(Tensor(0x1000, 4, "bfloat16")), (0, 1))
        self.same("then", lambda: COMM.all_reduce(Tensor(0x1000, 4, "bfloat16")), (1, 0))
        for _ in range(2):
            self.same("refused", lambda: COMM.all_reduce(Tensor(0x1000, 4, "complex32")), (0, 1))

    def test_torch_raising(self):
        """torch's own exception goes out as it is, each of its calls made once (no second try
        by the general path); the same exception the general path gives."""
        class Broken(Tensor):
            def numel(self):
                self._ask("numel", 0)
                raise RuntimeError("torch says no")
        COMM.all_reduce(Tensor(0x1000, 4))
        hn._arrays._tensor_classes.add(Broken)
        for fused in (True, False):
            t = Broken(0x1000, 4)
            got = self.outcome(lambda: COMM.all_reduce(t), fused)
            self.assertEqual(got[:3], (RuntimeError, "torch says no", []))
            self.assertEqual(got[3], (0, 0))
            self.assertEqual(t.asked["numel"], 1)
        public = failing_once()
        with torch_stand_in(raw=lambda d: 0x5150, public=public) as torch:
            with self.assertRaisesRegex(RuntimeError, "initialization error"):
                COMM.all_reduce(Tensor(0x1000, 4))
            self.assertEqual(self.ext.torch_read(Tensor(0x1000, 4), None)[3], 0x5150)
            self.assertEqual(self.ext.torch_read(Tensor(0x1000, 4), None)[3], 0x5150)
            self.assertEqual(len(torch.public_asked), 2)

    def test_arguments(self):
        for name in hn._lib.TORCH_CALLS:
            with self.subTest(name), self.assertRaisesRegex(TypeError, name + r"\(\) takes \d arguments"):
                getattr(self.ext, name)(COMM.id)
        with self.assertRaises(TypeError):
            self.ext.bind_torch(set(), {}, {})
        self.assertEqual(calls(), [])

    def test_no_reference_kept(self):
        """Every object a call touches has as many references after 2000 calls as before (fused,
        declined, torch raising), and memory does not grow."""
        import tracemalloc

        class Broken(Tensor):
            def numel(self):
                raise RuntimeError("torch says no")
        hn._arrays._tensor_classes.add(Broken)
        t, out, big, part = Tensor(0x1000, 1000), Tensor(0x2000, 1000), Tensor(0x3000, 4000), Tensor(0x4000, 1000)
        odd, cpu, broken = Tensor(0x1000, 1000, "qint8"), Tensor(0x1000, 1000, cuda=False), Broken(0x1000, 1000)
        stream, op = 0x77 + 2 ** 40, "max"
        watched = [t, out, big, part, odd, cpu, broken, t.ptr, t.count, t.index, t.dtype, out.ptr, big.count, odd.dtype,
                   stream, op, self.S, Tensor, Broken, hn._arrays._tensor_classes, hn._arrays._torch_codes,
                   hn._arrays._torch_stream, hn._arrays.OPS, vars(hn._arrays)]
        ext, cid = self.ext, COMM.id

        def loop(n):
            for _ in range(n):
                ext.torch_all_reduce(cid, t, None, "sum", None)
                ext.torch_all_reduce(cid, t, out, op, stream)
                ext.torch_all_gather(cid, part, big, None)
                ext.torch_reduce_scatter(cid, big, part, op, None)
                ext.torch_all_reduce(cid, t, big, "sum", None)  # declined: out's count
                ext.torch_all_reduce(cid, odd, None, "sum", None)  # declined: the dtype
                ext.torch_all_reduce(cid, cpu, None, "sum", None)  # declined: the CPU
                ext.torch_read(t, None)
                try:
                    ext.torch_all_reduce(cid, broken, None, "sum", None)
                except RuntimeError:
                    pass
        loop(10)
        refs = [sys.getrefcount(x) for x in watched]
        tracemalloc.start()
        loop(200)
        first = tracemalloc.get_traced_memory()[0]
        loop(2000)
        grown = tracemalloc.get_traced_memory()[0] - first
        tracemalloc.stop()
        self.assertEqual([sys.getrefcount(x) for x in watched], refs)
        self.assertLess(grown, 16384)  # a reference lost per call would be 2000 x 9 objects


if __name__ == "__main__":
    hn._lib.calls.bind(PATH)  # "extension" fails here when the module is missing
    FAKE_LIB = ctypes.CDLL(FAKE)
    FAKE_LIB.fake_nccl_log.restype = ctypes.POINTER(FakeCall)
    FAKE_COMM = FakeComm(4, 1)
    COMM = hn.adopt(ctypes.addressof(FAKE_COMM))
    if COMM.size != 4 or COMM.rank != 1:
        raise SystemExit("the stand-in communicator is not rank 1 of 4")
    unittest.main(verbosity=2)
