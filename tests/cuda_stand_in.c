/* A counting stand-in for the CUDA runtime (tests/cuda_stand_in.h). No GPU: memory is host
 * memory, streams and events are tokens, every call succeeds and does what a test can see
 * (a copy copies), and each is counted by name. */
#include "tests/cuda_stand_in.h"

#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#define NAMES_KEPT 16

static int g_calls;
static const char *g_names[NAMES_KEPT];
static char g_text[NAMES_KEPT * 40];

static void count(const char *name) {
    if (g_calls < NAMES_KEPT) g_names[g_calls] = name;
    g_calls++;
}

int hn_cuda_calls(void) { return g_calls; }

int hn_cuda_calls_of(const char *name) {
    int n = 0;
    for (int i = 0; i < g_calls && i < NAMES_KEPT; i++) n += strcmp(g_names[i], name) == 0;
    return n;
}

const char *hn_cuda_names(void) {
    g_text[0] = '\0';
    for (int i = 0; i < g_calls && i < NAMES_KEPT; i++) {
        if (i) strcat(g_text, ", ");
        strcat(g_text, g_names[i]);
    }
    if (g_calls > NAMES_KEPT) strcat(g_text, ", ...");
    return g_text;
}

void hn_cuda_reset(void) { g_calls = 0; }

static int g_token; /* what a stream or an event handle points at */

cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device) {
    count(__func__);
    if (len > 0) strncpy(pciBusId, "0000:00:00.0", (size_t)len - 1), pciBusId[len - 1] = '\0';
    (void)device;
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) { return count(__func__), cudaSuccess; }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) {
    (void)flags;
    *event = (cudaEvent_t)(void *)&g_token;
    return count(__func__), cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) { return (void)event, count(__func__), cudaSuccess; }
cudaError_t cudaEventQuery(cudaEvent_t event) { return (void)event, count(__func__), cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
    return (void)event, (void)stream, count(__func__), cudaSuccess;
}
cudaError_t cudaFree(void *devPtr) { return free(devPtr), count(__func__), cudaSuccess; }
cudaError_t cudaFreeHost(void *ptr) { return free(ptr), count(__func__), cudaSuccess; }
cudaError_t cudaGetDevice(int *device) { return *device = 0, count(__func__), cudaSuccess; }
cudaError_t cudaGetDeviceCount(int *count_out) { return *count_out = 1, count(__func__), cudaSuccess; }
cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                             unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *driverStatus) {
    (void)symbol, (void)cudaVersion, (void)flags;
    *funcPtr = NULL;
    if (driverStatus) *driverStatus = cudaDriverEntryPointSymbolNotFound;
    return count(__func__), cudaErrorSymbolNotFound;
}
const char *cudaGetErrorString(cudaError_t error) { return (void)error, count(__func__), "(the CUDA stand-in)"; }
cudaError_t cudaGetLastError(void) { return count(__func__), cudaSuccess; }
cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags) {
    (void)flags;
    *pHost = calloc(1, size ? size : 1);
    return count(__func__), *pHost ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags) {
    return (void)flags, *pDevice = pHost, count(__func__), cudaSuccess;
}
cudaError_t cudaIpcCloseMemHandle(void *devPtr) { return (void)devPtr, count(__func__), cudaSuccess; }
cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devPtr) {
    (void)devPtr;
    memset(handle, 0, sizeof *handle);
    return count(__func__), cudaErrorNotSupported;
}
cudaError_t cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle, unsigned int flags) {
    (void)handle, (void)flags;
    *devPtr = NULL;
    return count(__func__), cudaErrorNotSupported;
}
cudaError_t cudaMalloc(void **devPtr, size_t size) {
    *devPtr = calloc(1, size ? size : 1);
    return count(__func__), *devPtr ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t stream) {
    (void)kind, (void)stream;
    memmove(dst, src, n);
    return count(__func__), cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t n, cudaStream_t stream) {
    (void)stream;
    memset(devPtr, value, n);
    return count(__func__), cudaSuccess;
}
cudaError_t cudaSetDevice(int device) { return (void)device, count(__func__), cudaSuccess; }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags) {
    (void)flags;
    *pStream = (cudaStream_t)(void *)&g_token;
    return count(__func__), cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) { return (void)stream, count(__func__), cudaSuccess; }
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus) {
    (void)stream;
    *pCaptureStatus = cudaStreamCaptureStatusNone;
    return count(__func__), cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t stream) { return (void)stream, count(__func__), cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t stream) { return (void)stream, count(__func__), cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
    return (void)stream, (void)event, (void)flags, count(__func__), cudaSuccess;
}
cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode) {
    return (void)mode, count(__func__), cudaSuccess;
}
