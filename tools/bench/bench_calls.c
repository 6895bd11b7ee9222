/* hidet-nccl-bench's collectives: what the table knows of each (nccl-tests' sizes and busbw
 * factors, in src/<collective>.cu there), one call through the library or straight to the
 * NCCL the library loaded, and their timing. */
#include "tools/bench/bench.h"

const coll_info_t bench_colls[COLL_COUNT] = {
    [COLL_ALL_REDUCE] = {.name = "all_reduce", .lib_call = "hidet_nccl_all_reduce", .raw_call = "ncclAllReduce",
                         .reduces = 1, .in_place = IP_SAME, .factor_text = "2(n-1)/n"},
    [COLL_BROADCAST] = {.name = "broadcast", .lib_call = "hidet_nccl_broadcast", .raw_call = "ncclBroadcast",
                        .rooted = 1, .in_place = IP_SAME, .factor_text = "1"},
    [COLL_REDUCE] = {.name = "reduce", .lib_call = "hidet_nccl_reduce", .raw_call = "ncclReduce", .reduces = 1,
                     .rooted = 1, .result_on_root = 1, .in_place = IP_SAME, .factor_text = "1"},
    [COLL_ALL_GATHER] = {.name = "all_gather", .lib_call = "hidet_nccl_all_gather", .raw_call = "ncclAllGather",
                         .blocks_recv = 1, .in_place = IP_SEND_IN_RECV, .factor_text = "(n-1)/n"},
    [COLL_REDUCE_SCATTER] = {.name = "reduce_scatter", .lib_call = "hidet_nccl_reduce_scatter",
                             .raw_call = "ncclReduceScatter", .reduces = 1, .blocks_send = 1,
                             .in_place = IP_RECV_IN_SEND, .factor_text = "(n-1)/n"},
    [COLL_ALL_TO_ALL] = {.name = "all_to_all", .lib_call = "hidet_nccl_all_to_all", .raw_call = "ncclAlltoAll",
                         .blocks_send = 1, .blocks_recv = 1, .in_place = IP_NONE, .factor_text = "(n-1)/n"},
    [COLL_GATHER] = {.name = "gather", .lib_call = "hidet_nccl_gather", .raw_call = "ncclGather", .rooted = 1,
                     .blocks_recv = 1, .result_on_root = 1, .in_place = IP_SEND_IN_RECV, .factor_text = "(n-1)/n"},
    [COLL_SCATTER] = {.name = "scatter", .lib_call = "hidet_nccl_scatter", .raw_call = "ncclScatter", .rooted = 1,
                      .blocks_send = 1, .in_place = IP_RECV_IN_SEND, .factor_text = "(n-1)/n"},
    [COLL_SEND_RECV] = {.name = "send_recv", .lib_call = "hidet_nccl_send + hidet_nccl_recv (grouped)",
                        .raw_call = "ncclSend + ncclRecv (grouped)", .in_place = IP_NONE, .factor_text = "1"},
};

/* nccl-tests' <Collective>GetBw: busbw = algbw x this. */
double bench_bus_factor(coll_t coll, int nranks) {
    switch (coll) {
        case COLL_ALL_REDUCE: return 2.0 * (nranks - 1) / nranks;
        case COLL_BROADCAST:
        case COLL_REDUCE:
        case COLL_SEND_RECV: return 1.0;
        default: return (double)(nranks - 1) / nranks;
    }
}

/* As the library moves bytes (hidet_nccl_all_gather and the others): unsigned words of the
 * element's width, two 8-byte words for complex128, bytes for the 16-bit types. */
void bench_movement(hidet_nccl_dtype_t dtype, ncclDataType_t *type, size_t *mult) {
    size_t es = 4;
    hidet_nccl_dtype_size(dtype, &es);
    *type = es == 4 ? ncclUint32 : es >= 8 ? ncclUint64 : ncclUint8;
    *mult = es == 2 ? 2 : es == 16 ? 2 : 1;
}

call_t bench_make_call(const ctx_t *c, coll_t coll, char *send, char *recv, size_t count, int in_place, int root) {
    const coll_info_t *ci = &bench_colls[coll];
    size_t es = 4;
    hidet_nccl_dtype_size(opt.dtype, &es);
    call_t k = {coll, send, recv, count, 0, count * es, ncclUint8, root};
    if (ci->reduces) {
        k.nccl_type = c->red.nccl_dtype;
        k.nccl_count = count * c->red.count_multiplier;
    } else {
        size_t mult;
        bench_movement(opt.dtype, &k.nccl_type, &mult);
        k.nccl_count = count * mult;
    }
    if (in_place) {
        k.send = k.recv = recv;
        if (ci->in_place == IP_SEND_IN_RECV) k.send = recv + (size_t)opt.rank * k.block_bytes;
        if (ci->in_place == IP_RECV_IN_SEND) k.recv = recv + (size_t)opt.rank * k.block_bytes;
    }
    return k;
}

/* nccl-tests' sendrecv through the library: to the next rank, from the previous, in one group. */
static hidet_nccl_status_t lib_send_recv(const ctx_t *c, const call_t *k) {
    int n = opt.nranks, next = (opt.rank + 1) % n, prev = (opt.rank + n - 1) % n;
    hidet_nccl_status_t st = hidet_nccl_group_start();
    if (st != HIDET_NCCL_SUCCESS) return st;
    st = hidet_nccl_send(c->id, k->send, k->count, opt.dtype, next, c->stream);
    if (st == HIDET_NCCL_SUCCESS) st = hidet_nccl_recv(c->id, k->recv, k->count, opt.dtype, prev, c->stream);
    hidet_nccl_status_t end = hidet_nccl_group_end();
    return st != HIDET_NCCL_SUCCESS ? st : end;
}

static void lib_call(const ctx_t *c, const call_t *k) {
    const void *s = k->send;
    void *r = k->recv;
    size_t n = k->count;
    hidet_nccl_dtype_t d = opt.dtype;
    cudaStream_t st = c->stream;
    hidet_nccl_status_t res;
    switch (k->coll) {
        case COLL_ALL_REDUCE: res = hidet_nccl_all_reduce(c->id, s, r, n, d, opt.op, st); break;
        case COLL_BROADCAST: res = hidet_nccl_broadcast(c->id, s, r, n, d, k->root, st); break;
        case COLL_REDUCE: res = hidet_nccl_reduce(c->id, s, r, n, d, opt.op, k->root, st); break;
        case COLL_ALL_GATHER: res = hidet_nccl_all_gather(c->id, s, r, n, d, st); break;
        case COLL_REDUCE_SCATTER: res = hidet_nccl_reduce_scatter(c->id, s, r, n, d, opt.op, st); break;
        case COLL_ALL_TO_ALL: res = hidet_nccl_all_to_all(c->id, s, r, n, d, st); break;
        case COLL_GATHER: res = hidet_nccl_gather(c->id, s, r, n, d, k->root, st); break;
        case COLL_SCATTER: res = hidet_nccl_scatter(c->id, s, r, n, d, k->root, st); break;
        default: res = lib_send_recv(c, k); break;
    }
    if (res != HIDET_NCCL_SUCCESS) DIE("%s: %s", bench_colls[k->coll].lib_call, hidet_nccl_last_error());
}

/* The same through the loaded NCCL's own functions, with the NCCL type and count the library
 * hands NCCL. */
static void raw_call(const ctx_t *c, const call_t *k) {
    const hn_raw_nccl_t *n = c->nccl;
    const void *s = k->send;
    void *r = k->recv;
    size_t cnt = k->nccl_count;
    ncclDataType_t t = k->nccl_type;
    ncclComm_t comm = c->comm;
    cudaStream_t st = c->stream;
    ncclResult_t res;
    switch (k->coll) {
        case COLL_ALL_REDUCE: res = n->AllReduce(s, r, cnt, t, c->red.nccl_op, comm, st); break;
        case COLL_BROADCAST: res = n->Broadcast(s, r, cnt, t, k->root, comm, st); break;
        case COLL_REDUCE: res = n->Reduce(s, r, cnt, t, c->red.nccl_op, k->root, comm, st); break;
        case COLL_ALL_GATHER: res = n->AllGather(s, r, cnt, t, comm, st); break;
        case COLL_REDUCE_SCATTER: res = n->ReduceScatter(s, r, cnt, t, c->red.nccl_op, comm, st); break;
        case COLL_ALL_TO_ALL:
            res = hn_raw_all_to_all(n, c->grouped_p2p, s, r, cnt, t, k->block_bytes, comm, opt.nranks, st);
            break;
        case COLL_GATHER:
        case COLL_SCATTER:
            res = hn_raw_gather_scatter(n, c->grouped_p2p, k->coll == COLL_GATHER, s, r, cnt, t, k->block_bytes,
                                        k->root, comm, opt.rank, opt.nranks, st);
            break;
        default:
            res = hn_raw_send_recv(n, s, r, cnt, t, (opt.rank + 1) % opt.nranks,
                                   (opt.rank + opt.nranks - 1) % opt.nranks, comm, st);
            break;
    }
    while (res == ncclInProgress) { /* a non-blocking communicator still enqueuing: wait, as NCCL asks */
        ncclResult_t async = ncclSuccess;
        n->CommGetAsyncError(comm, &async);
        res = async;
    }
    if (res != ncclSuccess) DIE("raw %s: %s", bench_colls[k->coll].raw_call, n->GetErrorString(res));
}

void bench_call(const ctx_t *c, int raw, const call_t *k) {
    if (raw || opt.aa) raw_call(c, k);
    else lib_call(c, k);
}

/* Seconds between two events recorded on the stream, -a over the ranks. */
static double event_seconds(cudaEvent_t a, cudaEvent_t b) {
    CU(cudaEventSynchronize(b));
    float ms = 0;
    CU(cudaEventElapsedTime(&ms, a, b));
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return bench_time_over_ranks(ms * 1e-3);
}

double bench_graph_timed(const ctx_t *c, int raw, const call_t *k, int per_graph, int launches) {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CU(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < per_graph; i++) bench_call(c, raw, k);
    CU(cudaStreamEndCapture(c->stream, &graph));
    CU(cudaGraphInstantiate(&exec, graph, 0));
    CU(cudaGraphLaunch(exec, c->stream)); /* the first replay uploads the graph: not timed */
    CU(cudaStreamSynchronize(c->stream));
    bench_barrier();
    cudaEvent_t a, b;
    CU(cudaEventCreate(&a));
    CU(cudaEventCreate(&b));
    CU(cudaEventRecord(a, c->stream));
    for (int i = 0; i < launches; i++) CU(cudaGraphLaunch(exec, c->stream));
    CU(cudaEventRecord(b, c->stream));
    double seconds = event_seconds(a, b);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    return seconds / ((double)launches * per_graph);
}

double bench_timed(const ctx_t *c, int raw, const call_t *k, int iters) {
    if (opt.graph_launches > 0) return bench_graph_timed(c, raw, k, iters, opt.graph_launches);
    cudaEvent_t a, b;
    CU(cudaEventCreate(&a));
    CU(cudaEventCreate(&b));
    bench_barrier();
    CU(cudaEventRecord(a, c->stream));
    for (int i = 0; i < iters; i++) {
        bench_call(c, raw, k);
        if (opt.blocking) CU(cudaStreamSynchronize(c->stream));
    }
    CU(cudaEventRecord(b, c->stream));
    return event_seconds(a, b) / iters;
}
