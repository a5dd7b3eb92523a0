/* mlp.h: the demo's model, an MLP 784-256-10 (ReLU, softmax cross-entropy)
 * in plain C99, float32, deterministic (fixed summation order).
 *
 * Parameters live in one flat vector in the framework layout (as PyTorch's
 * nn.Linear stores them): a weight matrix is [out][in], one row per output
 * unit, so a row is the fan-in of one unit.
 *
 *   W1 [256][784] | b1 [256] | W2 [10][256] | b2 [10]
 */
#ifndef EXAMPLES_MLP_H
#define EXAMPLES_MLP_H

#include <stdint.h>

#include "idx.h"

#define MLP_IN IDX_IMG_SIZE
#define MLP_HID 256
#define MLP_OUT IDX_CLASSES

enum { MLP_W1, MLP_B1, MLP_W2, MLP_B2, MLP_NT };

#define MLP_OFF_W1 0
#define MLP_OFF_B1 (MLP_OFF_W1 + MLP_HID * MLP_IN)
#define MLP_OFF_W2 (MLP_OFF_B1 + MLP_HID)
#define MLP_OFF_B2 (MLP_OFF_W2 + MLP_OUT * MLP_HID)
#define MLP_NPARAM (MLP_OFF_B2 + MLP_OUT)

/* One parameter tensor: rows x cols elements at `off` in the flat vector.
 * Weight matrices have rows = outputs, cols = inputs; a bias is one row
 * of `cols` elements (rows = 1). */
typedef struct mlp_tensor {
    const char *name;
    uint64_t off, rows, cols;
    int is_weight;
} mlp_tensor;
extern const mlp_tensor mlp_tensors[MLP_NT];

/* Scratch for forward/backward passes of up to `cap` samples. */
typedef struct mlp_scratch {
    int cap;
    float *in, *hid, *dhid, *z, *dz;
    unsigned char *y;
} mlp_scratch;
void mlp_scratch_init(mlp_scratch *s, int cap);
void mlp_scratch_free(mlp_scratch *s);

/* He-uniform W1, Glorot-uniform W2, zero biases; a function of seed only. */
void mlp_init(float *params, uint64_t seed);

/* Gradient of the mean loss over samples idx[0..n) (n <= s->cap) into
 * grad[MLP_NPARAM]; returns that mean loss. */
double mlp_gradient(const float *params, const dataset *ds, const int *idx, int n,
                    mlp_scratch *s, float *grad);

/* Loss sum and number of correct predictions over samples [first, last). */
void mlp_evaluate(const float *params, const dataset *ds, int first, int last, mlp_scratch *s,
                  double *loss_sum, int *correct);

#endif
