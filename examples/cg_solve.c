/* A distributed conjugate-gradient solve of the 2-D Poisson equation (5-point stencil on an
 * N x N grid, Dirichlet boundary), the grid rows split across ranks:
 *     hidet-nccl-run -n 2 ./cg_solve [N]          (or under Slurm with a rendezvous dir)
 * Every global reduction goes through hidet_nccl_all_reduce in float64 on the GPU: the two
 * dot products of each iteration, the exchange of boundary rows with the neighbours (each
 * rank sums its rows into a zeroed table), and the final gathering of x. Each rank then
 * solves the whole problem alone and checks that both solutions agree. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hidet_nccl/bootstrap.h>

#define CHECK(call)                                                   \
    do {                                                              \
        if ((call) != HIDET_NCCL_SUCCESS) {                           \
            fprintf(stderr, "cg_solve: %s\n", hidet_nccl_last_error()); \
            exit(1);                                                  \
        }                                                             \
    } while (0)

static int g_comm;
static cudaStream_t g_stream;
static double *g_dev; /* device staging for reductions */

/* In-place float64 sum over ranks of n values, through the GPU. */
static void sum_over_ranks(double *v, size_t n) {
    cudaMemcpyAsync(g_dev, v, n * sizeof *v, cudaMemcpyHostToDevice, g_stream);
    CHECK(hidet_nccl_all_reduce(g_comm, g_dev, g_dev, n, HIDET_NCCL_FLOAT64, HIDET_NCCL_SUM, g_stream));
    cudaMemcpyAsync(v, g_dev, n * sizeof *v, cudaMemcpyDeviceToHost, g_stream);
    CHECK(hidet_nccl_comm_wait(g_comm, g_stream, HIDET_NCCL_DEFAULT_TIMEOUT));
}

/* y = A x for grid rows [0, rows) of width n; above/below: the neighbouring rows (zeros at
 * the boundary). */
static void apply(int n, int rows, const double *x, const double *above, const double *below, double *y) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < n; c++) {
            const double *row = x + (size_t)r * n;
            double up = r > 0 ? row[c - n] : above[c], down = r < rows - 1 ? row[c + n] : below[c];
            double left = c > 0 ? row[c - 1] : 0, right = c < n - 1 ? row[c + 1] : 0;
            y[(size_t)r * n + c] = 4 * row[c] - up - down - left - right;
        }
}

static double local_dot(const double *a, const double *b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* CG on rows [row0, row0 + rows) of the N x N grid. dist: reduce through the library (all
 * ranks take part) or not (one process owns everything). Returns the iterations. */
static int cg(int n, int row0, int rows, int rank, int size, int dist, double *x) {
    size_t m = (size_t)rows * n;
    double *r = calloc(m, sizeof *r), *p = calloc(m, sizeof *p), *ap = calloc(m, sizeof *ap);
    double *halo = calloc((size_t)2 * size * n, sizeof *halo), *zeros = calloc((size_t)n, sizeof *zeros);
    for (size_t i = 0; i < m; i++) {
        size_t g = (size_t)row0 * n + i;
        r[i] = p[i] = 1.0 + (double)(g % 5); /* b; x starts at 0 */
        x[i] = 0;
    }
    double rr = local_dot(r, r, m), bb;
    if (dist) sum_over_ranks(&rr, 1);
    bb = rr;
    int it = 0;
    while (it < 10 * n && sqrt(rr / bb) > 1e-10) {
        const double *above = zeros, *below = zeros;
        if (dist) { /* rank k's first row at halo[2k], last row at halo[2k+1] */
            memset(halo, 0, (size_t)2 * size * n * sizeof *halo);
            memcpy(halo + (size_t)2 * rank * n, p, n * sizeof *p);
            memcpy(halo + (size_t)(2 * rank + 1) * n, p + m - n, n * sizeof *p);
            sum_over_ranks(halo, (size_t)2 * size * n);
            if (rank > 0) above = halo + (size_t)(2 * rank - 1) * n;
            if (rank < size - 1) below = halo + (size_t)(2 * rank + 2) * n;
        }
        apply(n, rows, p, above, below, ap);
        double pap = local_dot(p, ap, m);
        if (dist) sum_over_ranks(&pap, 1);
        double alpha = rr / pap;
        for (size_t i = 0; i < m; i++) {
            x[i] += alpha * p[i];
            r[i] -= alpha * ap[i];
        }
        double rr_new = local_dot(r, r, m);
        if (dist) sum_over_ranks(&rr_new, 1);
        for (size_t i = 0; i < m; i++) p[i] = r[i] + rr_new / rr * p[i];
        rr = rr_new;
        it++;
    }
    free(r), free(p), free(ap), free(halo), free(zeros);
    return it;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 256, rank, size;
    CHECK(hidet_nccl_init(&g_comm));
    CHECK(hidet_nccl_comm_rank(g_comm, &rank));
    CHECK(hidet_nccl_comm_size(g_comm, &size));
    if (n < size) {
        fprintf(stderr, "cg_solve: the grid (%d rows) needs at least one row per rank (%d)\n", n, size);
        return 2;
    }
    cudaStreamCreate(&g_stream);
    size_t table = (size_t)n * n > (size_t)2 * size * n ? (size_t)n * n : (size_t)2 * size * n;
    cudaMalloc((void **)&g_dev, table * sizeof *g_dev);
    int *first_row = malloc((size_t)(size + 1) * sizeof *first_row);
    for (int k = 0; k <= size; k++) first_row[k] = (int)((long)k * n / size);
    int row0 = first_row[rank], rows = first_row[rank + 1] - row0;

    double *x = calloc((size_t)rows * n, sizeof *x);
    int iterations = cg(n, row0, rows, rank, size, 1, x);
    double *whole = calloc((size_t)n * n, sizeof *whole); /* gather x: each rank adds its rows to zeros */
    memcpy(whole + (size_t)row0 * n, x, (size_t)rows * n * sizeof *x);
    sum_over_ranks(whole, (size_t)n * n);

    double *alone = calloc((size_t)n * n, sizeof *alone);
    int alone_iterations = cg(n, 0, n, 0, 1, 0, alone);
    double diff = 0, norm = 0;
    for (size_t i = 0; i < (size_t)n * n; i++) {
        diff = fmax(diff, fabs(whole[i] - alone[i]));
        norm = fmax(norm, fabs(alone[i]));
    }
    int ok = diff <= 1e-9 * norm && abs(iterations - alone_iterations) <= 1;
    printf("rank %d of %d: CG on a %dx%d grid: %d iterations distributed, %d alone; max |x - x_alone| = %.2e "
           "(|x| up to %.3g): %s\n",
           rank, size, n, n, iterations, alone_iterations, diff, norm, ok ? "OK" : "WRONG");
    free(x), free(whole), free(alone), free(first_row);
    cudaFree(g_dev);
    cudaStreamDestroy(g_stream);
    CHECK(hidet_nccl_finalize());
    return ok ? 0 : 1;
}
