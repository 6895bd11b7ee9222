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
#define CALLS_API 1

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

/* One METH_FASTCALL entry per function: call(WHICH, ...). */
#define ENTRY(fn, WHICH) \
    static PyObject *fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs) { \
        (void)module; \
        return call(WHICH, args, nargs); \
    }
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
