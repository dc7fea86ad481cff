/*
 * blas_probe.c — measures the row period of OpenBLAS's sgemm (see blas_probe.h).
 *
 * For a candidate period P, a reference block of 2P rows is computed alone and
 * then again inside larger calls at offsets that are multiples of P (both with
 * beta = 0 and beta = 1, as the projections use both); every copy must match
 * the reference bit for bit.
 */
#include "blas_probe.h"

#include <cblas.h>
#include <omp.h>
#include <string.h>

#include "alloc.h"

static const int32_t CANDIDATES[] = {1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256};
#define N_CANDIDATES ((int)(sizeof CANDIDATES / sizeof CANDIDATES[0]))

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void fill(float *x, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((splitmix(&seed) >> 40) * 0x1p-24) - 0.5f;
}

static void gemm(int m, const blas_probe_shape *s, const float *a, const float *b, float beta,
                 float *c)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, s->n, s->k, 1.0f, a, s->k, b, s->k,
                beta, c, s->n);
}

/* Does period p hold for shape s? a holds enough rows, c has room for them.
 * A reference block of 2p rows is computed alone, then again at other
 * offsets that are multiples of p, in calls of several row counts. */
static int period_holds(int32_t p, const blas_probe_shape *s, const float *a, const float *b,
                        const float *c_init, float *ref, float *c)
{
    const size_t ref_rows = 2 * (size_t)p;
    /* (offset of the reference block inside the call, rows in the call) */
    const size_t layouts[4][2] = {{p, 4 * (size_t)p},
                                  {3 * (size_t)p, 5 * (size_t)p},
                                  {0, 9 * (size_t)p},
                                  {6 * (size_t)p, 8 * (size_t)p}};
    const size_t base = 6 * (size_t)p; /* reference rows start here */
    for (int beta_one = 0; beta_one <= 1; beta_one++) {
        float beta = beta_one ? 1.0f : 0.0f;
        size_t ref_bytes = ref_rows * s->n * sizeof(float);
        memcpy(ref, c_init + base * s->n, ref_bytes);
        gemm((int)ref_rows, s, a + base * s->k, b, beta, ref);
        for (size_t l = 0; l < 4; l++) {
            size_t off = layouts[l][0], rows = layouts[l][1];
            size_t first = base - off;
            memcpy(c, c_init + first * s->n, rows * s->n * sizeof(float));
            gemm((int)rows, s, a + first * s->k, b, beta, c);
            if (memcmp(ref, c + off * s->n, ref_bytes) != 0) return 0;
        }
    }
    return 1;
}

lms_status blas_row_period(const blas_probe_shape *shapes, int n_shapes, int32_t *period,
                           lms_error *err)
{
    int32_t kmax = 1, nmax = 1;
    for (int i = 0; i < n_shapes; i++) {
        if (shapes[i].k > kmax) kmax = shapes[i].k;
        if (shapes[i].n > nmax) nmax = shapes[i].n;
    }
    /* the most rows a layout reads: 15p */
    const size_t max_rows = 15 * (size_t)CANDIDATES[N_CANDIDATES - 1];
    float *a = lms_alloc(max_rows * kmax * sizeof(float));
    float *b = lms_alloc((size_t)nmax * kmax * sizeof(float));
    float *c_init = lms_alloc(max_rows * nmax * sizeof(float));
    float *c = lms_alloc(max_rows * nmax * sizeof(float));
    float *ref = lms_alloc(max_rows * nmax * sizeof(float));
    lms_status st = LMS_OK;
    if (!a || !b || !c_init || !c || !ref) {
        st = lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for the BLAS probe");
        goto out;
    }
    fill(a, max_rows * kmax, 1);
    fill(b, (size_t)nmax * kmax, 2);
    fill(c_init, max_rows * nmax, 3);

    *period = 0;
    for (int ci = 0; ci < N_CANDIDATES && !*period; ci++) {
        int32_t p = CANDIDATES[ci];
        int ok = 1;
        for (int i = 0; i < n_shapes && ok; i++) {
            ok = period_holds(p, &shapes[i], a, b, c_init, ref, c);
            /* Inside a parallel region OpenBLAS runs single-threaded: the
             * attention kernels call it that way. */
            int inner_ok = 1;
#pragma omp parallel num_threads(2)
            {
#pragma omp single
                inner_ok = period_holds(p, &shapes[i], a, b, c_init, ref, c);
            }
            ok = ok && inner_ok;
        }
        if (ok) *period = p;
    }
    if (!*period)
        st = lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, NULL,
                      "sgemm rows are not position-invariant for any period up to 256");
out:
    lms_free(a);
    lms_free(b);
    lms_free(c_init);
    lms_free(c);
    lms_free(ref);
    return st;
}
