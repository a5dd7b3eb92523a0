#include "args.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "idx.h"
#include "util.h"

static const char *g_method_names = "";

static void usage(FILE *out)
{
    fprintf(out,
            "usage: %s [options]\n"
            "  --epochs N       epochs per method (default 12; 1 with --quick)\n"
            "  --workers M      simulated workers (default 4)\n"
            "  --shards S       slices per tensor, one server each (default M)\n"
            "  --batch B        minibatch per worker (default 32)\n"
            "  --lr X           peak learning rate, cosine decay to 1%% (default 0.1)\n"
            "  --mu X           Nesterov momentum, every method (default 0.9; 0 = none)\n"
            "  --blocks row|tensor|N   scaled-sign blocks (default row):\n"
            "                   row     one block per weight-matrix row (per output unit)\n"
            "                   tensor  one block per slice frame (block_size 0)\n"
            "                   N       N elements per block in every tensor\n"
            "                   (biases: one block per slice unless N is given)\n"
            "  --methods LIST   comma-separated, of: %s; or all (default all)\n"
            "  --seed S         init and data order (default 1)\n"
            "  --threads T      compute threads (default min(workers, CPUs))\n"
            "  --data DIR       idx files (default " IDX_DEFAULT_DIR ")\n"
            "  --csv FILE       per-epoch results as CSV (scripts/plot_demo.py plots them)\n"
            "  --quick          1 epoch on a 12800-sample subset, 2000 test samples\n"
            "  --check          exit 1 unless every compressed method learns, matches sgdm\n"
            "                   and compresses within its limits (see the PASS lines)\n"
            "  --checkpoint DIR write a checkpoint to DIR (rank-R-of-M.ckpt per worker, then\n"
            "                   a manifest; atomic, CRC32C-checked); one method: sgdm, ef, topk\n"
            "  --checkpoint-every K   every K steps (default: at the end of each epoch)\n"
            "  --resume DIR     start from the checkpoint in DIR, saved with the same options\n"
            "                   but any --workers (and --shards): the state is re-sharded with\n"
            "                   gw_reshard, the epoch's remaining samples split over the new\n"
            "                   workers, the lr cosine continued to its end\n"
            "  --help\n",
            util_prog, g_method_names);
}

static void bad_arg(const char *opt, const char *val)
{
    fprintf(stderr, "%s: invalid value for %s: '%s'\n", util_prog, opt, val ? val : "(missing)");
    usage(stderr);
    exit(EXIT_USAGE);
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    return errno || end == s || *end ? -1 : 0;
}

const char *blocks_name(const config *cfg, char *buf, size_t cap)
{
    if (cfg->blocks == BLOCKS_ROW)
        return "row";
    if (cfg->blocks == BLOCKS_TENSOR)
        return "tensor";
    snprintf(buf, cap, "%lu", (unsigned long)cfg->block_size);
    return buf;
}

void parse_args(int argc, char **argv, config *cfg, const char *method_names)
{
    int i, epochs_given = 0;
    long v;

    g_method_names = method_names;
    memset(cfg, 0, sizeof *cfg);
    cfg->epochs = 12;
    cfg->workers = 4;
    cfg->shards = 0;
    cfg->batch = 32;
    cfg->lr = 0.1;
    cfg->lr_final = 0.01;
    cfg->mu = 0.9;
    cfg->methods = "all";
    cfg->seed = 1;
    cfg->blocks = BLOCKS_ROW;
    cfg->data_dir = IDX_DEFAULT_DIR;

    for (i = 1; i < argc; i++) {
        const char *opt = argv[i];
        const char *val = NULL;
        char optbuf[64];
        const char *eq = strchr(opt, '=');
        if (strncmp(opt, "--", 2) == 0 && eq && (size_t)(eq - opt) < sizeof optbuf) {
            memcpy(optbuf, opt, (size_t)(eq - opt));
            optbuf[eq - opt] = '\0';
            opt = optbuf;
            val = eq + 1;
        }
#define NEED_VAL()                                                                           \
    do {                                                                                     \
        if (!val) {                                                                          \
            if (i + 1 >= argc)                                                               \
                bad_arg(opt, NULL);                                                          \
            val = argv[++i];                                                                 \
        }                                                                                    \
    } while (0)
        if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(opt, "--check")) {
            cfg->check = 1;
        } else if (!strcmp(opt, "--quick")) {
            cfg->quick = 1;
        } else if (!strcmp(opt, "--epochs")) {
            NEED_VAL();
            if (parse_long(val, 1, 1000, &v))
                bad_arg(opt, val);
            cfg->epochs = (int)v;
            epochs_given = 1;
        } else if (!strcmp(opt, "--workers")) {
            NEED_VAL();
            if (parse_long(val, 1, 256, &v))
                bad_arg(opt, val);
            cfg->workers = (int)v;
        } else if (!strcmp(opt, "--shards")) {
            NEED_VAL();
            if (parse_long(val, 1, 256, &v))
                bad_arg(opt, val);
            cfg->shards = (int)v;
        } else if (!strcmp(opt, "--batch")) {
            NEED_VAL();
            if (parse_long(val, 1, 4096, &v))
                bad_arg(opt, val);
            cfg->batch = (int)v;
        } else if (!strcmp(opt, "--threads")) {
            NEED_VAL();
            if (parse_long(val, 0, 256, &v))
                bad_arg(opt, val);
            cfg->threads = (int)v;
        } else if (!strcmp(opt, "--blocks") || !strcmp(opt, "--block")) {
            NEED_VAL();
            if (!strcmp(val, "row")) {
                cfg->blocks = BLOCKS_ROW;
            } else if (!strcmp(val, "tensor") || !strcmp(val, "0")) {
                cfg->blocks = BLOCKS_TENSOR;
            } else if (!parse_long(val, 1, (long)UINT32_MAX, &v)) {
                cfg->blocks = BLOCKS_FIXED;
                cfg->block_size = (uint32_t)v;
            } else {
                bad_arg(opt, val);
            }
        } else if (!strcmp(opt, "--seed")) {
            char *end;
            NEED_VAL();
            errno = 0;
            cfg->seed = (uint64_t)strtoull(val, &end, 0);
            if (errno || end == val || *end || val[0] == '-')
                bad_arg(opt, val);
        } else if (!strcmp(opt, "--lr")) {
            NEED_VAL();
            if (parse_double(val, &cfg->lr) || !(cfg->lr > 0.0 && cfg->lr < 100.0))
                bad_arg(opt, val);
        } else if (!strcmp(opt, "--mu")) {
            NEED_VAL();
            if (parse_double(val, &cfg->mu) || !(cfg->mu >= 0.0 && cfg->mu < 1.0))
                bad_arg(opt, val);
        } else if (!strcmp(opt, "--methods") || !strcmp(opt, "--method")) { /* --method: old name */
            NEED_VAL();
            cfg->methods = val;
        } else if (!strcmp(opt, "--checkpoint")) {
            NEED_VAL();
            if (!*val)
                bad_arg(opt, val);
            cfg->ckpt_dir = val;
        } else if (!strcmp(opt, "--checkpoint-every")) {
            NEED_VAL();
            if (parse_long(val, 1, 1000000000L, &v))
                bad_arg(opt, val);
            cfg->ckpt_every = v;
        } else if (!strcmp(opt, "--resume")) {
            NEED_VAL();
            if (!*val)
                bad_arg(opt, val);
            cfg->resume_dir = val;
        } else if (!strcmp(opt, "--data")) {
            NEED_VAL();
            cfg->data_dir = val;
        } else if (!strcmp(opt, "--csv")) {
            NEED_VAL();
            if (!(cfg->csv = fopen(val, "w"))) {
                fprintf(stderr, "%s: cannot write %s\n", util_prog, val);
                exit(EXIT_USAGE);
            }
            fprintf(cfg->csv, "method,epoch,lr,train_loss,test_loss,test_acc,bytes_per_step,"
                              "diag_name,diag\n");
        } else {
            fprintf(stderr, "%s: unknown option '%s'\n", util_prog, argv[i]);
            usage(stderr);
            exit(EXIT_USAGE);
        }
#undef NEED_VAL
    }
    if (cfg->shards == 0)
        cfg->shards = cfg->workers;
    if (cfg->ckpt_every && !cfg->ckpt_dir) {
        fprintf(stderr, "%s: --checkpoint-every needs --checkpoint DIR\n", util_prog);
        exit(EXIT_USAGE);
    }
    if (cfg->quick) {
        if (!epochs_given)
            cfg->epochs = 1;
        cfg->train_limit = 12800;
        cfg->test_limit = 2000;
    }
}
