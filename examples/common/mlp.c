#include "mlp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

const mlp_tensor mlp_tensors[MLP_NT] = {
    {"W1", MLP_OFF_W1, MLP_HID, MLP_IN, 1},
    {"b1", MLP_OFF_B1, 1, MLP_HID, 0},
    {"W2", MLP_OFF_W2, MLP_OUT, MLP_HID, 1},
    {"b2", MLP_OFF_B2, 1, MLP_OUT, 0},
};

/* Kernels with compile-time lengths (both multiples of 8), so they
 * vectorize at -O2. The dot products keep 8 independent partial sums in a
 * fixed order: vectorizable without reassociation, same result everywhere. */
#define DEFINE_KERNELS(suffix, LEN)                                                          \
    static float dot_##suffix(const float *restrict a, const float *restrict b)              \
    {                                                                                        \
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                             \
        int k, l;                                                                            \
        for (k = 0; k < (LEN); k += 8)                                                       \
            for (l = 0; l < 8; l++)                                                          \
                acc[l] += a[k + l] * b[k + l];                                               \
        return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])); \
    }                                                                                        \
    static void axpy_##suffix(float *restrict y, float a, const float *restrict x)          \
    {                                                                                        \
        int k;                                                                               \
        for (k = 0; k < (LEN); k++)                                                          \
            y[k] += a * x[k];                                                                \
    }
DEFINE_KERNELS(in, MLP_IN)
DEFINE_KERNELS(hid, MLP_HID)

/* dot_in of one row w with four inputs at once, each sum in dot_in's own
 * order (so the same bits): one dot has two dependent add chains and waits on
 * their latency; four fill the adder and load w once. */
static void dot4_in(const float *restrict w, const float *restrict x0, const float *restrict x1,
                    const float *restrict x2, const float *restrict x3, float out[4])
{
    float a0[8] = {0}, a1[8] = {0}, a2[8] = {0}, a3[8] = {0};
    int k, l;
    for (k = 0; k < MLP_IN; k += 8) {
        /* Four loops of dot_in's shape: GCC's -O2 vectorizes each. */
        for (l = 0; l < 8; l++)
            a0[l] += w[k + l] * x0[k + l];
        for (l = 0; l < 8; l++)
            a1[l] += w[k + l] * x1[k + l];
        for (l = 0; l < 8; l++)
            a2[l] += w[k + l] * x2[k + l];
        for (l = 0; l < 8; l++)
            a3[l] += w[k + l] * x3[k + l];
    }
#define GW_SUM8(a) (((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])))
    out[0] = GW_SUM8(a0);
    out[1] = GW_SUM8(a1);
    out[2] = GW_SUM8(a2);
    out[3] = GW_SUM8(a3);
#undef GW_SUM8
}

/* y += a0 x0, then += a1 x1, += a2 x2, += a3 x3: four axpy_in in that order,
 * element by element (the same bits), y loaded and stored once. */
static void axpy4_in(float *restrict y, const float a[4], const float *restrict x0,
                     const float *restrict x1, const float *restrict x2,
                     const float *restrict x3)
{
    int k;
    for (k = 0; k < MLP_IN; k++)
        y[k] = (((y[k] + a[0] * x0[k]) + a[1] * x1[k]) + a[2] * x2[k]) + a[3] * x3[k];
}

void mlp_scratch_init(mlp_scratch *s, int cap)
{
    s->cap = cap;
    s->in = xmalloc(sizeof(float) * MLP_IN * (size_t)cap);
    s->hid = xmalloc(sizeof(float) * MLP_HID * (size_t)cap);
    s->dhid = xmalloc(sizeof(float) * MLP_HID * (size_t)cap);
    s->z = xmalloc(sizeof(float) * MLP_OUT * (size_t)cap);
    s->dz = xmalloc(sizeof(float) * MLP_OUT * (size_t)cap);
    s->y = xmalloc((size_t)cap);
}

void mlp_scratch_free(mlp_scratch *s)
{
    free(s->in);
    free(s->hid);
    free(s->dhid);
    free(s->z);
    free(s->dz);
    free(s->y);
    memset(s, 0, sizeof *s);
}

void mlp_init(float *x, uint64_t seed)
{
    uint64_t st = seed ^ 0x5EEDC0DE12345678ull;
    const float a1 = sqrtf(6.0f / MLP_IN);             /* He uniform (ReLU layer) */
    const float a2 = sqrtf(6.0f / (MLP_HID + MLP_OUT)); /* Glorot uniform (output)  */
    size_t i;
    for (i = 0; i < (size_t)MLP_HID * MLP_IN; i++)
        x[MLP_OFF_W1 + i] = uniform_pm(&st, a1);
    for (i = 0; i < (size_t)MLP_OUT * MLP_HID; i++)
        x[MLP_OFF_W2 + i] = uniform_pm(&st, a2);
    memset(x + MLP_OFF_B1, 0, sizeof(float) * MLP_HID);
    memset(x + MLP_OFF_B2, 0, sizeof(float) * MLP_OUT);
}

/* Samples idx[0..n) as rows in[n][MLP_IN] scaled to [0, 1], labels y[n]. */
static void gather(const dataset *ds, const int *idx, int n, float *in, unsigned char *y)
{
    int b, k;
    for (b = 0; b < n; b++) {
        const unsigned char *img = ds->images + (size_t)idx[b] * MLP_IN;
        float *row = in + (size_t)b * MLP_IN;
        for (k = 0; k < MLP_IN; k++)
            row[k] = (float)img[k] * (1.0f / 255.0f);
        y[b] = ds->labels[idx[b]];
    }
}

/* hid[n][HID] = relu(in W1^T + b1), z[n][OUT] = hid W2^T + b2. The unit loop
 * is outermost so each W1 row is read once per batch. */
static void forward(const float *restrict x, const float *restrict in, int n,
                    float *restrict hid, float *restrict z)
{
    const float *W1 = x + MLP_OFF_W1, *b1 = x + MLP_OFF_B1;
    const float *W2 = x + MLP_OFF_W2, *b2 = x + MLP_OFF_B2;
    int b, j, c;
    for (j = 0; j < MLP_HID; j++) {
        const float *w = W1 + (size_t)j * MLP_IN;
        for (b = 0; b + 4 <= n; b += 4) {
            const float *x = in + (size_t)b * MLP_IN;
            float d[4];
            int i;
            dot4_in(w, x, x + MLP_IN, x + 2 * MLP_IN, x + 3 * MLP_IN, d);
            for (i = 0; i < 4; i++) {
                const float h = b1[j] + d[i];
                hid[(size_t)(b + i) * MLP_HID + j] = h > 0.0f ? h : 0.0f;
            }
        }
        for (; b < n; b++) {
            const float h = b1[j] + dot_in(w, in + (size_t)b * MLP_IN);
            hid[(size_t)b * MLP_HID + j] = h > 0.0f ? h : 0.0f;
        }
    }
    for (b = 0; b < n; b++)
        for (c = 0; c < MLP_OUT; c++)
            z[(size_t)b * MLP_OUT + c] =
                b2[c] + dot_hid(W2 + (size_t)c * MLP_HID, hid + (size_t)b * MLP_HID);
}

/* Softmax cross-entropy: returns the summed loss, writes dz = (p - onehot) * scale. */
static double softmax_xent(const float *z, const unsigned char *y, int n, float scale, float *dz)
{
    double loss = 0.0;
    int b, c;
    for (b = 0; b < n; b++) {
        const float *zb = z + (size_t)b * MLP_OUT;
        float *db = dz + (size_t)b * MLP_OUT;
        float zmax = zb[0], sum = 0.0f;
        for (c = 1; c < MLP_OUT; c++)
            zmax = zb[c] > zmax ? zb[c] : zmax;
        for (c = 0; c < MLP_OUT; c++) {
            db[c] = expf(zb[c] - zmax);
            sum += db[c];
        }
        loss += (double)(logf(sum) - (zb[y[b]] - zmax));
        for (c = 0; c < MLP_OUT; c++)
            db[c] = db[c] / sum * scale;
        db[y[b]] -= scale;
    }
    return loss;
}

static void backward(const float *restrict x, const float *restrict in, int n,
                     const float *restrict hid, const float *restrict dz,
                     float *restrict dhid, float *restrict grad)
{
    const float *W2 = x + MLP_OFF_W2;
    float *gW1 = grad + MLP_OFF_W1, *gb1 = grad + MLP_OFF_B1;
    float *gW2 = grad + MLP_OFF_W2, *gb2 = grad + MLP_OFF_B2;
    int b, j, c;

    memset(gb2, 0, sizeof(float) * MLP_OUT);
    memset(gW2, 0, sizeof(float) * MLP_OUT * MLP_HID);
    memset(gb1, 0, sizeof(float) * MLP_HID);
    for (b = 0; b < n; b++) {
        const float *h = hid + (size_t)b * MLP_HID;
        const float *db = dz + (size_t)b * MLP_OUT;
        float *dh = dhid + (size_t)b * MLP_HID;
        memset(dh, 0, sizeof(float) * MLP_HID);
        for (c = 0; c < MLP_OUT; c++) {
            gb2[c] += db[c];
            axpy_hid(gW2 + (size_t)c * MLP_HID, db[c], h); /* dW2[c][:] += dz[c] h */
            axpy_hid(dh, db[c], W2 + (size_t)c * MLP_HID); /* dh += dz[c] W2[c][:] */
        }
        for (j = 0; j < MLP_HID; j++) {
            dh[j] = h[j] > 0.0f ? dh[j] : 0.0f; /* ReLU gate */
            gb1[j] += dh[j];
        }
    }
    /* dW1[j][:] = sum_b dh[b][j] in[b][:]; inactive units (about half) skipped. */
    for (j = 0; j < MLP_HID; j++) {
        float *g = gW1 + (size_t)j * MLP_IN;
        const float *x[4];
        float a[4];
        int m = 0;
        memset(g, 0, sizeof(float) * MLP_IN);
        for (b = 0; b < n; b++) {
            a[m] = dhid[(size_t)b * MLP_HID + j];
            if (a[m] == 0.0f)
                continue;
            x[m] = in + (size_t)b * MLP_IN;
            if (++m == 4) {
                axpy4_in(g, a, x[0], x[1], x[2], x[3]);
                m = 0;
            }
        }
        for (b = 0; b < m; b++)
            axpy_in(g, a[b], x[b]);
    }
}

double mlp_gradient(const float *params, const dataset *ds, const int *idx, int n,
                    mlp_scratch *s, float *grad)
{
    double loss;
    gather(ds, idx, n, s->in, s->y);
    forward(params, s->in, n, s->hid, s->z);
    loss = softmax_xent(s->z, s->y, n, 1.0f / (float)n, s->dz);
    backward(params, s->in, n, s->hid, s->dz, s->dhid, grad);
    return loss / n;
}

void mlp_evaluate(const float *params, const dataset *ds, int first, int last, mlp_scratch *s,
                  double *loss_sum, int *correct)
{
    int idx_buf[256];
    int *idx = s->cap <= 256 ? idx_buf : xmalloc(sizeof(int) * (size_t)s->cap);
    int start, b, c;
    *loss_sum = 0.0;
    *correct = 0;
    for (start = first; start < last; start += s->cap) {
        const int n = last - start < s->cap ? last - start : s->cap;
        for (b = 0; b < n; b++)
            idx[b] = start + b;
        gather(ds, idx, n, s->in, s->y);
        forward(params, s->in, n, s->hid, s->z);
        *loss_sum += softmax_xent(s->z, s->y, n, 1.0f, s->dz);
        for (b = 0; b < n; b++) {
            const float *zb = s->z + (size_t)b * MLP_OUT;
            int best = 0;
            for (c = 1; c < MLP_OUT; c++)
                if (zb[c] > zb[best])
                    best = c;
            *correct += best == s->y[b];
        }
    }
    if (idx != idx_buf)
        free(idx);
}
