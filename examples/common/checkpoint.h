/* checkpoint.h: the demo's checkpoint files (--checkpoint DIR, --resume DIR).
 *
 * A checkpoint of a run of M workers is M files, DIR/rank-R-of-M.ckpt, one
 * per worker (= per MPI rank), and DIR/manifest, written last, once all M
 * files are on disk. Worker R's file holds the run's position (epoch, the
 * samples of the epoch consumed, the learning-rate schedule), the model
 * parameters, and the gradwire state blob of each of R's handles (one
 * gw_worker per slice) and of the servers of the slices j with j mod M == R
 * (the slices rank R serves over MPI).
 *
 * Every file is written atomically: a temporary file, fflush + fsync,
 * rename over the old one (kept as .prev until the next checkpoint, so a
 * rank dying between the ranks' renames leaves one whole generation), fsync
 * of the directory. Each file carries its length and a CRC32C over all of
 * it (gw_crc32c), and the manifest the step and every file's CRC: a file cut
 * short, damaged or of another step is refused, never loaded.
 *
 * File layout (little-endian):
 *   "GWDEMOCK" | u32 format 1 | u64 body length L | body (L bytes) | u32 CRC32C of all before
 * body: method name, M, S, R, the configuration that must match on resume,
 * the position (ckpt_pos), MLP_NPARAM f32 parameters, then the blobs, each
 * u32 kind, u32 slice, u32 tensor, u64 offset, u64 length, u64 size, bytes.
 */
#ifndef EXAMPLES_CHECKPOINT_H
#define EXAMPLES_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "args.h"

/* Where a run stands between two steps. */
typedef struct ckpt_pos {
    uint32_t epoch;     /* 1-based epoch in progress */
    uint64_t sample;    /* samples of the epoch's permutation consumed */
    uint32_t estep;     /* steps taken in this epoch */
    uint64_t global;    /* steps taken since the run began */
    /* The cosine learning rate: at step k of the current segment the
     * fraction of the run is from + (1 - from) k / (n - 1). A fresh run is
     * one segment (from 0, n = all its steps); a resume on another number of
     * workers starts a new one at the fraction the next step had. */
    double sched_from;
    uint64_t sched_n, sched_k;
    double loss_sum, bytes; /* this epoch's minibatch losses and bytes so far */
    float lr_last;          /* learning rate of the last step */
} ckpt_pos;

enum { CKPT_WORKER = 1, CKPT_SERVER = 2 };

typedef struct ckpt_blob {
    uint32_t kind;       /* CKPT_WORKER or CKPT_SERVER */
    uint32_t slot;       /* slice index in the saving run's layout */
    uint32_t tensor;     /* mlp tensor */
    uint64_t offset, len; /* the slice within the tensor */
    const unsigned char *data;
    size_t size;
} ckpt_blob;

/* A file being built (ckpt_begin ... ckpt_finish). */
typedef struct ckpt_writer {
    unsigned char *data;
    size_t size, cap;
    size_t count_at; /* where the blob count goes */
    uint32_t nblobs;
} ckpt_writer;

void ckpt_begin(ckpt_writer *w, const char *method, const config *cfg, int rank, int train_n,
                const ckpt_pos *pos, const float *x, size_t nparam);
void ckpt_put_blob(ckpt_writer *w, uint32_t kind, uint32_t slot, uint32_t tensor,
                   uint64_t offset, uint64_t len, const void *blob, size_t size);
/* Seal (length, CRC) and write DIR/rank-R-of-M.ckpt atomically. Returns 0,
 * or -1 with a message in err. *crc (the CRC the file stores) and *size
 * describe the file, for the manifest. */
int ckpt_finish(ckpt_writer *w, const char *dir, int rank, int workers, uint32_t *crc,
                uint64_t *size, char *err, size_t errcap);

/* One file read back. */
typedef struct ckpt_file {
    unsigned char *data;
    size_t size;
    uint32_t crc; /* the CRC32C it stores, of every byte before it */
    char method[32];
    uint32_t workers, shards, rank;
    ckpt_pos pos;
    float *x;             /* nparam parameters (own copy) */
    ckpt_blob *blob;
    uint32_t nblobs;
} ckpt_file;

/* The checkpoint in DIR: its manifest, then the M files it names (each
 * checked against the manifest's CRC; a .prev file of the same step is taken
 * when a rank died between the renames), every one checked against cfg.
 * Returns 0, or -1 with a message in err (a file cut short, a checksum
 * mismatch, another configuration). */
typedef struct ckpt_set {
    char method[32];
    uint32_t workers, shards; /* M, S of the saving run */
    uint64_t global;          /* steps taken when it was saved */
    ckpt_file *file;          /* [workers] */
} ckpt_set;
int ckpt_load(ckpt_set *set, const char *dir, const char *method, const config *cfg, int train_n,
              size_t nparam, char *err, size_t errcap);
void ckpt_set_free(ckpt_set *set);

/* After every file of a checkpoint is on disk: DIR/manifest (atomically).
 * crc[], size[]: the M files'. */
int ckpt_write_manifest(const char *dir, const char *method, int workers, int shards,
                        uint64_t global, const uint32_t *crc, const uint64_t *size, char *err,
                        size_t errcap);

#endif
