#define _POSIX_C_SOURCE 200809L

#include "sim.h"

#include <math.h>
#include <signal.h>
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
 * exercises the state machines' lr_prev/lr residual rescaling. The position
 * is a segment (checkpoint.h, ckpt_pos): a fresh run is one, from 0 over all
 * its steps, frac = step / (total - 1) exactly. */
static double sched_frac(const ckpt_pos *pos)
{
    const double t =
        pos->sched_n > 1 ? (double)pos->sched_k / (double)(pos->sched_n - 1) : 1.0;
    return pos->sched_from == 0.0 ? t : pos->sched_from + (1.0 - pos->sched_from) * t;
}

static float lr_at(const config *cfg, double frac)
{
    const double lo = cfg->lr * cfg->lr_final;
    return (float)(lo + 0.5 * (cfg->lr - lo) * (1.0 + cos(3.14159265358979323846 * frac)));
}

/* ------------------------------------------------------------------------ */
/* Checkpoints (examples/common/checkpoint.h)                                 */
/* ------------------------------------------------------------------------ */
typedef struct ckpt_entry { /* one file, as the manifest names it */
    uint64_t size;
    uint32_t crc, ok;
} ckpt_entry;

/* Every worker's file (each process writes its own workers'), then, once all
 * are on disk, the manifest (the process of worker 0). */
static void save_checkpoint(const config *cfg, sim *s, const step_ctx *c, const ckpt_pos *pos,
                            int train_n)
{
    const int M = s->M;
    ckpt_entry *e = xcalloc((size_t)M, sizeof *e);
    uint32_t *crc = xcalloc((size_t)M, sizeof *crc);
    uint64_t *size = xcalloc((size_t)M, sizeof *size);
    char err[4200] = "";
    int i, ok = 1;
    for (i = 0; i < M; i++) {
        ckpt_writer w;
        if (!owns_worker(c, i))
            continue;
        ckpt_begin(&w, c->m->name, cfg, i, train_n, pos, s->x[i], MLP_NPARAM);
        c->m->save(c->state, s, i, &w);
        e[i].ok = ckpt_finish(&w, cfg->ckpt_dir, i, M, &e[i].crc, &e[i].size, err,
                              sizeof err) == 0;
    }
    if (c->t) /* also the barrier: every file is renamed into place before this returns */
        c->t->share(c->t->ctx, e, sizeof *e);
    for (i = 0; i < M; i++) {
        ok &= e[i].ok != 0;
        crc[i] = e[i].crc;
        size[i] = e[i].size;
    }
    if (!ok) {
        if (err[0])
            fprintf(stderr, "%s: checkpoint: %s\n", util_prog, err);
        exit(1);
    }
    if (owns_worker(c, 0)) {
        if (ckpt_write_manifest(cfg->ckpt_dir, c->m->name, M, cfg->shards, pos->global, crc,
                                size, err, sizeof err) != 0) {
            fprintf(stderr, "%s: checkpoint: %s\n", util_prog, err);
            exit(1);
        }
        printf("  checkpoint  step %llu (epoch %u, sample %llu of %d) -> %s\n",
               (unsigned long long)pos->global, (unsigned)pos->epoch,
               (unsigned long long)pos->sample, train_n, cfg->ckpt_dir);
    }
    free(e);
    free(crc);
    free(size);
}

/* Every file's blobs are those of the saved run's layout (M workers, S
 * slices per tensor): a worker blob per slice, the servers of the slices j
 * with j mod M == rank. */
static int check_layout(const config *cfg, const ckpt_set *set, char *err, size_t cap)
{
    config old = *cfg;
    sim_slot *slot;
    int nslots, ok = 1;
    uint32_t r, k;
    unsigned char *seen, *mine; /* servers over all files; worker blobs in one */
    old.workers = (int)set->workers;
    old.shards = (int)set->shards;
    slot = sim_layout(&old, &nslots);
    seen = xcalloc((size_t)nslots, sizeof *seen);
    mine = xcalloc((size_t)nslots, sizeof *mine);
    for (r = 0; r < set->workers && ok; r++) {
        const ckpt_file *f = &set->file[r];
        uint32_t nw = 0;
        memset(mine, 0, (size_t)nslots);
        for (k = 0; k < f->nblobs && ok; k++) {
            const ckpt_blob *b = &f->blob[k];
            const sim_slot *sl = b->slot < (uint32_t)nslots ? &slot[b->slot] : NULL;
            ok = sl && (uint32_t)sl->tensor == b->tensor && sl->offset == b->offset &&
                 sl->len == b->len &&
                 ((b->kind == CKPT_WORKER && !mine[b->slot]++) ||
                  (b->kind == CKPT_SERVER && b->slot % set->workers == r && !seen[b->slot]++));
            nw += b->kind == CKPT_WORKER;
        }
        ok = ok && nw == (uint32_t)nslots;
    }
    for (k = 0; ok && k < (uint32_t)nslots; k++)
        ok = seen[k] == 1;
    free(seen);
    free(mine);
    free(slot);
    if (!ok)
        snprintf(err, cap, "the files in %s do not hold the handles of a run of %u workers and "
                           "%u slices per tensor",
                 cfg->resume_dir, (unsigned)set->workers, (unsigned)set->shards);
    return ok ? 0 : -1;
}

/* The mass the error-feedback state owes the model before and after the
 * restore, on stdout: they must agree to float rounding (the workers' mean
 * is rounded to float once, docs/algorithms.md s.9). */
static void report_mass(const char *what, const double *before, const double *after,
                        const double *round, int Mold, int Mnew)
{
    double sb = 0.0, sa = 0.0, lb = 0.0, la = 0.0, bound = 0.0, worst = 0.0;
    int k;
    for (k = 0; k < MLP_NPARAM; k++) {
        const double b = before[k], a = after[k];
        /* half an ulp of the rounded mean (2^-24 of it), slack for the sums in
         * double, one denormal step */
        const double bk =
            ldexp(fabs(round[k]), -24) * (1.0 + 1e-6) + 1e-12 * fabs(b) + ldexp(1.0, -149);
        const double d = fabs(a - b);
        sb += b;
        sa += a;
        lb += fabs(b);
        la += fabs(a);
        bound += bk;
        if (d / bk > worst)
            worst = d / bk;
    }
    printf("  resume mass %s (%d -> %d workers): before_sum=%.12e after_sum=%.12e "
           "before_l1=%.12e after_l1=%.12e diff=%.3e bound=%.3e worst=%.6f\n",
           what, Mold, Mnew, sb, sa, lb, la, fabs(sa - sb), bound, worst);
}

/* Start from cfg->resume_dir: the method's handles restored (re-sharded),
 * replicas and position set. 0, or -1 after a message. */
static int resume(const config *cfg, sim *s, const step_ctx *c, int train_n, ckpt_pos *pos)
{
    const int M = s->M, B = cfg->batch, N = MLP_NPARAM;
    ckpt_set set;
    char err[4200] = "";
    ckpt_entry *e = xcalloc((size_t)M, sizeof *e);
    int *own_worker = xcalloc((size_t)M, sizeof(int));
    int *own_slot = xcalloc((size_t)s->nslots, sizeof(int));
    double *before, *after, *round;
    int i, j, ok, all = 1;

    ok = ckpt_load(&set, cfg->resume_dir, c->m->name, cfg, train_n, MLP_NPARAM, err,
                   sizeof err) == 0;
    if (ok && check_layout(cfg, &set, err, sizeof err) != 0) {
        ckpt_set_free(&set);
        ok = 0;
    }
    for (i = 0; i < M; i++) {
        own_worker[i] = owns_worker(c, i);
        e[i].ok = (uint32_t)ok;
    }
    if (c->t) /* whether every process could read it */
        c->t->share(c->t->ctx, e, sizeof *e);
    for (i = 0; i < M; i++)
        all &= e[i].ok != 0;
    if (!all) {
        if (!ok && (own_worker[0] || e[0].ok)) /* one message, from the reporting process */
            fprintf(stderr, "%s: --resume: %s\n", util_prog, err);
        free(e);
        free(own_worker);
        free(own_slot);
        return -1;
    }
    for (j = 0; j < s->nslots; j++)
        own_slot[j] = !c->t || c->t->owns_slot(c->t->ctx, j);

    before = xcalloc(2 * (size_t)N, sizeof(double));
    after = xcalloc(2 * (size_t)N, sizeof(double));
    round = xcalloc(2 * (size_t)N, sizeof(double));
    c->m->restore(c->state, s, &set, own_worker, own_slot, before, after, round);
    if (c->t)
        c->t->sum(c->t->ctx, after, 2 * (size_t)N);
    for (i = 0; i < M; i++)
        memcpy(s->x[i], set.file[0].x, sizeof(float) * MLP_NPARAM);

    *pos = set.file[0].pos;
    printf("  resume      %s: step %llu of a run of %u workers x %u slices (epoch %u, %llu of "
           "%d samples), now %d x %d%s\n",
           cfg->resume_dir, (unsigned long long)pos->global, (unsigned)set.workers,
           (unsigned)set.shards, (unsigned)pos->epoch, (unsigned long long)pos->sample,
           train_n, M, cfg->shards,
           set.workers == (uint32_t)M && set.shards == (uint32_t)cfg->shards
               ? ": state loaded as saved"
               : ": state re-sharded (gw_reshard)");
    if (set.workers != (uint32_t)M) {
        /* The rest of this epoch's permutation, then whole epochs, in global
         * batches of M * B; the cosine goes on from the next step's fraction
         * to its end over the steps that are left. */
        const uint64_t left = (uint64_t)(train_n - (long)pos->sample) / (uint64_t)(M * B);
        const uint64_t per_epoch = (uint64_t)train_n / (uint64_t)(M * B);
        pos->sched_from = sched_frac(pos);
        pos->sched_n = left + (uint64_t)(cfg->epochs - (int)pos->epoch) * per_epoch;
        pos->sched_k = 0;
        printf("              data: the epoch's remaining %llu samples split over %d workers "
               "(%llu steps), then %llu steps per epoch; lr: the cosine from %.1f%% of the run "
               "to its end over %llu steps\n",
               (unsigned long long)((uint64_t)train_n - pos->sample), M,
               (unsigned long long)left, (unsigned long long)per_epoch,
               100.0 * pos->sched_from, (unsigned long long)pos->sched_n);
    }
    report_mass("residual", before, after, round, (int)set.workers, M);
    report_mass("momentum", before + N, after + N, round + N, (int)set.workers, M);
    fflush(stdout);
    ckpt_set_free(&set);
    free(before);
    free(after);
    free(round);
    free(e);
    free(own_worker);
    free(own_slot);
    return 0;
}

/* GW_DEMO_KILL_AT_STEP=S, GW_DEMO_KILL_RANK=r (default 0): the process of
 * worker r dies by SIGKILL in the middle of step S (1-based, counted over
 * the whole run), after its frames were pushed, before the step ends: the
 * fault tests' lost rank (tests/mpi_resume_test.sh). */
static long kill_step(void)
{
    const char *v = getenv("GW_DEMO_KILL_AT_STEP");
    return v ? atol(v) : 0;
}

static void maybe_die(const step_ctx *c, long step, long at)
{
    const char *v = getenv("GW_DEMO_KILL_RANK");
    const int r = v ? atoi(v) : 0;
    if (at <= 0 || step != at || r < 0 || r >= c->s->M || !owns_worker(c, r))
        return;
    fprintf(stderr, "%s: GW_DEMO_KILL_AT_STEP=%ld: worker %d raises SIGKILL mid-step\n",
            util_prog, at, r);
    fflush(stdout);
    raise(SIGKILL);
}

run_result sim_run(const config *cfg, const method *m, pool *p, const dataset *train,
                   int train_n, const dataset *test, int test_n, double ref_bytes,
                   const sim_transport *t)
{
    const int M = cfg->workers, B = cfg->batch;
    const int steps = train_n / (M * B);
    const long total = (long)steps * cfg->epochs;
    const long die_at = kill_step();
    int *perm = xmalloc(sizeof(int) * (size_t)train_n);
    const double t0 = now_seconds();
    progress_line prog;
    step_ctx ctx;
    run_result res;
    ckpt_pos pos;
    sim s;
    int epoch, i, j;

    memset(&res, 0, sizeof res);
    res.ran = 1;
    sim_create(&s, cfg);
    s.train = train;
    ctx.s = &s;
    ctx.m = m;
    ctx.t = t;
    ctx.state = m->create(&s, m);
    memset(&pos, 0, sizeof pos);
    pos.epoch = 1;
    pos.sched_n = (uint64_t)total;

    printf("\n== %s: %s ==\n", m->name, m->title);
    if (cfg->resume_dir && resume(cfg, &s, &ctx, train_n, &pos) != 0) {
        res.failed = 1;
        m->destroy(ctx.state, &s);
        sim_destroy(&s);
        free(perm);
        return res;
    }
    for (epoch = (int)pos.epoch; epoch <= cfg->epochs; epoch++) {
        double test_loss, acc, diag;
        const double te0 = now_seconds();

        if ((uint32_t)epoch != pos.epoch) { /* a new epoch (a resumed one goes on) */
            pos.epoch = (uint32_t)epoch;
            pos.sample = 0;
            pos.estep = 0;
            pos.loss_sum = 0.0;
            pos.bytes = 0.0;
        }
        progress_start(&prog, m->name, epoch, cfg->epochs,
                       (int)pos.estep + (train_n - (int)pos.sample) / (M * B));
        shuffle(perm, train_n, cfg->seed, epoch);
        while (pos.sample + (uint64_t)(M * B) <= (uint64_t)train_n) {
            double step_loss = 0.0;
            const float lr = lr_at(cfg, sched_frac(&pos));
            s.lr = lr;
            s.batch_idx = perm + pos.sample;
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
            maybe_die(&ctx, (long)pos.global + 1, die_at);
            pool_run(p, task_serve, &ctx, s.nslots);
            check_step(&s);
            if (t)
                t->after_serve(t->ctx, &s);
            pool_run(p, task_apply, &ctx, M);
            check_step(&s);

            for (j = 0; j < M * s.nslots; j++)
                pos.bytes += (double)s.push[j].size;
            for (j = 0; j < s.nslots; j++)
                pos.bytes += (double)M * (double)s.bcast[j].size + s.extra_bytes[j];
            for (i = 0; i < M; i++)
                step_loss += s.loss[i];
            pos.loss_sum += step_loss / M;
            pos.sample += (uint64_t)(M * B);
            pos.estep++;
            pos.global++;
            pos.sched_k++;
            pos.lr_last = lr;
            progress_step(&prog, (int)pos.estep, pos.loss_sum / pos.estep);
            if (cfg->ckpt_dir &&
                (cfg->ckpt_every > 0
                     ? pos.global % (uint64_t)cfg->ckpt_every == 0
                     : pos.sample + (uint64_t)(M * B) > (uint64_t)train_n))
                save_checkpoint(cfg, &s, &ctx, &pos, train_n);
        }
        acc = evaluate(s.x[0], p, test, test_n, &test_loss);
        res.train_loss = pos.estep ? pos.loss_sum / pos.estep : 0.0;
        res.test_acc = acc;
        res.test_loss = test_loss;
        res.bytes_per_step = pos.estep ? pos.bytes / pos.estep : 0.0;
        printf("  epoch %2d/%d  lr %.4f  train loss %.4f  test loss %.4f  acc %6.2f%%"
               "  %8.0f B/step  ratio %5.1fx",
               epoch, cfg->epochs, pos.lr_last, res.train_loss, test_loss, acc,
               res.bytes_per_step, ref_bytes / res.bytes_per_step);
        diag = m->diag ? m->diag(ctx.state, &s) : 0.0;
        if (m->diag)
            printf("  %s %.3f", m->diag_name, diag);
        printf("  %.1f s\n", now_seconds() - te0);
        fflush(stdout);
        if (cfg->csv)
            fprintf(cfg->csv, "%s,%d,%.6f,%.6f,%.6f,%.4f,%.0f,%s,%.6f\n", m->name, epoch,
                    pos.lr_last, res.train_loss, test_loss, acc, res.bytes_per_step,
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
