#define _POSIX_C_SOURCE 200809L

#include "sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report.h"
#include "util.h"

void frame_buf_alloc(frame_buf *fb, size_t cap)
{
    free(fb->data);
    fb->data = xmalloc(cap);
    fb->cap = cap;
    fb->size = 0;
}

sim_slot *sim_layout(const config *cfg, int *count)
{
    sim_slot *slot = xcalloc((size_t)MLP_NT * (size_t)cfg->shards, sizeof *slot);
    int t, s, n = 0;
    for (t = 0; t < MLP_NT; t++) {
        const mlp_tensor *T = &mlp_tensors[t];
        /* Weight matrices are cut between rows, so per-row blocks stay whole. */
        const uint64_t unit = T->is_weight ? T->cols : 1;
        for (s = 0; s < cfg->shards; s++) {
            uint64_t first, units;
            check(gw_shard_range(T->rows * T->cols / unit, (uint32_t)cfg->shards, (uint32_t)s,
                                 &first, &units),
                  "gw_shard_range");
            if (units == 0)
                continue; /* more shards than rows: this slice is empty, nobody sends it */
            slot[n].tensor = t;
            slot[n].shard = s;
            slot[n].id = (uint32_t)(t * cfg->shards + s);
            slot[n].offset = first * unit;
            slot[n].len = units * unit;
            slot[n].start = T->off + slot[n].offset;
            n++;
        }
    }
    *count = n;
    return slot;
}

gw_status sim_error(sim *s, gw_status st, const char *what)
{
    pthread_mutex_lock(&s->err_mu);
    if (s->err == GW_OK) {
        size_t n = strcspn(what, "("); /* "gw_worker_step(...)" -> "gw_worker_step" */
        if (n >= sizeof s->err_what)
            n = sizeof s->err_what - 1;
        memcpy(s->err_what, what, n);
        s->err_what[n] = '\0';
        s->err = st;
    }
    pthread_mutex_unlock(&s->err_mu);
    return st;
}

static void sim_create(sim *s, const config *cfg)
{
    const int M = cfg->workers;
    int i;
    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    s->M = M;
    s->slot = sim_layout(cfg, &s->nslots);
    s->x = xcalloc((size_t)M, sizeof *s->x);
    s->grad = xcalloc((size_t)M, sizeof *s->grad);
    s->loss = xcalloc((size_t)M, sizeof *s->loss);
    s->scratch = xcalloc((size_t)M, sizeof *s->scratch);
    for (i = 0; i < M; i++) {
        s->x[i] = xmalloc(sizeof(float) * MLP_NPARAM);
        s->grad[i] = xcalloc(MLP_NPARAM, sizeof(float));
        mlp_init(s->x[i], cfg->seed); /* same initial weights on every worker */
        mlp_scratch_init(&s->scratch[i], cfg->batch);
    }
    s->push = xcalloc((size_t)M * (size_t)s->nslots, sizeof *s->push);
    s->bcast = xcalloc((size_t)s->nslots, sizeof *s->bcast);
    s->extra_bytes = xcalloc((size_t)s->nslots, sizeof *s->extra_bytes);
    if (pthread_mutex_init(&s->err_mu, NULL))
        die("cannot initialize a mutex");
}

static void sim_destroy(sim *s)
{
    size_t j;
    int i;
    for (i = 0; i < s->M; i++) {
        free(s->x[i]);
        free(s->grad[i]);
        mlp_scratch_free(&s->scratch[i]);
    }
    for (j = 0; j < (size_t)s->M * (size_t)s->nslots; j++)
        free(s->push[j].data);
    for (j = 0; j < (size_t)s->nslots; j++)
        free(s->bcast[j].data);
    free(s->x);
    free(s->grad);
    free(s->loss);
    free(s->scratch);
    free(s->push);
    free(s->bcast);
    free(s->extra_bytes);
    free(s->slot);
    pthread_mutex_destroy(&s->err_mu);
}

/* Tasks: the method pointer and its state ride along with the sim. */
typedef struct step_ctx {
    sim *s;
    const method *m;
    void *state;
    const sim_transport *t;
} step_ctx;

static int owns_worker(const step_ctx *c, int i)
{
    return !c->t || c->t->owns_worker(c->t->ctx, i);
}

static void task_push(void *ctx, int i)
{
    step_ctx *c = ctx;
    sim *s = c->s;
    if (!owns_worker(c, i))
        return;
    s->loss[i] = mlp_gradient(s->x[i], s->train, s->batch_idx + (size_t)i * s->cfg->batch,
                              s->cfg->batch, &s->scratch[i], s->grad[i]);
    c->m->push(c->state, s, i);
}

static void task_serve(void *ctx, int j)
{
    step_ctx *c = ctx;
    if (!c->t || c->t->owns_slot(c->t->ctx, j))
        c->m->serve(c->state, c->s, j);
}

static void task_apply(void *ctx, int i)
{
    step_ctx *c = ctx;
    if (owns_worker(c, i))
        c->m->apply(c->state, c->s, i);
}

static void check_step(sim *s)
{
    if (s->err != GW_OK)
        check(s->err, s->err_what);
}

/* Test-set evaluation of worker 0's replica, in chunks. */
#define EVAL_CHUNKS 8
#define EVAL_SUB 256
typedef struct eval_ctx {
    const float *x;
    const dataset *test;
    int n, chunk;
    int correct[EVAL_CHUNKS];
    double loss[EVAL_CHUNKS];
} eval_ctx;

static void task_eval(void *ctx, int k)
{
    eval_ctx *e = ctx;
    const int first = k * e->chunk;
    const int last = first + e->chunk < e->n ? first + e->chunk : e->n;
    mlp_scratch scratch;
    e->correct[k] = 0;
    e->loss[k] = 0.0;
    if (first >= last)
        return;
    mlp_scratch_init(&scratch, EVAL_SUB);
    mlp_evaluate(e->x, e->test, first, last, &scratch, &e->loss[k], &e->correct[k]);
    mlp_scratch_free(&scratch);
}

static double evaluate(const float *x, pool *p, const dataset *test, int n, double *loss)
{
    eval_ctx e;
    int k, correct = 0;
    memset(&e, 0, sizeof e);
    e.x = x;
    e.test = test;
    e.n = n;
    e.chunk = (n + EVAL_CHUNKS - 1) / EVAL_CHUNKS;
    pool_run(p, task_eval, &e, EVAL_CHUNKS);
    *loss = 0.0;
    for (k = 0; k < EVAL_CHUNKS; k++) {
        correct += e.correct[k];
        *loss += e.loss[k];
    }
    *loss /= n;
    return 100.0 * correct / n;
}

/* Cosine decay from lr to lr*lr_final over the run; changes every step, which
 * exercises the state machines' lr_prev/lr residual rescaling. */
static float lr_at(const config *cfg, long step, long total)
{
    const double lo = cfg->lr * cfg->lr_final;
    const double frac = total > 1 ? (double)step / (double)(total - 1) : 1.0;
    return (float)(lo + 0.5 * (cfg->lr - lo) * (1.0 + cos(3.14159265358979323846 * frac)));
}

run_result sim_run(const config *cfg, const method *m, pool *p, const dataset *train,
                   int train_n, const dataset *test, int test_n, double ref_bytes,
                   const sim_transport *t)
{
    const int M = cfg->workers, B = cfg->batch;
    const int steps = train_n / (M * B);
    const long total = (long)steps * cfg->epochs;
    int *perm = xmalloc(sizeof(int) * (size_t)train_n);
    const double t0 = now_seconds();
    progress_line prog;
    step_ctx ctx;
    run_result res;
    sim s;
    long global = 0;
    int epoch, i, j;

    memset(&res, 0, sizeof res);
    res.ran = 1;
    sim_create(&s, cfg);
    s.train = train;
    ctx.s = &s;
    ctx.m = m;
    ctx.t = t;
    ctx.state = m->create(&s, m);

    printf("\n== %s: %s ==\n", m->name, m->title);
    for (epoch = 1; epoch <= cfg->epochs; epoch++) {
        double loss_sum = 0.0, bytes = 0.0, test_loss, acc, diag;
        const double te0 = now_seconds();
        int step;
        float lr = 0.0f;

        progress_start(&prog, m->name, epoch, cfg->epochs, steps);
        shuffle(perm, train_n, cfg->seed, epoch);
        for (step = 0; step < steps; step++, global++) {
            double step_loss = 0.0;
            lr = lr_at(cfg, global, total);
            s.lr = lr;
            s.batch_idx = perm + (size_t)step * M * B;
            for (j = 0; j < M * s.nslots; j++)
                s.push[j].size = 0;
            for (j = 0; j < s.nslots; j++) {
                s.bcast[j].size = 0;
                s.extra_bytes[j] = 0.0;
            }

            pool_run(p, task_push, &ctx, M);
            check_step(&s);
            if (t)
                t->after_push(t->ctx, &s);
            pool_run(p, task_serve, &ctx, s.nslots);
            check_step(&s);
            if (t)
                t->after_serve(t->ctx, &s);
            pool_run(p, task_apply, &ctx, M);
            check_step(&s);

            for (j = 0; j < M * s.nslots; j++)
                bytes += (double)s.push[j].size;
            for (j = 0; j < s.nslots; j++)
                bytes += (double)M * (double)s.bcast[j].size + s.extra_bytes[j];
            for (i = 0; i < M; i++)
                step_loss += s.loss[i];
            loss_sum += step_loss / M;
            progress_step(&prog, step + 1, loss_sum / (step + 1));
        }
        acc = evaluate(s.x[0], p, test, test_n, &test_loss);
        res.train_loss = loss_sum / steps;
        res.test_acc = acc;
        res.test_loss = test_loss;
        res.bytes_per_step = bytes / steps;
        printf("  epoch %2d/%d  lr %.4f  train loss %.4f  test loss %.4f  acc %6.2f%%"
               "  %8.0f B/step  ratio %5.1fx",
               epoch, cfg->epochs, lr, res.train_loss, test_loss, acc, res.bytes_per_step,
               ref_bytes / res.bytes_per_step);
        diag = m->diag ? m->diag(ctx.state, &s) : 0.0;
        if (m->diag)
            printf("  %s %.3f", m->diag_name, diag);
        printf("  %.1f s\n", now_seconds() - te0);
        fflush(stdout);
        if (cfg->csv)
            fprintf(cfg->csv, "%s,%d,%.6f,%.6f,%.6f,%.4f,%.0f,%s,%.6f\n", m->name, epoch, lr,
                    res.train_loss, test_loss, acc, res.bytes_per_step,
                    m->diag ? m->diag_name : "", diag);
    }
    res.seconds = now_seconds() - t0;

    /* Every worker applied the same broadcast frames: replicas must agree bit for bit. */
    res.replicas_identical = 1;
    if (t)
        res.replicas_identical = t->identical(t->ctx, &s);
    else
        for (i = 1; i < M; i++)
            if (memcmp(s.x[0], s.x[i], sizeof(float) * MLP_NPARAM) != 0)
                res.replicas_identical = 0;
    check(gw_crc32c(s.x[0], sizeof(float) * MLP_NPARAM, &res.digest), "gw_crc32c");

    m->destroy(ctx.state, &s);
    sim_destroy(&s);
    free(perm);
    return res;
}
