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
        for (b = 0; b < n; b++) {
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
        memset(g, 0, sizeof(float) * MLP_IN);
        for (b = 0; b < n; b++) {
            const float a = dhid[(size_t)b * MLP_HID + j];
            if (a != 0.0f)
                axpy_in(g, a, in + (size_t)b * MLP_IN);
        }
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
