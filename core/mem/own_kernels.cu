/* The library's own all_reduce kernels (device code; nvcc makes a fatbin of them at build time,
 * which the archive carries, core/mem/own_module.c loads through the CUDA driver and
 * core/coll/own_all_reduce.c launches).
 *
 * Every rank copies its input into its workspace's staging (core/mem/own_layout_int.h), meets
 * its peers at a barrier of flags in their workspaces, and then:
 *   one-shot (hn_own1_*): reads every rank's staging and reduces all of it into its output;
 *   two-shot (hn_own2_*): reduces its 1/N of it into its staging and its output, meets its
 *   peers again, and copies the other ranks' reduced parts into its output.
 * The data is cut into 16-byte units; a unit belongs to one block on every rank (one-shot: by
 * a grid stride; two-shot: by a grid stride inside each rank's part), so that a barrier per
 * block is enough. Elements past the last whole unit are block 0's. Sums run in rank order
 * 0..N-1, 16-bit and 8-bit floats in float32, rounded once: every rank gets the same bits. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

extern "C" {
#include "core/mem/own_layout_int.h"
}

namespace {

enum { SUM, PROD, MAX, MIN, AVG };

__device__ __forceinline__ void st_release(unsigned *p, unsigned v) {
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ unsigned ld_acquire(const unsigned *p) {
    unsigned v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

/* Types: R as stored, A as reduced. */
struct F32 {
    typedef unsigned R;
    typedef float A;
    static __device__ A get(R r) { return __uint_as_float(r); }
    static __device__ R put(A a) { return __float_as_uint(a); }
};
struct F16 {
    typedef unsigned short R;
    typedef float A;
    static __device__ A get(R r) { return __half2float(__ushort_as_half(r)); }
    static __device__ R put(A a) { return __half_as_ushort(__float2half_rn(a)); }
};
struct BF16 {
    typedef unsigned short R;
    typedef float A;
    static __device__ A get(R r) { return __bfloat162float(__ushort_as_bfloat16(r)); }
    static __device__ R put(A a) { return __bfloat16_as_ushort(__float2bfloat16_rn(a)); }
};
struct I32 {
    typedef unsigned R;
    typedef int A;
    static __device__ A get(R r) { return (int)r; }
    static __device__ R put(A a) { return (unsigned)a; }
};
struct U32 {
    typedef unsigned R;
    typedef unsigned A;
    static __device__ A get(R r) { return r; }
    static __device__ R put(A a) { return a; }
};
template <typename F8, __nv_fp8_interpretation_t I>
struct F8T { /* max and min only: the winner is one of the inputs, so it is exact (no saturation: */
    typedef unsigned char R; /* an infinity stays one) */
    typedef float A;
    static __device__ A get(R r) {
        F8 x;
        x.__x = r;
        return (float)x;
    }
    static __device__ R put(A a) { return (R)__nv_cvt_float_to_fp8(a, __NV_NOSAT, I); }
};
typedef F8T<__nv_fp8_e4m3, __NV_E4M3> F8E4M3;
typedef F8T<__nv_fp8_e5m2, __NV_E5M2> F8E5M2;

__device__ __forceinline__ float add(float a, float b) { return a + b; }
__device__ __forceinline__ int add(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
__device__ __forceinline__ unsigned add(unsigned a, unsigned b) { return a + b; }
__device__ __forceinline__ float mul(float a, float b) { return a * b; }
__device__ __forceinline__ int mul(int a, int b) { return (int)((unsigned)a * (unsigned)b); }
__device__ __forceinline__ unsigned mul(unsigned a, unsigned b) { return a * b; }
__device__ __forceinline__ float hi(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ float lo(float a, float b) { return fminf(a, b); }
template <typename A>
__device__ __forceinline__ A hi(A a, A b) { return a > b ? a : b; }
template <typename A>
__device__ __forceinline__ A lo(A a, A b) { return a < b ? a : b; }

template <int OP, typename A>
__device__ __forceinline__ A combine(A a, A b) {
    if (OP == SUM || OP == AVG) return add(a, b);
    if (OP == PROD) return mul(a, b);
    if (OP == MAX) return hi(a, b);
    return lo(a, b);
}

template <int OP, typename A>
__device__ __forceinline__ A finish(A a, int n) {
    return OP == AVG ? a / (A)n : a;
}

/* One 16-byte unit of elements. */
template <typename T>
struct Unit {
    static const int N = 16 / sizeof(typename T::R);
    union {
        uint4 v;
        typename T::R e[N];
    };
};

/* A unit of the user's buffer: one 16-byte access when aligned, else element by element. */
template <typename T>
__device__ __forceinline__ Unit<T> load_user(const char *p, bool aligned) {
    Unit<T> u;
    if (aligned) {
        u.v = *(const uint4 *)p;
    } else {
#pragma unroll
        for (int i = 0; i < Unit<T>::N; i++) u.e[i] = ((const typename T::R *)p)[i];
    }
    return u;
}

template <typename T>
__device__ __forceinline__ void store_user(char *p, const Unit<T> &u, bool aligned) {
    if (aligned) {
        *(uint4 *)p = u.v;
    } else {
#pragma unroll
        for (int i = 0; i < Unit<T>::N; i++) ((typename T::R *)p)[i] = u.e[i];
    }
}

/* Staging is read past the L1 (a peer writes it while this kernel runs). */
template <typename T>
__device__ __forceinline__ Unit<T> load_stage(const char *p) {
    Unit<T> u;
    u.v = __ldcg((const uint4 *)p);
    return u;
}

/* The unit at `off` of every rank's staging half, reduced in rank order. */
template <typename T, int OP>
__device__ __forceinline__ Unit<T> reduce_unit(const hn_own_args_t &a, size_t off) {
    Unit<T> in[HN_OWN_MAX_RANKS];
#pragma unroll
    for (int p = 0; p < HN_OWN_MAX_RANKS; p++)
        if (p < a.nranks) in[p] = load_stage<T>(a.ws[p] + off);
    typename T::A acc[Unit<T>::N];
#pragma unroll
    for (int i = 0; i < Unit<T>::N; i++) acc[i] = T::get(in[0].e[i]);
#pragma unroll
    for (int p = 1; p < HN_OWN_MAX_RANKS; p++)
        if (p < a.nranks)
#pragma unroll
            for (int i = 0; i < Unit<T>::N; i++) acc[i] = combine<OP>(acc[i], T::get(in[p].e[i]));
    Unit<T> out;
#pragma unroll
    for (int i = 0; i < Unit<T>::N; i++) out.e[i] = T::put(finish<OP>(acc[i], a.nranks));
    return out;
}

/* One element at `off` of every rank's staging half, reduced in rank order. */
template <typename T, int OP>
__device__ __forceinline__ typename T::R reduce_element(const hn_own_args_t &a, size_t off) {
    typename T::A acc = T::get(__ldcg((const typename T::R *)(a.ws[0] + off)));
    for (int p = 1; p < a.nranks; p++) acc = combine<OP>(acc, T::get(__ldcg((const typename T::R *)(a.ws[p] + off))));
    return T::put(finish<OP>(acc, a.nranks));
}

/* Block b of every rank: flags its peers that it reached barrier `seq` and waits for theirs. */
__device__ __forceinline__ void barrier(const hn_own_args_t &a, unsigned seq) {
    __syncthreads();
    if ((int)threadIdx.x < a.nranks) {
        int p = threadIdx.x;
        st_release((unsigned *)(a.ws[p] + HN_OWN_FLAGS_OFFSET) + blockIdx.x * HN_OWN_MAX_RANKS + a.rank, seq);
        const unsigned *mine = (const unsigned *)(a.ws[a.rank] + HN_OWN_FLAGS_OFFSET) + blockIdx.x * HN_OWN_MAX_RANKS + p;
        unsigned spins = 0;
        while ((int)(ld_acquire(mine) - seq) < 0)
            if (++spins % 4096 == 0 && *a.abort != 0) break; /* the communicator is being aborted */
    }
    __syncthreads();
}

/* The elements past the last whole unit (fewer than one unit's worth): block 0 copies them in,
 * and every rank reduces them all after the first barrier. */
template <typename T>
__device__ __forceinline__ void tail_in(const hn_own_args_t &a, size_t first, char *stage) {
    typedef typename T::R R;
    if (blockIdx.x == 0)
        for (size_t e = first + threadIdx.x; e < a.count; e += blockDim.x)
            ((R *)stage)[e] = ((const R *)a.in)[e];
}

template <typename T, int OP>
__device__ __forceinline__ void tail_out(const hn_own_args_t &a, size_t first, size_t half) {
    typedef typename T::R R;
    if (blockIdx.x == 0)
        for (size_t e = first + threadIdx.x; e < a.count; e += blockDim.x)
            ((R *)a.out)[e] = reduce_element<T, OP>(a, half + e * sizeof(R));
}

template <typename T, int OP>
__device__ void one_shot(const hn_own_args_t &a, unsigned seq, size_t half, bool aligned) {
    const size_t units = a.count / Unit<T>::N, stride = (size_t)gridDim.x * blockDim.x;
    const size_t first = blockIdx.x * blockDim.x + threadIdx.x;
    char *stage = a.ws[a.rank] + half;
    for (size_t u = first; u < units; u += stride)
        *(uint4 *)(stage + u * 16) = load_user<T>((const char *)a.in + u * 16, aligned).v;
    tail_in<T>(a, units * Unit<T>::N, stage);
    barrier(a, seq + 1);
    for (size_t u = first; u < units; u += stride)
        store_user<T>((char *)a.out + u * 16, reduce_unit<T, OP>(a, half + u * 16), aligned);
    tail_out<T, OP>(a, units * Unit<T>::N, half);
}

template <typename T, int OP>
__device__ void two_shot(const hn_own_args_t &a, unsigned seq, size_t half, bool aligned) {
    const size_t units = a.count / Unit<T>::N, stride = (size_t)gridDim.x * blockDim.x;
    const size_t per = (units + a.nranks - 1) / a.nranks; /* units of each rank's part */
    const size_t first = blockIdx.x * blockDim.x + threadIdx.x;
    char *stage = a.ws[a.rank] + half;
    for (int c = 0; c < a.nranks; c++) {
        const size_t end = min(units, (c + 1) * per);
        for (size_t u = c * per + first; u < end; u += stride)
            *(uint4 *)(stage + u * 16) = load_user<T>((const char *)a.in + u * 16, aligned).v;
    }
    tail_in<T>(a, units * Unit<T>::N, stage);
    barrier(a, seq + 1);
    {
        const size_t end = min(units, (a.rank + 1) * per);
        for (size_t u = a.rank * per + first; u < end; u += stride) {
            Unit<T> r = reduce_unit<T, OP>(a, half + u * 16);
            *(uint4 *)(stage + u * 16) = r.v;
            store_user<T>((char *)a.out + u * 16, r, aligned);
        }
    }
    tail_out<T, OP>(a, units * Unit<T>::N, half);
    barrier(a, seq + 2);
    for (int i = 1; i < a.nranks; i++) {
        const int c = (a.rank + i) % a.nranks;
        const size_t end = min(units, (c + 1) * per);
        for (size_t u = c * per + first; u < end; u += stride)
            store_user<T>((char *)a.out + u * 16, load_stage<T>(a.ws[c] + half + u * 16), aligned);
    }
}

template <typename T, int OP, bool TWO>
__device__ __forceinline__ void run(const hn_own_args_t &a) {
    __shared__ unsigned s_seq, s_calls;
    unsigned *seq = (unsigned *)(a.ws[a.rank] + HN_OWN_SEQ_OFFSET) + blockIdx.x;
    unsigned *calls = (unsigned *)(a.ws[a.rank] + HN_OWN_CALLS_OFFSET) + blockIdx.x;
    if (threadIdx.x == 0) {
        s_seq = *seq;
        s_calls = *calls;
    }
    __syncthreads();
    const unsigned my_seq = s_seq, my_calls = s_calls;
    const size_t half = HN_OWN_STAGE_OFFSET + (my_calls & 1u) * (size_t)HN_OWN_STAGE_BYTES;
    const bool aligned = ((uintptr_t)a.in % 16) == 0 && ((uintptr_t)a.out % 16) == 0;
    if (TWO)
        two_shot<T, OP>(a, my_seq, half, aligned);
    else
        one_shot<T, OP>(a, my_seq, half, aligned);
    if (threadIdx.x == 0) {
        *seq = my_seq + (TWO ? 2u : 1u);
        *calls = my_calls + 1u;
    }
}

}  // namespace

#define HN_KERNEL(algo, two, tname, T, oname, OP)                                                    \
    extern "C" __global__ void __launch_bounds__(HN_OWN_THREADS) hn_own##algo##_##tname##_##oname( \
        const hn_own_args_t a) {                                                                     \
        run<T, OP, two>(a);                                                                          \
    }
#define HN_ARITH(algo, two, tname, T)            \
    HN_KERNEL(algo, two, tname, T, sum, SUM)     \
    HN_KERNEL(algo, two, tname, T, prod, PROD)   \
    HN_KERNEL(algo, two, tname, T, max, MAX)     \
    HN_KERNEL(algo, two, tname, T, min, MIN)     \
    HN_KERNEL(algo, two, tname, T, avg, AVG)
#define HN_ORDER(algo, two, tname, T)        \
    HN_KERNEL(algo, two, tname, T, max, MAX) \
    HN_KERNEL(algo, two, tname, T, min, MIN)
#define HN_ALGO(algo, two)                                \
    HN_ARITH(algo, two, f32, F32)                         \
    HN_ARITH(algo, two, f16, F16)                         \
    HN_ARITH(algo, two, bf16, BF16)                       \
    HN_ARITH(algo, two, i32, I32)                         \
    HN_ARITH(algo, two, u32, U32)                         \
    HN_ORDER(algo, two, f8e4m3, F8E4M3)                   \
    HN_ORDER(algo, two, f8e5m2, F8E5M2)

HN_ALGO(1, false)
HN_ALGO(2, true)
