/* args.h: the Fashion-MNIST demo's command line. */
#ifndef EXAMPLES_ARGS_H
#define EXAMPLES_ARGS_H

#include <stdint.h>
#include <stdio.h>

#define EXIT_USAGE 2

/* Scaled-sign blocks of a weight matrix slice (biases: one block per slice
 * except with BLOCKS_FIXED). */
typedef enum blocks_mode {
    BLOCKS_ROW,    /* one block per row = per output unit (block_size = fan-in) */
    BLOCKS_TENSOR, /* block_size 0: one block per frame, i.e. per tensor slice */
    BLOCKS_FIXED   /* block_size = config.block_size for every tensor */
} blocks_mode;

typedef struct config {
    int epochs;
    int workers;        /* M simulated workers */
    int shards;         /* slices per tensor, one server each (default M) */
    int batch;          /* per worker */
    double lr;          /* peak learning rate */
    double lr_final;    /* fraction of lr reached at the end of the cosine */
    double mu;          /* Nesterov momentum, every method */
    const char *methods; /* comma-separated method names */
    uint64_t seed;
    blocks_mode blocks;
    uint32_t block_size; /* BLOCKS_FIXED */
    int check;
    int quick;
    int threads;        /* 0: min(M, CPUs) */
    int train_limit, test_limit; /* 0 = all */
    const char *data_dir;
    FILE *csv;          /* --csv: one row per epoch and method, for plotting */
    const char *ckpt_dir;   /* --checkpoint DIR: write checkpoints there */
    long ckpt_every;        /* --checkpoint-every K: every K steps (0: at each epoch's end) */
    const char *resume_dir; /* --resume DIR: start from the checkpoint there */
} config;

/* Parse argv into *cfg; prints usage and exits on --help (0) or an invalid
 * command line (EXIT_USAGE). `method_names` lists the valid names for
 * --help ("sgdm, ef"). */
void parse_args(int argc, char **argv, config *cfg, const char *method_names);

/* "row", "tensor" or the fixed block size, for messages. */
const char *blocks_name(const config *cfg, char *buf, size_t cap);

#endif
