/*
 * hidet_nccl._calls: the Python package's collectives called without ctypes (issue 37).
 *
 * A CPython extension on the stable ABI (Py_LIMITED_API 3.10: one binary for CPython 3.10 and
 * later) whose functions take the C arguments of a collective as Python ints, check them, and
 * call the library's function of the same name, returning its status as an int: what the
 * ctypes function of that name does (bindings/python/hidet_nccl/_lib.py), for a fraction of its
 * cost. It has no link dependency on libhidet_nccl.so: _lib.py loads the library with ctypes as
 * always and hands bind() the address of each function in that very copy, so both paths call
 * one library (one registry).
 *
 * Each argument is checked as the package's _check.py checks one, in the same words: an int
 * (ints and what __index__ makes one; a bool is refused) that the C type holds, and None for a
 * NULL pointer as ctypes takes it; anything else raises TypeError or OverflowError naming the
 * argument. Nothing is wrapped, cut or rounded. The GIL is released around each C call, as
 * ctypes releases it (a collective can wait: group_end for communicators to be ready, NCCL's
 * first call on a communicator for its peers).
 *
 * For torch tensors the collectives go further (torch_all_reduce and the others): the
 * Communicator method's whole call, the tensors read here through torch's methods as
 * hidet_nccl/_arrays.py reads them, and -1 for anything out of the ordinary, which the method
 * then takes through its general path (that says why it refuses what it refuses).
 *
 * The C functions' types come from include/hidet_nccl/hidet_nccl.h and are checked against it
 * at compile time (SAME_TYPE): a header that changes a collective fails this build.
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "hidet_nccl/hidet_nccl.h"

/* What bind() and _lib.py agree on: the functions below and their arguments. _lib.py refuses
 * an extension of another API version (and calls through ctypes). */
#define CALLS_API 2

/* The C functions, their types as the header declares them. */
typedef hidet_nccl_status_t group_fn(void);
typedef hidet_nccl_status_t all_reduce_fn(int, const void *, void *, size_t, hidet_nccl_dtype_t, hidet_nccl_op_t,
                                          cudaStream_t);
typedef hidet_nccl_status_t rooted_fn(int, const void *, void *, size_t, hidet_nccl_dtype_t, int, cudaStream_t);
typedef hidet_nccl_status_t reduce_fn(int, const void *, void *, size_t, hidet_nccl_dtype_t, hidet_nccl_op_t, int,
                                      cudaStream_t);
typedef hidet_nccl_status_t move_fn(int, const void *, void *, size_t, hidet_nccl_dtype_t, cudaStream_t);
typedef hidet_nccl_status_t send_fn(int, const void *, size_t, hidet_nccl_dtype_t, int, cudaStream_t);
typedef hidet_nccl_status_t recv_fn(int, void *, size_t, hidet_nccl_dtype_t, int, cudaStream_t);
typedef hidet_nccl_status_t barrier_fn(int, cudaStream_t);
typedef hidet_nccl_status_t comm_size_fn(int, int *);

/* The header's declaration of fn has type `type` (the controlling expression of _Generic is not
 * evaluated: no reference to fn is made, so nothing links against the library). */
#define SAME_TYPE(fn, type) \
    _Static_assert(_Generic(&fn, type *: 1, default: 0), #fn " is not " #type ": include/hidet_nccl changed it")
SAME_TYPE(hidet_nccl_group_start, group_fn);
SAME_TYPE(hidet_nccl_group_end, group_fn);
SAME_TYPE(hidet_nccl_all_reduce, all_reduce_fn);
SAME_TYPE(hidet_nccl_broadcast, rooted_fn);
SAME_TYPE(hidet_nccl_reduce, reduce_fn);
SAME_TYPE(hidet_nccl_all_gather, move_fn);
SAME_TYPE(hidet_nccl_reduce_scatter, all_reduce_fn);
SAME_TYPE(hidet_nccl_all_to_all, move_fn);
SAME_TYPE(hidet_nccl_gather, rooted_fn);
SAME_TYPE(hidet_nccl_scatter, rooted_fn);
SAME_TYPE(hidet_nccl_send, send_fn);
SAME_TYPE(hidet_nccl_recv, recv_fn);
SAME_TYPE(hidet_nccl_barrier, barrier_fn);
SAME_TYPE(hidet_nccl_comm_size, comm_size_fn);

/* Each function: its C name (what bind() is given its address by, and the Python name), the
 * kind of each argument (i: a C int, enums included; s: size_t; p: a pointer, None for NULL)
 * and the argument names the errors use (the header's). */
enum {
    GROUP_START, GROUP_END, ALL_REDUCE, BROADCAST, REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL, GATHER, SCATTER,
    SEND, RECV, BARRIER, NUM_CALLS
};
#define MAX_ARGS 8
typedef struct {
    const char *name;
    const char *kinds;
    const char *args[MAX_ARGS];
} signature_t;
static const signature_t signatures[NUM_CALLS] = {
    [GROUP_START] = {"hidet_nccl_group_start", "", {0}},
    [GROUP_END] = {"hidet_nccl_group_end", "", {0}},
    [ALL_REDUCE] = {"hidet_nccl_all_reduce", "ippsiip", {"comm_id", "sendbuff", "recvbuff", "count", "dtype", "op",
                                                         "stream"}},
    [BROADCAST] = {"hidet_nccl_broadcast", "ippsiip", {"comm_id", "sendbuff", "recvbuff", "count", "dtype", "root",
                                                       "stream"}},
    [REDUCE] = {"hidet_nccl_reduce", "ippsiiip", {"comm_id", "sendbuff", "recvbuff", "count", "dtype", "op", "root",
                                                  "stream"}},
    [ALL_GATHER] = {"hidet_nccl_all_gather", "ippsip", {"comm_id", "sendbuff", "recvbuff", "sendcount", "dtype",
                                                        "stream"}},
    [REDUCE_SCATTER] = {"hidet_nccl_reduce_scatter", "ippsiip", {"comm_id", "sendbuff", "recvbuff", "recvcount",
                                                                 "dtype", "op", "stream"}},
    [ALL_TO_ALL] = {"hidet_nccl_all_to_all", "ippsip", {"comm_id", "sendbuff", "recvbuff", "count", "dtype",
                                                        "stream"}},
    [GATHER] = {"hidet_nccl_gather", "ippsiip", {"comm_id", "sendbuff", "recvbuff", "count", "dtype", "root",
                                                 "stream"}},
    [SCATTER] = {"hidet_nccl_scatter", "ippsiip", {"comm_id", "sendbuff", "recvbuff", "count", "dtype", "root",
                                                   "stream"}},
    [SEND] = {"hidet_nccl_send", "ipsiip", {"comm_id", "sendbuff", "count", "dtype", "peer", "stream"}},
    [RECV] = {"hidet_nccl_recv", "ipsiip", {"comm_id", "recvbuff", "count", "dtype", "peer", "stream"}},
    [BARRIER] = {"hidet_nccl_barrier", "ip", {"comm_id", "stream"}},
};

/* The addresses bind() was given, in the library _lib.py loaded; 0 before. */
static uintptr_t bound[NUM_CALLS];
/* hidet_nccl_comm_size, which all_gather, reduce_scatter, all_to_all, gather and scatter ask
 * each call (comm_size() below: not of the table, as it returns the size too). */
static const char comm_size_name[] = "hidet_nccl_comm_size";
static uintptr_t bound_comm_size;

typedef union {
    int i;
    size_t s;
    void *p;
} arg_t;

/* ------------------------------------------------------------------ checking an argument */

static int not_an_integer(PyObject *value, char kind, const char *name) {
    PyObject *type_name = PyObject_GetAttrString((PyObject *)Py_TYPE(value), "__name__");
    if (type_name == NULL) {
        return -1;
    }
    PyErr_Format(PyExc_TypeError, "hidet_nccl: %s must be an integer%s, not %S %R", name,
                 kind == 'p' ? " or None" : "", type_name, value);
    Py_DECREF(type_name);
    return -1;
}

static int does_not_fit(PyObject *value, char kind, const char *name) {
    if (kind == 'i') {
        PyErr_Format(PyExc_OverflowError, "hidet_nccl: %s %S does not fit a C int (%d .. %d)", name, value, INT_MIN,
                     INT_MAX);
    } else {
        PyErr_Format(PyExc_OverflowError, "hidet_nccl: %s %S does not fit %s (0 .. %llu)", name, value,
                     kind == 's' ? "size_t" : "a pointer", (unsigned long long)SIZE_MAX);
    }
    return -1;
}

/* An exact int as kind into *out, or OverflowError. */
static int from_int(PyObject *value, char kind, const char *name, arg_t *out) {
    if (kind == 'i') {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow == 0 && v >= INT_MIN && v <= INT_MAX) {
            out->i = (int)v;
            return 0;
        }
        return does_not_fit(value, kind, name);
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(value); /* OverflowError when negative or too large */
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) {
            return -1;
        }
        PyErr_Clear();
        return does_not_fit(value, kind, name);
    }
    if (v > SIZE_MAX || v > UINTPTR_MAX) {
        return does_not_fit(value, kind, name);
    }
    if (kind == 's') {
        out->s = (size_t)v;
    } else {
        out->p = (void *)(uintptr_t)v;
    }
    return 0;
}

/* value (argument `name`, of kind 'i', 's' or 'p') into *out; on failure a Python exception. */
static int convert(PyObject *value, char kind, const char *name, arg_t *out) {
    if (PyLong_CheckExact(value)) { /* nearly every call */
        return from_int(value, kind, name, out);
    }
    if (kind == 'p' && value == Py_None) {
        out->p = NULL;
        return 0;
    }
    if (PyBool_Check(value)) { /* True where a rank or a count is meant is a slip, not a 1 */
        return not_an_integer(value, kind, name);
    }
    PyObject *index = PyNumber_Index(value); /* an exact int (Python 3.10 and later) */
    if (index == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) {
            return -1; /* __index__ raised something of its own: it goes out as it is */
        }
        PyErr_Clear();
        return not_an_integer(value, kind, name);
    }
    int rc = from_int(index, kind, name, out);
    Py_DECREF(index);
    return rc;
}

/* The arguments of function `which` into a[], checked; 0, or -1 with a Python exception. */
static int convert_all(int which, PyObject *const *args, Py_ssize_t nargs, arg_t *a) {
    const signature_t *sig = &signatures[which];
    Py_ssize_t want = (Py_ssize_t)strlen(sig->kinds);
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments (%zd given)", sig->name, want, nargs);
        return -1;
    }
    for (Py_ssize_t k = 0; k < nargs; k++) {
        if (convert(args[k], sig->kinds[k], sig->args[k], &a[k]) != 0) {
            return -1;
        }
    }
    if (bound[which] == 0) {
        PyErr_Format(PyExc_RuntimeError, "hidet_nccl._calls: %s is not bound to the library (bind() first)",
                     sig->name);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ the calls */

/* Function `which`, at address f, on the converted arguments a[] (the GIL released by the
 * caller: f was read before, under it). */
static hidet_nccl_status_t invoke(int which, uintptr_t f, const arg_t *a) {
    switch (which) {
    case GROUP_START:
    case GROUP_END:
        return ((group_fn *)f)();
    case ALL_REDUCE:
    case REDUCE_SCATTER:
        return ((all_reduce_fn *)f)(a[0].i, a[1].p, a[2].p, a[3].s, a[4].i, a[5].i, a[6].p);
    case BROADCAST:
    case GATHER:
    case SCATTER:
        return ((rooted_fn *)f)(a[0].i, a[1].p, a[2].p, a[3].s, a[4].i, a[5].i, a[6].p);
    case REDUCE:
        return ((reduce_fn *)f)(a[0].i, a[1].p, a[2].p, a[3].s, a[4].i, a[5].i, a[6].i, a[7].p);
    case ALL_GATHER:
    case ALL_TO_ALL:
        return ((move_fn *)f)(a[0].i, a[1].p, a[2].p, a[3].s, a[4].i, a[5].p);
    case SEND:
        return ((send_fn *)f)(a[0].i, a[1].p, a[2].s, a[3].i, a[4].i, a[5].p);
    case RECV:
        return ((recv_fn *)f)(a[0].i, a[1].p, a[2].s, a[3].i, a[4].i, a[5].p);
    case BARRIER:
        return ((barrier_fn *)f)(a[0].i, a[1].p);
    default:
        return HIDET_NCCL_ERROR_INVALID_USAGE; /* not reached: every function is a case */
    }
}

static PyObject *call(int which, PyObject *const *args, Py_ssize_t nargs) {
    arg_t a[MAX_ARGS];
    if (convert_all(which, args, nargs, a) != 0) {
        return NULL;
    }
    uintptr_t f = bound[which];
    hidet_nccl_status_t status;
    Py_BEGIN_ALLOW_THREADS
    status = invoke(which, f, a);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong((long)status);
}

/* One METH_FASTCALL entry per function: dispatch(WHICH, ...) (call here, fused_call below). */
#define ENTRY_THROUGH(dispatch, fn, WHICH) \
    static PyObject *fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs) { \
        (void)module; \
        return dispatch(WHICH, args, nargs); \
    }
#define ENTRY(fn, WHICH) ENTRY_THROUGH(call, fn, WHICH)
ENTRY(group_start, GROUP_START)
ENTRY(group_end, GROUP_END)
ENTRY(all_reduce, ALL_REDUCE)
ENTRY(broadcast, BROADCAST)
ENTRY(reduce, REDUCE)
ENTRY(all_gather, ALL_GATHER)
ENTRY(reduce_scatter, REDUCE_SCATTER)
ENTRY(all_to_all, ALL_TO_ALL)
ENTRY(gather, GATHER)
ENTRY(scatter, SCATTER)
ENTRY(send, SEND)
ENTRY(recv, RECV)
ENTRY(barrier, BARRIER)

/* repeat(n, name, <the arguments of function name>): the function called n times from C, the
 * GIL released once; the first status that is not success (the calls stop there), else 0. For
 * benchmarks (tools/dev): what the C call costs in this process, to set the package's beside. */
static PyObject *repeat(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    arg_t n, a[MAX_ARGS];
    const char *name = nargs >= 2 ? PyUnicode_AsUTF8AndSize(args[1], NULL) : NULL;
    if (name == NULL) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, "repeat() takes n, a function's name, then its arguments");
        return NULL;
    }
    int which = 0;
    while (which < NUM_CALLS && strcmp(signatures[which].name, name) != 0) {
        which++;
    }
    if (which == NUM_CALLS) {
        PyErr_Format(PyExc_ValueError, "repeat(): no function %R here", args[1]);
        return NULL;
    }
    if (convert(args[0], 's', "n", &n) != 0 || convert_all(which, args + 2, nargs - 2, a) != 0) {
        return NULL;
    }
    uintptr_t f = bound[which];
    hidet_nccl_status_t status = HIDET_NCCL_SUCCESS;
    Py_BEGIN_ALLOW_THREADS
    for (size_t k = 0; k < n.s && status == HIDET_NCCL_SUCCESS; k++) {
        status = invoke(which, f, a);
    }
    Py_END_ALLOW_THREADS
    return PyLong_FromLong((long)status);
}

/* comm_size(comm_id) -> (status, size): hidet_nccl_comm_size with its out-argument returned
 * (size -1 when status is not success). */
static PyObject *comm_size(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    arg_t comm_id;
    if (nargs != 1) {
        PyErr_Format(PyExc_TypeError, "comm_size() takes 1 argument (%zd given)", nargs);
        return NULL;
    }
    if (convert(args[0], 'i', "comm_id", &comm_id) != 0) {
        return NULL;
    }
    if (bound_comm_size == 0) {
        PyErr_SetString(PyExc_RuntimeError, "hidet_nccl._calls: comm_size is not bound to the library (bind() first)");
        return NULL;
    }
    uintptr_t f = bound_comm_size;
    int size = -1;
    hidet_nccl_status_t status;
    Py_BEGIN_ALLOW_THREADS
    status = ((comm_size_fn *)f)(comm_id.i, &size);
    Py_END_ALLOW_THREADS
    PyObject *first = PyLong_FromLong((long)status);
    PyObject *second = first == NULL ? NULL : PyLong_FromLong(status == HIDET_NCCL_SUCCESS ? size : -1);
    PyObject *pair = second == NULL ? NULL : PyTuple_New(2);
    if (pair == NULL) {
        Py_XDECREF(first);
        Py_XDECREF(second);
        return NULL;
    }
    PyTuple_SetItem(pair, 0, first); /* a new tuple's own slots: steals, cannot fail */
    PyTuple_SetItem(pair, 1, second);
    return pair;
}

/* ------------------------------------------------------------------ torch tensors, read here
 *
 * torch_all_reduce(comm_id, tensor, out, op, stream) and the others of `fused` below: the
 * Communicator method of the name with its arguments as given, done here for torch tensors
 * (issue 37: a small collective's cost to a Python program is mostly the reading of its
 * buffers). What _arrays.array does for a tensor of a class it has seen is done here through
 * the C API, in its order (is_cuda, is_contiguous(), dtype and its code, get_device() and
 * torch's current stream only when no stream is given, data_ptr(), numel()), then the checks
 * of the method (out's count and dtype, the op's code, root and peer, the communicator's size
 * where the method asks it), then the C function, the GIL released around it. The status is
 * returned, or DECLINED (-1) for anything else: a class _arrays has not seen as a torch
 * tensor's, a dtype it has no code for yet, a tensor off the GPU or not contiguous, an answer
 * that is not an int in range, an out of another count or dtype, a stream, op, root or peer
 * that is not a plain int in range (or an op name), a size the library does not give. The
 * method then takes the general path, which reads everything again and refuses what it
 * refuses in its own words: nothing is refused here. An exception raised by torch's own calls
 * goes out as it is, where the general path would have raised it too (same calls, same order).
 *
 * What it mirrors is _arrays' own, handed over by bind_torch() (and read as it is each call):
 * its set of tensor classes, its dict of torch dtypes' codes, OPS, and its namespace, whose
 * _torch_stream (the callable torch's stream is asked through) is looked up each call. */
#define DECLINED (-1)

static PyObject *torch_classes; /* _arrays._tensor_classes: a set of classes */
static PyObject *torch_codes;   /* _arrays._torch_codes: torch.dtype -> dtype code */
static PyObject *op_codes;      /* _arrays.OPS: op name -> op code */
static PyObject *arrays_names;  /* _arrays' namespace (its __dict__) */
/* Interned names: torch's attributes and methods, and _arrays' stream callable. */
static PyObject *s_is_cuda, *s_is_contiguous, *s_dtype, *s_get_device, *s_data_ptr, *s_numel, *s_torch_stream;
/* Calls made here, and declined (torch_counts()): what tells a test or a benchmark the path ran. */
static unsigned long long fused_made, fused_declined;

/* An exact int in 0 .. limit into *out: 1, else 0 (no exception left). */
static int plain_unsigned(PyObject *v, unsigned long long limit, unsigned long long *out) {
    if (!PyLong_CheckExact(v)) {
        return 0;
    }
    unsigned long long x = PyLong_AsUnsignedLongLong(v);
    if (x == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (x > limit) {
        return 0;
    }
    *out = x;
    return 1;
}

/* An exact int that a C int holds into *out: 1, else 0 (no exception left). */
static int plain_int(PyObject *v, int *out) {
    if (!PyLong_CheckExact(v)) {
        return 0;
    }
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (x == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (overflow != 0 || x < INT_MIN || x > INT_MAX) {
        return 0;
    }
    *out = (int)x;
    return 1;
}

/* v, a new reference or NULL (torch's exception), as plain_unsigned takes it: 1 into *out, 0
 * declined, -1 the exception; v released. */
static int unsigned_answer(PyObject *v, unsigned long long limit, unsigned long long *out) {
    if (v == NULL) {
        return -1;
    }
    int yes = plain_unsigned(v, limit, out);
    Py_DECREF(v);
    return yes;
}

#define POINTER_MAX (UINTPTR_MAX < SIZE_MAX ? (unsigned long long)UINTPTR_MAX : (unsigned long long)SIZE_MAX)

/* An argument-less method of a: its answer, or NULL with torch's exception. */
static PyObject *ask(PyObject *a, PyObject *name) {
    return PyObject_CallMethodObjArgs(a, name, NULL);
}

typedef struct {
    void *ptr;
    size_t count;
    int code;
} tensor_t;

/* Tensor a as _arrays.array reads it: 1 read into *t, 0 declined, -1 torch's exception. With
 * *stream_known 0, torch's current stream of a's device into *stream (and *stream_known 1). */
static int read_tensor(PyObject *a, tensor_t *t, int *stream_known, void **stream) {
    int seen = PySet_Contains(torch_classes, (PyObject *)Py_TYPE(a));
    if (seen <= 0) {
        if (seen < 0) {
            PyErr_Clear();
        }
        return 0;
    }
    PyObject *v = PyObject_GetAttr(a, s_is_cuda);
    if (v == NULL) {
        return -1;
    }
    int yes = v == Py_True;
    Py_DECREF(v);
    if (!yes) {
        return 0;
    }
    if ((v = ask(a, s_is_contiguous)) == NULL) {
        return -1;
    }
    yes = v == Py_True;
    Py_DECREF(v);
    if (!yes) {
        return 0;
    }
    if ((v = PyObject_GetAttr(a, s_dtype)) == NULL) {
        return -1;
    }
    PyObject *code = PyDict_GetItemWithError(torch_codes, v); /* borrowed; the dict holds it */
    Py_DECREF(v);
    if (code == NULL || !plain_int(code, &t->code)) {
        PyErr_Clear(); /* a dtype without a code yet, or unhashable: the general path says */
        return 0;
    }
    unsigned long long x;
    if (!*stream_known) {
        PyObject *device = ask(a, s_get_device);
        if (device == NULL) {
            return -1;
        }
        PyObject *fn = PyDict_GetItemWithError(arrays_names, s_torch_stream); /* borrowed */
        if (fn == NULL) {
            PyErr_Clear();
            Py_DECREF(device);
            return 0;
        }
        Py_INCREF(fn); /* the first call of _find_torch_stream replaces it in the namespace */
        v = PyObject_CallFunctionObjArgs(fn, device, NULL);
        Py_DECREF(fn);
        Py_DECREF(device);
        if ((yes = unsigned_answer(v, POINTER_MAX, &x)) != 1) {
            return yes;
        }
        *stream = (void *)(uintptr_t)x;
        *stream_known = 1;
    }
    if ((yes = unsigned_answer(ask(a, s_data_ptr), POINTER_MAX, &x)) != 1) {
        return yes;
    }
    t->ptr = (void *)(uintptr_t)x;
    if ((yes = unsigned_answer(ask(a, s_numel), SIZE_MAX, &x)) != 1) {
        return yes;
    }
    t->count = (size_t)x;
    return 1;
}

/* What the second buffer of a call must be, as the method checks it. */
enum {
    NONE,        /* none (send, recv) */
    SAME_INPLACE, /* count and dtype of the first; None: in place (all_reduce, broadcast, reduce) */
    SAME,        /* count and dtype of the first (all_to_all) */
    BLOCKS,      /* size x count of the first's dtype (all_gather out, reduce_scatter tensor) */
    BLOCKS_NULL, /* BLOCKS; None: NULL (gather's out, scatter's tensor, off the root) */
};

/* Each fused function: which C function it calls, its Python arguments' positions (-1: none),
 * and how the buffers stand. `first` is the buffer read first, with the call's stream (the
 * tensor; out for reduce_scatter and scatter, as their methods read them). */
typedef struct {
    const char *name;
    int which;
    int nargs;
    int first, second, op, root, stream;
    int second_is;
    int first_receives; /* the first buffer is the C call's recvbuff (reduce_scatter, scatter) */
} fused_t;
enum {
    F_ALL_REDUCE, F_BROADCAST, F_REDUCE, F_ALL_GATHER, F_REDUCE_SCATTER, F_ALL_TO_ALL, F_GATHER, F_SCATTER, F_SEND,
    F_RECV, NUM_FUSED
};
static const fused_t fused[NUM_FUSED] = {
    /* (comm_id, tensor, out, op, stream) */
    [F_ALL_REDUCE] = {"torch_all_reduce", ALL_REDUCE, 5, 1, 2, 3, -1, 4, SAME_INPLACE, 0},
    /* (comm_id, tensor, root, out, stream) */
    [F_BROADCAST] = {"torch_broadcast", BROADCAST, 5, 1, 3, -1, 2, 4, SAME_INPLACE, 0},
    /* (comm_id, tensor, root, out, op, stream) */
    [F_REDUCE] = {"torch_reduce", REDUCE, 6, 1, 3, 4, 2, 5, SAME_INPLACE, 0},
    /* (comm_id, tensor, out, stream) */
    [F_ALL_GATHER] = {"torch_all_gather", ALL_GATHER, 4, 1, 2, -1, -1, 3, BLOCKS, 0},
    /* (comm_id, tensor, out, op, stream) */
    [F_REDUCE_SCATTER] = {"torch_reduce_scatter", REDUCE_SCATTER, 5, 2, 1, 3, -1, 4, BLOCKS, 1},
    /* (comm_id, tensor, out, stream) */
    [F_ALL_TO_ALL] = {"torch_all_to_all", ALL_TO_ALL, 4, 1, 2, -1, -1, 3, SAME, 0},
    /* (comm_id, tensor, out, root, stream) */
    [F_GATHER] = {"torch_gather", GATHER, 5, 1, 2, -1, 3, 4, BLOCKS_NULL, 0},
    /* (comm_id, tensor, out, root, stream) */
    [F_SCATTER] = {"torch_scatter", SCATTER, 5, 2, 1, -1, 3, 4, BLOCKS_NULL, 1},
    /* (comm_id, tensor, peer, stream) */
    [F_SEND] = {"torch_send", SEND, 4, 1, -1, -1, 2, 3, NONE, 0},
    [F_RECV] = {"torch_recv", RECV, 4, 1, -1, -1, 2, 3, NONE, 0},
};

/* The communicator's size from the library (as Communicator.size asks it), or 0. */
static int comm_size_now(int comm_id) {
    uintptr_t f = bound_comm_size;
    int size = -1;
    hidet_nccl_status_t status;
    if (f == 0) {
        return 0;
    }
    Py_BEGIN_ALLOW_THREADS
    status = ((comm_size_fn *)f)(comm_id, &size);
    Py_END_ALLOW_THREADS
    return status == HIDET_NCCL_SUCCESS && size > 0 ? size : 0;
}

/* fused[k] on args: 1 with the C function's arguments in a[] (invoke()'s layout), 0 declined,
 * -1 torch's exception. */
static int fused_arguments(const fused_t *k, PyObject *const *args, arg_t *a) {
    int comm_id, op = 0, root = 0, stream_known = 0;
    void *stream = NULL;
    tensor_t first, second = {NULL, 0, 0};
    unsigned long long x;
    if (bound[k->which] == 0 || torch_classes == NULL || !plain_int(args[0], &comm_id)) {
        return 0;
    }
    if (args[k->stream] != Py_None) {
        if (!plain_unsigned(args[k->stream], POINTER_MAX, &x)) {
            return 0; /* a Stream object, or a bad handle: the general path */
        }
        stream = (void *)(uintptr_t)x;
        stream_known = 1;
    }
    if (k->op >= 0) { /* a name of OPS or a plain int (an Op: the general path) */
        PyObject *o = args[k->op];
        if (PyUnicode_CheckExact(o)) {
            o = PyDict_GetItemWithError(op_codes, o); /* borrowed */
            if (o == NULL) {
                PyErr_Clear();
                return 0;
            }
        }
        if (!plain_int(o, &op)) {
            return 0;
        }
    }
    if (k->root >= 0 && !plain_int(args[k->root], &root)) {
        return 0;
    }
    int got = read_tensor(args[k->first], &first, &stream_known, &stream);
    if (got <= 0) {
        return got;
    }
    PyObject *s = k->second >= 0 ? args[k->second] : NULL;
    int none = s == Py_None;
    if (k->second_is != NONE && !(none && (k->second_is == SAME_INPLACE || k->second_is == BLOCKS_NULL))) {
        if (none || (got = read_tensor(s, &second, &stream_known, &stream)) <= 0) {
            return none ? 0 : got;
        }
        size_t want = first.count;
        if (k->second_is == BLOCKS || k->second_is == BLOCKS_NULL) {
            int size = comm_size_now(comm_id);
            if (size == 0 || (first.count != 0 && (size_t)size > SIZE_MAX / first.count)) {
                return 0;
            }
            want = first.count * (size_t)size;
        }
        if (second.count != want || second.code != first.code) {
            return 0;
        }
    } else if (k->second_is == SAME_INPLACE) {
        second.ptr = first.ptr; /* None: in place */
    }
    size_t count = first.count;
    if (k->which == ALL_TO_ALL) {
        int size = comm_size_now(comm_id);
        if (size == 0 || count % (size_t)size != 0) {
            return 0;
        }
        count /= (size_t)size;
    }
    /* invoke()'s layout: comm_id, send, recv, count, dtype, then op/root, stream */
    a[0].i = comm_id;
    a[1].p = k->first_receives ? second.ptr : first.ptr;
    a[2].p = k->first_receives ? first.ptr : second.ptr;
    a[3].s = count;
    a[4].i = first.code;
    switch (k->which) {
    case ALL_REDUCE:
    case REDUCE_SCATTER:
    case BROADCAST:
    case GATHER:
    case SCATTER:
        a[5].i = k->op >= 0 ? op : root; /* the op (all_reduce, reduce_scatter), else the root */
        a[6].p = stream;
        break;
    case REDUCE:
        a[5].i = op;
        a[6].i = root;
        a[7].p = stream;
        break;
    case ALL_GATHER:
    case ALL_TO_ALL:
        a[5].p = stream;
        break;
    default: /* SEND, RECV: comm_id, buffer, count, dtype, peer, stream */
        a[1].p = first.ptr;
        a[2].s = count;
        a[3].i = first.code;
        a[4].i = root;
        a[5].p = stream;
        break;
    }
    return 1;
}

static PyObject *fused_call(int which, PyObject *const *args, Py_ssize_t nargs) {
    const fused_t *k = &fused[which];
    arg_t a[MAX_ARGS];
    if (nargs != k->nargs) {
        PyErr_Format(PyExc_TypeError, "%s() takes %d arguments (%zd given)", k->name, k->nargs, nargs);
        return NULL;
    }
    int got = fused_arguments(k, args, a);
    if (got <= 0) {
        if (got < 0) {
            return NULL;
        }
        fused_declined++;
        return PyLong_FromLong(DECLINED);
    }
    fused_made++;
    uintptr_t f = bound[k->which];
    hidet_nccl_status_t status;
    Py_BEGIN_ALLOW_THREADS
    status = invoke(k->which, f, a);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong((long)status);
}

#define FUSED_ENTRY(fn, WHICH) ENTRY_THROUGH(fused_call, fn, WHICH)
FUSED_ENTRY(torch_all_reduce, F_ALL_REDUCE)
FUSED_ENTRY(torch_broadcast, F_BROADCAST)
FUSED_ENTRY(torch_reduce, F_REDUCE)
FUSED_ENTRY(torch_all_gather, F_ALL_GATHER)
FUSED_ENTRY(torch_reduce_scatter, F_REDUCE_SCATTER)
FUSED_ENTRY(torch_all_to_all, F_ALL_TO_ALL)
FUSED_ENTRY(torch_gather, F_GATHER)
FUSED_ENTRY(torch_scatter, F_SCATTER)
FUSED_ENTRY(torch_send, F_SEND)
FUSED_ENTRY(torch_recv, F_RECV)

/* torch_read(tensor, stream) -> (pointer, count, dtype code, stream), or -1 declined: what the
 * functions above read of a tensor (the tests' window on it; stream None: torch's current). */
static PyObject *torch_read(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    tensor_t t;
    int stream_known = 0;
    void *stream = NULL;
    unsigned long long x;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "torch_read() takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    if (args[1] != Py_None) {
        if (!plain_unsigned(args[1], POINTER_MAX, &x)) {
            return PyLong_FromLong(DECLINED);
        }
        stream = (void *)(uintptr_t)x;
        stream_known = 1;
    }
    int got = torch_classes == NULL ? 0 : read_tensor(args[0], &t, &stream_known, &stream);
    if (got <= 0) {
        return got < 0 ? NULL : PyLong_FromLong(DECLINED);
    }
    return Py_BuildValue("(KKiK)", (unsigned long long)(uintptr_t)t.ptr, (unsigned long long)t.count, t.code,
                         (unsigned long long)(uintptr_t)stream);
}

/* torch_counts() -> (calls made by the functions above, calls they declined). */
static PyObject *torch_counts(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    (void)args;
    if (nargs != 0) {
        PyErr_SetString(PyExc_TypeError, "torch_counts() takes no arguments");
        return NULL;
    }
    return Py_BuildValue("(KK)", fused_made, fused_declined);
}

/* bind_torch(tensor_classes, torch_codes, ops, arrays_namespace): _arrays' set of torch tensor
 * classes, its dict of torch dtypes' codes, OPS and its namespace (vars(_arrays)), kept and
 * read as they are at each call. */
static PyObject *bind_torch(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 4 || !PyAnySet_Check(args[0]) || !PyDict_Check(args[1]) || !PyDict_Check(args[2]) ||
        !PyDict_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "bind_torch() takes a set of classes, a dict of dtype codes, a dict of op "
                                         "codes and _arrays' namespace (a dict)");
        return NULL;
    }
    PyObject **slots[4] = {&torch_classes, &torch_codes, &op_codes, &arrays_names};
    for (int k = 0; k < 4; k++) {
        PyObject *old = *slots[k];
        Py_INCREF(args[k]);
        *slots[k] = args[k];
        Py_XDECREF(old);
    }
    Py_RETURN_NONE;
}

/* The address of `name` in addresses (a dict), checked, into *out; 0, or -1 with ValueError (no
 * address, or None) or the error of a bad one. */
static int address_of(PyObject *addresses, const char *name, uintptr_t *out) {
    PyObject *address = PyDict_GetItemString(addresses, name); /* borrowed */
    arg_t a;
    if (address == NULL || address == Py_None) {
        PyErr_Format(PyExc_ValueError, "hidet_nccl._calls.bind: no address for %s", name);
        return -1;
    }
    if (convert(address, 'p', name, &a) != 0) {
        return -1;
    }
    *out = (uintptr_t)a.p;
    return 0;
}

/* bind(addresses): addresses maps the C name of each function of FUNCTIONS, and
 * hidet_nccl_comm_size, to its address (an int) in the loaded library. Every one must be
 * there and not 0, else nothing is bound (ValueError). */
static PyObject *bind(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 1 || !PyDict_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "bind() takes one dict: C function name -> address");
        return NULL;
    }
    uintptr_t got[NUM_CALLS], got_comm_size;
    for (int k = 0; k < NUM_CALLS; k++) {
        if (address_of(args[0], signatures[k].name, &got[k]) != 0) {
            return NULL;
        }
    }
    if (address_of(args[0], comm_size_name, &got_comm_size) != 0) {
        return NULL;
    }
    memcpy(bound, got, sizeof bound);
    bound_comm_size = got_comm_size;
    Py_RETURN_NONE;
}

#define FASTCALL(fn) (PyCFunction)(void (*)(void))(fn), METH_FASTCALL
static PyMethodDef methods[] = {
    {"hidet_nccl_group_start", FASTCALL(group_start), "hidet_nccl_group_start() -> status"},
    {"hidet_nccl_group_end", FASTCALL(group_end), "hidet_nccl_group_end() -> status"},
    {"hidet_nccl_all_reduce", FASTCALL(all_reduce),
     "hidet_nccl_all_reduce(comm_id, sendbuff, recvbuff, count, dtype, op, stream) -> status"},
    {"hidet_nccl_broadcast", FASTCALL(broadcast),
     "hidet_nccl_broadcast(comm_id, sendbuff, recvbuff, count, dtype, root, stream) -> status"},
    {"hidet_nccl_reduce", FASTCALL(reduce),
     "hidet_nccl_reduce(comm_id, sendbuff, recvbuff, count, dtype, op, root, stream) -> status"},
    {"hidet_nccl_all_gather", FASTCALL(all_gather),
     "hidet_nccl_all_gather(comm_id, sendbuff, recvbuff, sendcount, dtype, stream) -> status"},
    {"hidet_nccl_reduce_scatter", FASTCALL(reduce_scatter),
     "hidet_nccl_reduce_scatter(comm_id, sendbuff, recvbuff, recvcount, dtype, op, stream) -> status"},
    {"hidet_nccl_all_to_all", FASTCALL(all_to_all),
     "hidet_nccl_all_to_all(comm_id, sendbuff, recvbuff, count, dtype, stream) -> status"},
    {"hidet_nccl_gather", FASTCALL(gather),
     "hidet_nccl_gather(comm_id, sendbuff, recvbuff, count, dtype, root, stream) -> status"},
    {"hidet_nccl_scatter", FASTCALL(scatter),
     "hidet_nccl_scatter(comm_id, sendbuff, recvbuff, count, dtype, root, stream) -> status"},
    {"hidet_nccl_send", FASTCALL(send), "hidet_nccl_send(comm_id, sendbuff, count, dtype, peer, stream) -> status"},
    {"hidet_nccl_recv", FASTCALL(recv), "hidet_nccl_recv(comm_id, recvbuff, count, dtype, peer, stream) -> status"},
    {"hidet_nccl_barrier", FASTCALL(barrier), "hidet_nccl_barrier(comm_id, stream) -> status"},
    {"comm_size", FASTCALL(comm_size), "comm_size(comm_id) -> (status, size): hidet_nccl_comm_size"},
    {"repeat", FASTCALL(repeat), "repeat(n, name, *arguments) -> status: name's function n times (benchmarks)"},
    {"torch_all_reduce", FASTCALL(torch_all_reduce),
     "torch_all_reduce(comm_id, tensor, out, op, stream) -> status, or -1: Communicator.all_reduce on torch tensors"},
    {"torch_broadcast", FASTCALL(torch_broadcast),
     "torch_broadcast(comm_id, tensor, root, out, stream) -> status, or -1: Communicator.broadcast on torch tensors"},
    {"torch_reduce", FASTCALL(torch_reduce),
     "torch_reduce(comm_id, tensor, root, out, op, stream) -> status, or -1: Communicator.reduce on torch tensors"},
    {"torch_all_gather", FASTCALL(torch_all_gather),
     "torch_all_gather(comm_id, tensor, out, stream) -> status, or -1: Communicator.all_gather on torch tensors"},
    {"torch_reduce_scatter", FASTCALL(torch_reduce_scatter),
     "torch_reduce_scatter(comm_id, tensor, out, op, stream) -> status, or -1: Communicator.reduce_scatter"},
    {"torch_all_to_all", FASTCALL(torch_all_to_all),
     "torch_all_to_all(comm_id, tensor, out, stream) -> status, or -1: Communicator.all_to_all on torch tensors"},
    {"torch_gather", FASTCALL(torch_gather),
     "torch_gather(comm_id, tensor, out, root, stream) -> status, or -1: Communicator.gather on torch tensors"},
    {"torch_scatter", FASTCALL(torch_scatter),
     "torch_scatter(comm_id, tensor, out, root, stream) -> status, or -1: Communicator.scatter on torch tensors"},
    {"torch_send", FASTCALL(torch_send),
     "torch_send(comm_id, tensor, peer, stream) -> status, or -1: Communicator.send on a torch tensor"},
    {"torch_recv", FASTCALL(torch_recv),
     "torch_recv(comm_id, tensor, peer, stream) -> status, or -1: Communicator.recv on a torch tensor"},
    {"torch_read", FASTCALL(torch_read),
     "torch_read(tensor, stream) -> (pointer, count, dtype code, stream), or -1: what the torch_ functions read"},
    {"torch_counts", FASTCALL(torch_counts), "torch_counts() -> (torch_ calls made, torch_ calls declined)"},
    {"bind_torch", FASTCALL(bind_torch),
     "bind_torch(tensor_classes, torch_codes, ops, arrays_namespace): what the torch_ functions mirror of _arrays"},
    {"bind", FASTCALL(bind),
     "bind({C function name: address}): the library the functions call (FUNCTIONS and hidet_nccl_comm_size)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "hidet_nccl._calls",
    "The package's collectives called without ctypes: bindings/python/calls.c.",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__calls(void) {
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    struct {
        PyObject **slot;
        const char *text;
    } interned[] = {{&s_is_cuda, "is_cuda"}, {&s_is_contiguous, "is_contiguous"}, {&s_dtype, "dtype"},
                    {&s_get_device, "get_device"}, {&s_data_ptr, "data_ptr"}, {&s_numel, "numel"},
                    {&s_torch_stream, "_torch_stream"}};
    for (size_t k = 0; k < sizeof interned / sizeof interned[0]; k++) {
        if (*interned[k].slot == NULL && (*interned[k].slot = PyUnicode_InternFromString(interned[k].text)) == NULL) {
            Py_DECREF(module);
            return NULL;
        }
    }
    PyObject *names = PyTuple_New(NUM_CALLS);
    if (names == NULL) {
        Py_DECREF(module);
        return NULL;
    }
    for (int k = 0; k < NUM_CALLS; k++) {
        PyObject *name = PyUnicode_FromString(signatures[k].name);
        if (name == NULL || PyTuple_SetItem(names, k, name) != 0) { /* SetItem steals name */
            Py_DECREF(names);
            Py_DECREF(module);
            return NULL;
        }
    }
    if (PyModule_AddObject(module, "FUNCTIONS", names) != 0) { /* steals names on success */
        Py_DECREF(names);
        Py_DECREF(module);
        return NULL;
    }
    if (PyModule_AddIntConstant(module, "API", CALLS_API) != 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
