/* sim.h: M simulated workers training the MLP on one machine, with the
 * communication of each step left to a method.
 *
 * Every parameter tensor is cut into cfg->shards contiguous slices (weight
 * matrices in whole rows, biases in elements; gw_shard_range); a slice is
 * one `sim_slot`, the unit a method sends frames for. A step is three
 * phases, each run on the thread pool:
 *
 *   push  (per worker)  the driver computes the worker's minibatch gradient
 *                       into s->grad[i]; the method writes the worker's
 *                       frames into SIM_PUSH(s, i, slot)
 *   serve (per slot)    the method combines the M pushed frames of a slot
 *                       and writes the frame it sends back to s->bcast[slot]
 *   apply (per worker)  the method updates replica s->x[i] from the
 *                       broadcast frames
 *
 * Bytes are counted from the frames written in the step: every pushed frame,
 * plus every broadcast frame once per worker receiving it, plus the raw
 * buffers a method reports in extra_bytes. A frame with size 0 was not sent. At the end the driver checks that all replicas are
 * bit-identical.
 */
#ifndef EXAMPLES_SIM_H
#define EXAMPLES_SIM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "args.h"
#include "checkpoint.h"
#include "gradwire.h"
#include "idx.h"
#include "mlp.h"
#include "pool.h"

typedef struct frame_buf {
    unsigned char *data;
    size_t cap, size;
} frame_buf;
/* Allocate cap bytes (a method calls it once per buffer it uses). */
void frame_buf_alloc(frame_buf *fb, size_t cap);

typedef struct sim_slot {
    int tensor;      /* index into mlp_tensors */
    int shard;
    uint32_t id;     /* unique per slot (tensor * shards + shard); the parameter-server
                        handles tag their frames with the tensor index instead */
    uint64_t offset; /* first element within the tensor */
    uint64_t len;    /* elements, > 0 */
    uint64_t start;  /* first element in the flat parameter vector */
} sim_slot;

/* The layout of cfg: *count non-empty slots (tensor-major), caller frees. */
sim_slot *sim_layout(const config *cfg, int *count);

typedef struct sim {
    const config *cfg;
    int M;            /* workers */
    int nslots;
    sim_slot *slot;
    float **x;        /* [M] model replicas (MLP_NPARAM floats) */
    float **grad;     /* [M] their last minibatch gradients */
    frame_buf *push;  /* [M * nslots]: see SIM_PUSH */
    frame_buf *bcast; /* [nslots] */
    double *extra_bytes; /* [nslots]: bytes sent outside frames this step (raw
                            value buffers of an all-reduce), set by serve */
    float lr;         /* learning rate of this step */
    /* driver-private */
    const dataset *train;
    const int *batch_idx;
    double *loss;
    mlp_scratch *scratch;
    pthread_mutex_t err_mu;
    gw_status err;
    char err_what[64];
} sim;

#define SIM_PUSH(s, worker, j) (&(s)->push[(size_t)(worker) * (size_t)(s)->nslots + (size_t)(j)])

/* Record the first error of a step (thread-safe) and return st. */
gw_status sim_error(sim *s, gw_status st, const char *what);
/* In a method's push/serve/apply: return the error of a failing call. */
#define SIM_TRY(s, call)                                                                     \
    do {                                                                                     \
        const gw_status st_ = (call);                                                        \
        if (st_ != GW_OK)                                                                    \
            return sim_error((s), st_, #call);                                               \
    } while (0)

/* A way of communicating the gradients. create() runs once per run, before
 * the first step (errors there may exit via check()); push/serve/apply run on
 * pool threads, one task per worker or slot. `spec`, `diag` are optional. */
typedef struct method method;
struct method {
    const char *name;  /* command-line name */
    const char *title; /* one line for the output */
    void *(*create)(sim *s, const method *m);
    gw_status (*push)(void *state, sim *s, int worker);
    gw_status (*serve)(void *state, sim *s, int slot);
    gw_status (*apply)(void *state, sim *s, int worker);
    void (*destroy)(void *state, sim *s);
    /* The codec of a slot, for methods sharing one implementation. */
    gw_codec_spec *(*spec)(const sim *s, const sim_slot *slot);
    /* A per-epoch diagnostic printed as "<diag_name> <value>". */
    const char *diag_name;
    double (*diag)(void *state, const sim *s);
    /* 1: worker -> worker only (all-gather / all-reduce, no broadcast back);
     * the float32 reference is then the M pushes alone. */
    int one_way;
    /* --check on a full run: accuracy gap to sgdm at most gap_limit points,
     * float32 bytes / method bytes at least min_ratio (0: not checked). */
    double gap_limit, min_ratio;
    /* --check --quick: the same for the 100-step run, where 0 takes the
     * driver's defaults; methods that start slowly (a leader's selection,
     * per-layer 0.1%) get looser ones there: that run only catches breakage. */
    double quick_gap_limit, quick_floor;
    /* Checkpoints (--checkpoint, --resume; NULL: the method has none).
     * save: worker i's handles, and the servers of the slots j with
     * j mod M == i, into ck (between steps). restore: the handles of the
     * workers and slots this process owns (own_worker[i], own_slot[j]) from
     * the saved run's files, re-sharded when it had another number of
     * workers or slots; and what the error-feedback state owes the model,
     * per parameter: before[k] from the saved files (all of them, every
     * process), after[k] from this process's restored handles (the driver
     * sums after over the processes). k < MLP_NPARAM: the residuals,
     * (1/M) sum_i e_i + e_s; MLP_NPARAM + k: the momenta, (1/M) sum_i m_i.
     * round[k] (the same layout): the part of before[k] that re-sharding
     * rounds to float (the workers' mean), for the bound of its error. */
    void (*save)(void *state, sim *s, int worker, ckpt_writer *ck);
    void (*restore)(void *state, sim *s, const ckpt_set *old, const int *own_worker,
                    const int *own_slot, double *before, double *after, double *round);
};

typedef struct run_result {
    int ran;
    int failed; /* the run could not start (a checkpoint refused, message printed) */
    double test_acc, test_loss, train_loss, bytes_per_step, seconds;
    int replicas_identical;
    uint32_t digest; /* CRC32C of worker 0's final parameters */
} run_result;

/* Where the workers and slots of a run live. NULL: all in this process.
 * Otherwise each process runs the push and apply phases of the workers it
 * owns and the serve phase of the slots it owns, and the transport moves
 * the frames between the phases (examples/train_fmnist_mpi.c):
 *   after_push    every owned slot must see every worker's push frame, and
 *                 every process every frame's size and every worker's loss;
 *   after_serve   every process must see every broadcast frame and extra_bytes;
 *   identical     whether every worker's replica equals worker 0's.
 * Worker 0 must be owned by the process that reports (its replica is tested). */
typedef struct sim_transport {
    void *ctx;
    int (*owns_worker)(void *ctx, int worker);
    int (*owns_slot)(void *ctx, int slot);
    void (*after_push)(void *ctx, sim *s);
    void (*after_serve)(void *ctx, sim *s);
    int (*identical)(void *ctx, sim *s);
    /* Checkpoints. share: v holds M entries of `bytes` each; every process
     * fills those of its workers, after the call every process has all.
     * sum: v[0..n) summed over the processes, in place, on every process. */
    void (*share)(void *ctx, void *v, size_t bytes);
    void (*sum)(void *ctx, double *v, size_t n);
} sim_transport;

/* Train with method m: cfg->epochs epochs over train[0..train_n), test
 * accuracy of worker 0's replica on test[0..test_n) after each epoch.
 * With cfg->resume_dir the run starts where that checkpoint stands, and
 * with cfg->ckpt_dir it writes one every cfg->ckpt_every steps
 * (examples/common/checkpoint.h; the method needs save and restore).
 * ref_bytes (bytes per step of float32 frames) gives the printed ratio.
 * t may be NULL (everything local). */
run_result sim_run(const config *cfg, const method *m, pool *p, const dataset *train,
                   int train_n, const dataset *test, int test_n, double ref_bytes,
                   const sim_transport *t);

#endif
