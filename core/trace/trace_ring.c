/* The flight recorder's ring: each communicator's last operations, recorded without a lock
 * or an allocation; the calling thread's tag (hidet_nccl_set_tag); communicator keys. */
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/base/status_int.h"
#include "core/base/log_int.h"
#include "core/base/settings_int.h"
#include "core/base/thread_int.h"
#include "core/trace/trace_ring_int.h"

static _Thread_local char t_tag[HN_TRACE_TAG_BYTES];

_Static_assert(offsetof(hn_trace_entry_t, tag) + 1 <= 64, "what a call writes of an entry fits its first line");

hidet_nccl_status_t hidet_nccl_set_tag(const char *tag) {
    HN_ENTER();
    if (tag == NULL) {
        t_tag[0] = '\0';
        hidet_nccl__thread.tagged = 0;
        return HIDET_NCCL_SUCCESS;
    }
    size_t len = strlen(tag);
    if (len >= sizeof t_tag)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "tag '%.32s...' has %zu bytes; at most %zu are kept", tag,
                       len, sizeof t_tag - 1);
    memcpy(t_tag, tag, len + 1);
    hidet_nccl__thread.tagged = len > 0;
    return HIDET_NCCL_SUCCESS;
}

uint32_t hidet_nccl__trace_key_id(const void *id, size_t bytes, int nranks) {
    uLong c = crc32(crc32(0L, Z_NULL, 0), id, (uInt)bytes);
    return (uint32_t)crc32(c, (const Bytef *)&nranks, sizeof nranks);
}

uint32_t hidet_nccl__trace_key_child(uint32_t parent, uint32_t ordinal, const char *how, int color) {
    uint32_t words[3] = {parent, ordinal, (uint32_t)color};
    uLong c = crc32(crc32(0L, Z_NULL, 0), (const Bytef *)words, sizeof words);
    return (uint32_t)crc32(c, (const Bytef *)how, (uInt)strlen(how));
}

const char *hidet_nccl__trace_off_why(void) {
    hn_setting_info_t entries;
    hidet_nccl__setting_info(HN_SETTING_TRACE_ENTRIES, &entries);
    if (entries.env == NULL) /* not asked for: recorded where a dump can be written */
        return hidet_nccl__setting_str(HN_SETTING_TRACE_DIR) != NULL
                   ? NULL
                   : "neither HIDET_NCCL_TRACE_DIR nor HIDET_NCCL_TRACE_ENTRIES set; set one to record";
    return entries.error == NULL && entries.number <= 0 ? "HIDET_NCCL_TRACE_ENTRIES=0" : NULL;
}

hn_trace_t *hidet_nccl__trace_new(uint32_t key) {
    const char *off = hidet_nccl__trace_off_why();
    if (off != NULL) {
        HN_INFO("flight recorder off for communicator %08x (%s)", (unsigned)key, off);
        return NULL;
    }
    int entries = 0;
    if (hidet_nccl__setting_int(HN_SETTING_TRACE_ENTRIES, &entries) != HIDET_NCCL_SUCCESS) /* entries: the default */
        HN_WARN("%s; the flight recorder keeps the default", hidet_nccl__setting_error(HN_SETTING_TRACE_ENTRIES));
    if (entries <= 0) return NULL; /* trace_off_why said so already; kept so that no ring has 0 entries */
    /* a power of two: a call finds its entry with a mask, not a division (docs/benchmarks.md) */
    while (entries & (entries - 1)) entries += entries & -entries;
    size_t bytes = sizeof(hn_trace_t) + (size_t)entries * sizeof(hn_trace_entry_t); /* a multiple of 64, the alignment */
    hn_trace_t *t = aligned_alloc(_Alignof(hn_trace_t), bytes);
    if (t != NULL) memset(t, 0, bytes);
    if (t == NULL) {
        HN_WARN("out of memory for a flight recorder of %d entries: this communicator is not recorded", entries);
        return NULL;
    }
    t->entries = (uint32_t)entries;
    t->key = key;
    t->rank = t->nranks = -1;
    int completion = 0;
    if (hidet_nccl__setting_int(HN_SETTING_TRACE_COMPLETION, &completion) == HIDET_NCCL_SUCCESS && completion) {
        t->events = calloc((size_t)entries, sizeof *t->events);
        for (int i = 0; t->events != NULL && i < entries; i++) {
            cudaError_t e = cudaEventCreateWithFlags(&t->events[i], cudaEventDisableTiming);
            if (e == cudaSuccess) continue;
            HN_WARN("flight recorder: cudaEventCreateWithFlags failed (%s) after %d of %d events; completion is not "
                    "tracked for this communicator", cudaGetErrorString(e), i, entries);
            while (i-- > 0) cudaEventDestroy(t->events[i]);
            free(t->events);
            t->events = NULL;
        }
    }
    return t;
}

void hidet_nccl__trace_free(hn_trace_t *t) {
    if (t == NULL) return;
    if (t->events != NULL) {
        for (uint32_t i = 0; i < t->entries; i++) cudaEventDestroy(t->events[i]);
        free(t->events);
    }
    free(t);
}

void hidet_nccl__trace_set_origin(hn_trace_t *t, uint32_t from_key, const char *how) {
    if (t == NULL) return;
    t->from_key = from_key;
    t->how = how;
}

void hidet_nccl__trace_set_place(hn_trace_t *t, int rank, int nranks) {
    if (t == NULL) return;
    t->rank = rank;
    t->nranks = nranks;
}

void hidet_nccl__trace_copy_tag(hn_trace_entry_t *e) { memcpy(e->tag, t_tag, sizeof e->tag); }

void hidet_nccl__trace_complete(hn_trace_t *t, uint32_t slot, hn_trace_entry_t *e, cudaStream_t stream, int in_group) {
    enum cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (in_group) e->completion = HN_TRACE_IN_GROUP;
    else if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess || capture != cudaStreamCaptureStatusNone)
        e->completion = HN_TRACE_CAPTURED;
    else if (cudaEventRecord(t->events[slot], stream) == cudaSuccess)
        e->completion = HN_TRACE_EVENT;
}
