/*
 * train_fmnist.c - gradwire's main demo on Fashion-MNIST.
 *
 * M simulated workers train an MLP 784-256-10 (examples/common/mlp.h) and
 * exchange their gradients through gradwire, every method on the same
 * initial weights, data order and learning-rate schedule. The methods, one
 * file each in examples/methods/ (the gradwire calls live there):
 *
 *   sgdm  full-precision distributed SGD with Nesterov momentum (identity
 *         frames through the error-feedback state machines: residuals stay 0)
 *   ef    dist-EF-blockSGDM: blockwise scaled sign both ways, error feedback
 *         on both sides; one block per weight row by default (--blocks)
 *   topk  exact top-k 1% both ways, error feedback on both sides
 *   slgs  SLGS: top-k 0.1% over the whole model, error feedback, all-gather
 *   cltk  ScaleCom CLT-k at 100x, values all-reduced
 *   lags  LAGS-SGD at 1000x per layer, small layers fused, all-gather
 *
 * Data, model, threads, command line and the training loop are in
 * examples/common/. A new method is a `method` entry in examples/methods/.
 *
 * Built with GW_DEMO_MPI (train_fmnist_mpi) the same program runs one worker
 * per MPI rank: the parameter-server methods' frames then travel by MPI
 * collectives (examples/common/transport_mpi.c), and the run is bit for bit
 * the single-process one (the crc32c column of the summary).
 *
 * --checkpoint DIR writes every worker's gradwire state, the parameters and
 * the position to DIR; --resume DIR continues from there on any number of
 * workers (ranks), re-sharding the state with gw_reshard (sgdm, ef, topk;
 * examples/common/checkpoint.h, examples/README.md "Checkpoints").
 *
 * Exit status: 0 on success (also when the comparison fails, unless --check),
 * 1 on errors or a failed --check, 2 on a bad command line, 77 when the data
 * files are missing (meson's "skipped").
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gradwire.h"

#include "common/args.h"
#include "common/idx.h"
#include "common/mlp.h"
#include "common/pool.h"
#include "common/report.h"
#include "common/sim.h"
#include "common/util.h"
#include "methods/methods.h"

#if defined(GW_DEMO_MPI)
#include <mpi.h>

#include "common/transport_mpi.h"
#endif

/* --check thresholds beside each method's own (gap_limit, min_ratio) */
#define GAP_LIMIT_QUICK 5.0   /* --quick: one epoch on a subset */
#define LEARN_FLOOR 80.0      /* test accuracy (%), full run */
#define LEARN_FLOOR_QUICK 70.0

static const method *const methods[] = {&method_sgdm, &method_ef, &method_topk, &method_slgs,
                                        &method_cltk, &method_lags};
#define NMETHOD ((int)(sizeof methods / sizeof methods[0]))
enum { M_SGDM = 0 };

/* ------------------------------------------------------------------------ */
/* Reference: bytes per step if every frame were float32 (identity)           */
/* ------------------------------------------------------------------------ */
static double identity_bytes_per_step(const config *cfg)
{
    gw_codec_spec *spec;
    gw_encode_ctx ctx = GW_ENCODE_CTX_INIT;
    float *zeros = xcalloc(MLP_NPARAM, sizeof(float));
    unsigned char *frame;
    size_t cap, written;
    double bytes = 0.0;
    int nslots, j;
    sim_slot *slot = sim_layout(cfg, &nslots);

    check(gw_codec_spec_create(&spec, GW_CODEC_IDENTITY), "gw_codec_spec_create");
    check(gw_encode_bound(spec, MLP_NPARAM, &cap), "gw_encode_bound");
    frame = xmalloc(cap);
    for (j = 0; j < nslots; j++) {
        ctx.tensor = slot[j].id;
        ctx.tag = GW_TAG(slot[j].id, 0);
        check(gw_encode(spec, &ctx, zeros, GW_DTYPE_F32, slot[j].len, frame, cap, &written),
              "gw_encode");
        bytes += 2.0 * cfg->workers * (double)written; /* M pushes + M receivers */
    }
    gw_codec_spec_free(spec);
    free(frame);
    free(zeros);
    free(slot);
    return bytes;
}

/* The float32 bytes a method's traffic replaces: one-way methods have no
 * broadcast back, so their reference is the M pushes alone. */
static double method_ref_bytes(const method *m, double ref_bytes)
{
    return m->one_way ? ref_bytes / 2.0 : ref_bytes;
}

/* The PASS/FAIL line of one compressed method against sgdm; 1 if it passes. */
static int check_method(const config *cfg, const method *m, const run_result *r,
                        const run_result *sgdm, double ref_bytes)
{
    const double gap = sgdm->test_acc - r->test_acc;
    const double ratio = method_ref_bytes(m, ref_bytes) / r->bytes_per_step;
    const double gap_limit =
        cfg->quick ? (m->quick_gap_limit ? m->quick_gap_limit : GAP_LIMIT_QUICK) : m->gap_limit;
    const double floor =
        cfg->quick ? (m->quick_floor ? m->quick_floor : LEARN_FLOOR_QUICK) : LEARN_FLOOR;
    const int ok_learn = r->test_acc >= floor;
    const int ok_gap = gap <= gap_limit;
    const int ok_ratio = ratio >= m->min_ratio;
    const int ok_sync = sgdm->replicas_identical && r->replicas_identical;
    const int pass = ok_learn && ok_gap && ok_ratio && ok_sync;
    printf("%s: %s accuracy %.2f%% (>= %.0f: %s), gap %.2f points (<= %.1f: %s), "
           "compression %.2fx (>= %.0fx: %s), replicas %s%s\n",
           pass ? "PASS" : "FAIL", m->name, r->test_acc, floor, ok_learn ? "yes" : "no", gap,
           gap_limit, ok_gap ? "yes" : "no", ratio, m->min_ratio, ok_ratio ? "yes" : "no",
           ok_sync ? "identical" : "DIFFER",
           cfg->quick ? " [--quick: 1 epoch on a subset, looser limits]" : "");
    return pass;
}

/* ------------------------------------------------------------------------ */
/* Selected methods from "sgdm,ef"; exits on an unknown name. */
static int select_methods(const char *list, int *selected)
{
    char buf[256];
    char *tok;
    int m, count = 0;
    if (strlen(list) >= sizeof buf) {
        fprintf(stderr, "%s: --methods list too long\n", util_prog);
        exit(EXIT_USAGE);
    }
    strcpy(buf, list);
    memset(selected, 0, sizeof(int) * NMETHOD);
    if (!strcmp(list, "all")) {
        for (m = 0; m < NMETHOD; m++)
            selected[m] = 1;
        return NMETHOD;
    }
    for (tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        for (m = 0; m < NMETHOD && strcmp(tok, methods[m]->name); m++)
            ;
        if (m == NMETHOD) {
            fprintf(stderr, "%s: unknown method '%s' (try --help)\n", util_prog, tok);
            exit(EXIT_USAGE);
        }
        count += !selected[m];
        selected[m] = 1;
    }
    return count;
}

static void print_header(const config *cfg, int train_n, int test_n, int nthreads,
                         double ref_bytes)
{
    const int M = cfg->workers, S = cfg->shards;
    char buf[32], bb[32];
    int t;
#ifdef GW_DEMO_MPI
    printf("gradwire %s (SIMD %s): Fashion-MNIST, %d workers, one per MPI rank\n",
           gw_version_string(), gw_simd_target_name(gw_simd_active_target()), M);
#else
    printf("gradwire %s (SIMD %s): Fashion-MNIST, %d simulated workers\n", gw_version_string(),
           gw_simd_target_name(gw_simd_active_target()), M);
#endif
    printf("  data      %s: %d train / %d test samples%s\n", cfg->data_dir, train_n, test_n,
           cfg->quick ? " (--quick subset)" : "");
    printf("  model     MLP %d-%d-%d ReLU, softmax cross-entropy, %d parameters:", MLP_IN,
           MLP_HID, MLP_OUT, MLP_NPARAM);
    for (t = 0; t < MLP_NT; t++) {
        const mlp_tensor *T = &mlp_tensors[t];
        if (T->rows > 1)
            printf(" %s [%llu][%llu]", T->name, (unsigned long long)T->rows,
                   (unsigned long long)T->cols);
        else
            printf(" %s [%llu]", T->name, (unsigned long long)T->cols);
    }
    printf("\n");
    printf("  training  %d epochs x %d steps, batch %d per worker (%d global), seed %llu\n",
           cfg->epochs, train_n / (M * cfg->batch), cfg->batch, cfg->batch * M,
           (unsigned long long)cfg->seed);
    printf("            lr %g cosine -> %g, Nesterov momentum mu %g, %d compute thread%s\n",
           cfg->lr, cfg->lr * cfg->lr_final, cfg->mu, nthreads, nthreads > 1 ? "s" : "");
    printf("  layout    each tensor in %d slices (weights between rows), one gw_server per\n"
           "            slice, one gw_worker per worker and slice\n", S);
    printf("  blocks    scaled sign: %s%s\n", blocks_name(cfg, buf, sizeof buf),
           cfg->blocks == BLOCKS_ROW      ? " (one block per weight row = per output unit; "
                                            "biases one per slice)"
           : cfg->blocks == BLOCKS_TENSOR ? " (one block per slice frame)"
                                          : " elements per block");
    format_bytes(ref_bytes, bb, sizeof bb);
    printf("  float32   %.0f bytes/step (%s) pushed + broadcast with identity frames\n",
           ref_bytes, bb);
    fflush(stdout);
}

/* The methods a transport can carry: with MPI, the parameter-server ones
 * (worker frames to slot owners, broadcasts to everyone); the others need
 * all-gathers and all-reduces of every worker's frames or values. */
static int transportable(const method *m, const sim_transport *t)
{
    return !t || m->serve != method_no_serve;
}

static int demo_main(int argc, char **argv)
{
    const sim_transport *transport = NULL;
    config cfg;
    dataset train_set, test_set;
    run_result res[NMETHOD];
    int selected[NMETHOD];
    char names[128] = "";
    pool p;
    int rc, train_n, test_n, m, nthreads, nselected;
    double ref_bytes, t0;
    char b1[32];

    util_prog = "train_fmnist";
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (m = 0; m < NMETHOD; m++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", m ? ", " : "",
                 methods[m]->name);
    parse_args(argc, argv, &cfg, names);
#if defined(GW_DEMO_MPI)
    util_prog = "train_fmnist_mpi";
    transport = transport_mpi(cfg.workers);
    if (!transport)
        return EXIT_USAGE;
    if (transport_mpi_rank() != 0) { /* rank 0 reports; the others keep stderr for errors */
        progress_quiet = 1;
        if (!freopen("/dev/null", "w", stdout))
            return 1;
    }
    if (!strcmp(cfg.methods, "all"))
        cfg.methods = "sgdm,ef,topk";
#endif
    nselected = select_methods(cfg.methods, selected);
    for (m = 0; m < NMETHOD; m++)
        if (selected[m] && !transportable(methods[m], transport)) {
            fprintf(stderr, "%s: %s is worker-to-worker; over MPI this demo runs sgdm, ef, topk\n",
                    util_prog, methods[m]->name);
            return EXIT_USAGE;
        }
    if (cfg.ckpt_dir || cfg.resume_dir) {
        for (m = 0; m < NMETHOD && !selected[m]; m++)
            ;
        if (nselected != 1 || !methods[m]->save || !methods[m]->restore) {
            fprintf(stderr, "%s: --checkpoint and --resume take one method, of: sgdm, ef, topk\n",
                    util_prog);
            return EXIT_USAGE;
        }
    }
    if (cfg.check && !(selected[M_SGDM] && nselected > 1)) {
        fprintf(stderr, "%s: --check compares methods with sgdm; select it and another\n",
                util_prog);
        return EXIT_USAGE;
    }
    memset(res, 0, sizeof res);

    t0 = now_seconds();
    rc = idx_load(cfg.data_dir, "train", &train_set);
    if (rc)
        return rc;
    rc = idx_load(cfg.data_dir, "t10k", &test_set);
    if (rc) {
        idx_free(&train_set);
        return rc;
    }
    train_n = cfg.train_limit && cfg.train_limit < train_set.n ? cfg.train_limit : train_set.n;
    test_n = cfg.test_limit && cfg.test_limit < test_set.n ? cfg.test_limit : test_set.n;
    if (train_n < cfg.workers * cfg.batch) {
        fprintf(stderr, "%s: workers * batch (%d) exceeds the %d training samples\n", util_prog,
                cfg.workers * cfg.batch, train_n);
        return EXIT_USAGE;
    }

    nthreads = cfg.threads > 0 ? cfg.threads
                               : (cfg.workers < pool_cpus() ? cfg.workers : pool_cpus());
    pool_init(&p, nthreads);
    ref_bytes = identity_bytes_per_step(&cfg);
    print_header(&cfg, train_n, test_n, p.nhelpers + 1, ref_bytes);

    for (m = 0; m < NMETHOD; m++)
        if (selected[m]) {
            res[m] = sim_run(&cfg, methods[m], &p, &train_set, train_n, &test_set, test_n,
                             method_ref_bytes(methods[m], ref_bytes), transport);
            if (res[m].failed) { /* a checkpoint refused: the message is out */
                pool_destroy(&p);
                idx_free(&train_set);
                idx_free(&test_set);
                return 1;
            }
        }
    pool_destroy(&p);

    printf("\n== summary ==\n");
    printf("  %-6s %10s %11s %14s %12s %9s %10s  %-9s  %s\n", "method", "test acc",
           "gap (pts)", "bytes/step", "", "ratio", "time", "replicas", "crc32c(x)");
    for (m = 0; m < NMETHOD; m++) {
        const run_result *r = &res[m];
        char gap[32];
        if (!r->ran)
            continue;
        format_bytes(r->bytes_per_step, b1, sizeof b1);
        if (m != M_SGDM && res[M_SGDM].ran)
            snprintf(gap, sizeof gap, "%+.2f", res[M_SGDM].test_acc - r->test_acc);
        else
            snprintf(gap, sizeof gap, "-");
        printf("  %-6s %9.2f%% %11s %14.0f %12s %8.1fx %9.1fs  %-9s  %08x\n", methods[m]->name,
               r->test_acc, gap, r->bytes_per_step, b1,
               method_ref_bytes(methods[m], ref_bytes) / r->bytes_per_step, r->seconds,
               r->replicas_identical ? "identical" : "DIFFER", (unsigned)r->digest);
    }

    rc = 0;
    for (m = 0; m < NMETHOD; m++)
        if (res[m].ran && methods[m]->min_ratio > 0.0 && res[M_SGDM].ran &&
            !check_method(&cfg, methods[m], &res[m], &res[M_SGDM], ref_bytes) && cfg.check)
            rc = 1;
    if (!res[M_SGDM].ran)
        printf("(select sgdm too for the PASS/FAIL comparisons)\n");
    printf("total time %.1f s\n", now_seconds() - t0);

    idx_free(&train_set);
    idx_free(&test_set);
    if (cfg.csv)
        fclose(cfg.csv);
    return rc;
}

int main(int argc, char **argv)
{
#if defined(GW_DEMO_MPI)
    int rc;
    MPI_Init(&argc, &argv);
    rc = demo_main(argc, argv);
    MPI_Finalize();
    return rc;
#else
    return demo_main(argc, argv);
#endif
}
