#define _POSIX_C_SOURCE 200809L

#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gradwire.h"
#include "util.h"

#define MAGIC "GWDEMOCK"
#define FORMAT 1
#define HEAD 20 /* magic (8), format (4), body length (8) */
#define MANIFEST_TITLE "gradwire train_fmnist checkpoint 1"

static int fail(char *err, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                    */
/* ------------------------------------------------------------------------ */
static void put(ckpt_writer *w, const void *p, size_t n)
{
    if (w->size + n > w->cap) {
        size_t cap = w->cap ? w->cap : 1 << 16;
        unsigned char *d;
        while (cap < w->size + n)
            cap *= 2;
        d = realloc(w->data, cap);
        if (!d)
            die("out of memory");
        w->data = d;
        w->cap = cap;
    }
    memcpy(w->data + w->size, p, n);
    w->size += n;
}

static void le(unsigned char *b, uint64_t v, int n)
{
    int i;
    for (i = 0; i < n; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

static void put_u32(ckpt_writer *w, uint32_t v)
{
    unsigned char b[4];
    le(b, v, 4);
    put(w, b, 4);
}

static void put_u64(ckpt_writer *w, uint64_t v)
{
    unsigned char b[8];
    le(b, v, 8);
    put(w, b, 8);
}

static void put_f32(ckpt_writer *w, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    put_u32(w, u);
}

static void put_f64(ckpt_writer *w, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    put_u64(w, u);
}

static void put_str(ckpt_writer *w, const char *s)
{
    put_u32(w, (uint32_t)strlen(s));
    put(w, s, strlen(s));
}

/* The configuration a resumed run must share (the number of workers,
 * shards and threads may change). */
static void put_config(ckpt_writer *w, const config *cfg, int train_n, size_t nparam)
{
    put_u64(w, cfg->seed);
    put_u32(w, (uint32_t)cfg->batch);
    put_u32(w, (uint32_t)cfg->epochs);
    put_u32(w, (uint32_t)train_n);
    put_f64(w, cfg->lr);
    put_f64(w, cfg->lr_final);
    put_f64(w, cfg->mu);
    put_u32(w, (uint32_t)cfg->blocks);
    put_u32(w, cfg->block_size);
    put_u32(w, (uint32_t)nparam);
}

void ckpt_begin(ckpt_writer *w, const char *method, const config *cfg, int rank, int train_n,
                const ckpt_pos *pos, const float *x, size_t nparam)
{
    size_t k;
    memset(w, 0, sizeof *w);
    put(w, MAGIC, 8);
    put_u32(w, FORMAT);
    put_u64(w, 0); /* body length, set by ckpt_finish */
    put_str(w, method);
    put_u32(w, (uint32_t)cfg->workers);
    put_u32(w, (uint32_t)cfg->shards);
    put_u32(w, (uint32_t)rank);
    put_config(w, cfg, train_n, nparam);
    put_u32(w, pos->epoch);
    put_u64(w, pos->sample);
    put_u32(w, pos->estep);
    put_u64(w, pos->global);
    put_f64(w, pos->sched_from);
    put_u64(w, pos->sched_n);
    put_u64(w, pos->sched_k);
    put_f64(w, pos->loss_sum);
    put_f64(w, pos->bytes);
    put_f32(w, pos->lr_last);
    for (k = 0; k < nparam; k++)
        put_f32(w, x[k]);
    w->count_at = w->size;
    put_u32(w, 0); /* blob count, set by ckpt_finish */
}

void ckpt_put_blob(ckpt_writer *w, uint32_t kind, uint32_t slot, uint32_t tensor,
                   uint64_t offset, uint64_t len, const void *blob, size_t size)
{
    put_u32(w, kind);
    put_u32(w, slot);
    put_u32(w, tensor);
    put_u64(w, offset);
    put_u64(w, len);
    put_u64(w, size);
    put(w, blob, size);
    w->nblobs++;
}

/* fsync the directory, so that a rename in it reaches the disk. */
static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY), rc;
    if (fd < 0)
        return -1;
    rc = fsync(fd);
    close(fd);
    return rc;
}

/* data -> path, atomically: a temporary file beside it, flushed and synced,
 * renamed over path. keep_prev: the file it replaces becomes path.prev. */
static int write_atomic(const char *dir, const char *path, const void *data, size_t size,
                        int keep_prev, char *err, size_t errcap)
{
    char tmp[4200], prev[4200];
    FILE *f;
    int ok;
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    snprintf(prev, sizeof prev, "%s.prev", path);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return fail(err, errcap, "cannot create %s: %s", dir, strerror(errno));
    if (!(f = fopen(tmp, "wb")))
        return fail(err, errcap, "cannot write %s: %s", tmp, strerror(errno));
    ok = fwrite(data, 1, size, f) == size && fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (fclose(f) != 0)
        ok = 0;
    if (!ok) {
        const int e = errno;
        remove(tmp);
        return fail(err, errcap, "cannot write %s: %s", tmp, strerror(e));
    }
    if (keep_prev && rename(path, prev) != 0 && errno != ENOENT) {
        const int e = errno;
        remove(tmp);
        return fail(err, errcap, "cannot rename %s: %s", path, strerror(e));
    }
    if (rename(tmp, path) != 0) {
        const int e = errno;
        remove(tmp);
        return fail(err, errcap, "cannot rename %s to %s: %s", tmp, path, strerror(e));
    }
    if (sync_dir(dir) != 0)
        return fail(err, errcap, "cannot sync %s: %s", dir, strerror(errno));
    return 0;
}

static void file_name(char *buf, size_t cap, const char *dir, int rank, int workers)
{
    snprintf(buf, cap, "%s/rank-%d-of-%d.ckpt", dir, rank, workers);
}

int ckpt_finish(ckpt_writer *w, const char *dir, int rank, int workers, uint32_t *crc,
                uint64_t *size, char *err, size_t errcap)
{
    char path[4096];
    int rc;
    le(w->data + w->count_at, w->nblobs, 4);
    le(w->data + 12, w->size - HEAD, 8);
    check(gw_crc32c(w->data, w->size, crc), "gw_crc32c"); /* also the manifest's */
    put_u32(w, *crc);
    *size = w->size;
    file_name(path, sizeof path, dir, rank, workers);
    rc = write_atomic(dir, path, w->data, w->size, 1, err, errcap);
    free(w->data);
    memset(w, 0, sizeof *w);
    return rc;
}

int ckpt_write_manifest(const char *dir, const char *method, int workers, int shards,
                        uint64_t global, const uint32_t *crc, const uint64_t *size, char *err,
                        size_t errcap)
{
    char path[4096];
    ckpt_writer w;
    char line[256];
    uint32_t sum;
    int r, rc;
    memset(&w, 0, sizeof w);
    snprintf(line, sizeof line, "%s\nmethod %s\nworkers %d\nshards %d\nstep %llu\n",
             MANIFEST_TITLE, method, workers, shards, (unsigned long long)global);
    put(&w, line, strlen(line));
    for (r = 0; r < workers; r++) {
        snprintf(line, sizeof line, "file rank-%d-of-%d.ckpt crc32c %08x bytes %llu\n", r,
                 workers, (unsigned)crc[r], (unsigned long long)size[r]);
        put(&w, line, strlen(line));
    }
    check(gw_crc32c(w.data, w.size, &sum), "gw_crc32c");
    snprintf(line, sizeof line, "crc32c %08x\n", (unsigned)sum);
    put(&w, line, strlen(line));
    snprintf(path, sizeof path, "%s/manifest", dir);
    rc = write_atomic(dir, path, w.data, w.size, 0, err, errcap);
    free(w.data);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Reading                                                                    */
/* ------------------------------------------------------------------------ */
/* The whole file; 0, or -1 with errno set (ENOENT: no such file). */
static int slurp(const char *path, unsigned char **data, size_t *size)
{
    FILE *f = fopen(path, "rb");
    unsigned char *d = NULL;
    size_t n = 0, cap = 0, got;
    if (!f)
        return -1;
    do {
        if (n == cap) {
            unsigned char *nd;
            cap = cap ? 2 * cap : 1 << 20;
            if (!(nd = realloc(d, cap)))
                die("out of memory");
            d = nd;
        }
        got = fread(d + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    if (ferror(f)) {
        const int e = errno;
        fclose(f);
        free(d);
        errno = e ? e : EIO;
        return -1;
    }
    fclose(f);
    *data = d;
    *size = n;
    return 0;
}

typedef struct reader {
    const unsigned char *p;
    size_t left;
    int bad;
} reader;

static const unsigned char *take(reader *r, size_t n)
{
    const unsigned char *p = r->p;
    if (r->bad || n > r->left) {
        r->bad = 1;
        return NULL;
    }
    r->p += n;
    r->left -= n;
    return p;
}

static uint64_t get_le(reader *r, int n)
{
    const unsigned char *p = take(r, (size_t)n);
    uint64_t v = 0;
    int i;
    if (!p)
        return 0;
    for (i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint32_t get_u32(reader *r) { return (uint32_t)get_le(r, 4); }
static uint64_t get_u64(reader *r) { return get_le(r, 8); }
static float get_f32(reader *r)
{
    const uint32_t u = get_u32(r);
    float v;
    memcpy(&v, &u, 4);
    return v;
}
static double get_f64(reader *r)
{
    const uint64_t u = get_u64(r);
    double v;
    memcpy(&v, &u, 8);
    return v;
}

/* The file's bytes are whole (magic, length, CRC): 0, or -1 with why. */
static int check_whole(const char *path, const unsigned char *d, size_t size, char *err,
                       size_t errcap)
{
    uint64_t body;
    uint32_t crc, want, format;
    reader r;
    if (size < HEAD + 4 || memcmp(d, MAGIC, 8) != 0)
        return fail(err, errcap, "%s: %zu bytes, not a train_fmnist checkpoint file, or cut short",
                    path, size);
    r.p = d + 8;
    r.left = size - 8;
    r.bad = 0;
    if ((format = get_u32(&r)) != FORMAT)
        return fail(err, errcap, "%s: checkpoint format %u, this program reads %d", path,
                    (unsigned)format, FORMAT);
    body = get_u64(&r);
    if (body > size || (uint64_t)size != HEAD + body + 4)
        return fail(err, errcap,
                    "%s: %zu bytes, its header says %llu: cut short (a write that did not "
                    "finish) or extended",
                    path, size, (unsigned long long)(HEAD + body + 4));
    r.p = d + size - 4;
    r.left = 4;
    want = get_u32(&r);
    check(gw_crc32c(d, size - 4, &crc), "gw_crc32c");
    if (crc != want)
        return fail(err, errcap, "%s: checksum mismatch (CRC32C %08x, stored %08x): the file is "
                                 "damaged",
                    path, (unsigned)crc, (unsigned)want);
    return 0;
}

/* What a file holds, parsed into f (its data already checked whole). */
static int parse(const char *path, ckpt_file *f, size_t nparam, char *err, size_t errcap)
{
    reader r;
    uint32_t len, k;
    const unsigned char *s;
    r.p = f->data + HEAD;
    r.left = f->size - HEAD - 4;
    r.bad = 0;
    len = get_u32(&r);
    s = take(&r, len);
    if (!s || len >= sizeof f->method)
        return fail(err, errcap, "%s: malformed (method name)", path);
    memcpy(f->method, s, len);
    f->method[len] = '\0';
    f->workers = get_u32(&r);
    f->shards = get_u32(&r);
    f->rank = get_u32(&r);
    take(&r, 8 + 4 * 3 + 8 * 3 + 4 * 3); /* the configuration: compared by ckpt_load */
    f->pos.epoch = get_u32(&r);
    f->pos.sample = get_u64(&r);
    f->pos.estep = get_u32(&r);
    f->pos.global = get_u64(&r);
    f->pos.sched_from = get_f64(&r);
    f->pos.sched_n = get_u64(&r);
    f->pos.sched_k = get_u64(&r);
    f->pos.loss_sum = get_f64(&r);
    f->pos.bytes = get_f64(&r);
    f->pos.lr_last = get_f32(&r);
    f->x = xmalloc(sizeof(float) * nparam);
    for (k = 0; k < nparam; k++)
        f->x[k] = get_f32(&r);
    f->nblobs = get_u32(&r);
    if (r.bad || f->nblobs > 1u << 20)
        return fail(err, errcap, "%s: malformed (header)", path);
    f->blob = xcalloc(f->nblobs, sizeof *f->blob);
    for (k = 0; k < f->nblobs; k++) {
        ckpt_blob *b = &f->blob[k];
        b->kind = get_u32(&r);
        b->slot = get_u32(&r);
        b->tensor = get_u32(&r);
        b->offset = get_u64(&r);
        b->len = get_u64(&r);
        b->size = (size_t)get_u64(&r);
        b->data = take(&r, b->size);
        if (r.bad)
            return fail(err, errcap, "%s: malformed (blob %u)", path, (unsigned)k);
    }
    if (r.left != 0)
        return fail(err, errcap, "%s: malformed (%zu bytes after the last blob)", path, r.left);
    return 0;
}

/* The saved configuration against this run's; 0 if they agree. */
static int same_config(const char *path, const ckpt_file *f, const config *cfg, int train_n,
                       size_t nparam, char *err, size_t errcap)
{
    reader r;
    ckpt_writer mine;
    size_t at;
    int rc = 0;
    r.p = f->data + HEAD;
    r.left = f->size - HEAD - 4;
    r.bad = 0;
    take(&r, 4 + strlen(f->method) + 12);
    at = (size_t)(r.p - f->data);
    memset(&mine, 0, sizeof mine);
    put_config(&mine, cfg, train_n, nparam);
    if (at + mine.size > f->size || memcmp(f->data + at, mine.data, mine.size) != 0) {
        r.p = f->data + at;
        r.left = f->size - at;
        {
            const uint64_t seed = get_u64(&r);
            const uint32_t batch = get_u32(&r), epochs = get_u32(&r), n = get_u32(&r);
            const double lr = get_f64(&r), lr_final = get_f64(&r), mu = get_f64(&r);
            rc = fail(err, errcap,
                      "%s was saved by a run of another configuration (seed %llu, batch %u, "
                      "%u epochs, %u training samples, lr %g -> %g, mu %g, its --blocks): "
                      "resume with the options it was saved with (only --workers, --shards and "
                      "--threads may change)",
                      path, (unsigned long long)seed, (unsigned)batch, (unsigned)epochs,
                      (unsigned)n, lr, lr * lr_final, mu);
        }
    }
    free(mine.data);
    return rc;
}

static int same_pos(const ckpt_pos *a, const ckpt_pos *b)
{
    return a->epoch == b->epoch && a->sample == b->sample && a->estep == b->estep &&
           a->global == b->global && a->sched_from == b->sched_from && a->sched_n == b->sched_n &&
           a->sched_k == b->sched_k && a->loss_sum == b->loss_sum && a->bytes == b->bytes &&
           a->lr_last == b->lr_last;
}

static void file_free(ckpt_file *f)
{
    free(f->data);
    free(f->x);
    free(f->blob);
    memset(f, 0, sizeof *f);
}

typedef struct manifest {
    char method[32];
    int workers, shards;
    unsigned long long step;
    uint32_t *crc;
    unsigned long long *size;
} manifest;

static int read_manifest(const char *dir, manifest *m, char *err, size_t errcap)
{
    char path[4096], line[512], name[128];
    unsigned char *d;
    size_t size, pos = 0, body_end = 0;
    unsigned stored = 0;
    uint32_t crc;
    int nfile = 0, have_crc = 0;
    memset(m, 0, sizeof *m);
    m->workers = -1;
    snprintf(path, sizeof path, "%s/manifest", dir);
    if (slurp(path, &d, &size) != 0)
        return fail(err, errcap,
                    errno == ENOENT ? "%s: no manifest: %s holds no complete checkpoint (the "
                                      "manifest is written once every rank's file is)"
                                    : "cannot read %s: %s",
                    path, errno == ENOENT ? dir : strerror(errno));
    while (pos < size) {
        size_t end = pos;
        while (end < size && d[end] != '\n')
            end++;
        if (end - pos >= sizeof line)
            break;
        memcpy(line, d + pos, end - pos);
        line[end - pos] = '\0';
        if (sscanf(line, "crc32c %x", &stored) == 1 && !strncmp(line, "crc32c ", 7)) {
            body_end = pos;
            have_crc = 1;
            break;
        }
        if (pos == 0 && strcmp(line, MANIFEST_TITLE) != 0)
            break;
        if (sscanf(line, "method %31s", m->method) == 1) {
        } else if (sscanf(line, "workers %d", &m->workers) == 1 && m->workers > 0 &&
                   m->workers <= 4096) {
            m->crc = xcalloc((size_t)m->workers, sizeof *m->crc);
            m->size = xcalloc((size_t)m->workers, sizeof *m->size);
        } else if (sscanf(line, "shards %d", &m->shards) == 1) {
        } else if (sscanf(line, "step %llu", &m->step) == 1) {
        } else if (!strncmp(line, "file ", 5) && m->crc && nfile < m->workers) {
            unsigned c = 0;
            unsigned long long b = 0;
            char want[128];
            snprintf(want, sizeof want, "rank-%d-of-%d.ckpt", nfile, m->workers);
            if (sscanf(line, "file %127s crc32c %x bytes %llu", name, &c, &b) != 3 ||
                strcmp(name, want) != 0)
                break;
            m->crc[nfile] = c;
            m->size[nfile] = b;
            nfile++;
        }
        pos = end + 1;
    }
    if (!have_crc || m->workers <= 0 || nfile != m->workers || !m->method[0] || m->shards <= 0) {
        free(d);
        return fail(err, errcap, "%s: not a whole train_fmnist manifest", path);
    }
    check(gw_crc32c(d, body_end, &crc), "gw_crc32c");
    free(d);
    if (crc != stored)
        return fail(err, errcap, "%s: checksum mismatch: the manifest is damaged", path);
    return 0;
}

/* Rank r's file: path itself, or path.prev when a rank died between the
 * renames of the next checkpoint; only a file the manifest names (CRC,
 * size) is taken. */
static int read_rank(const char *dir, const manifest *m, int r, ckpt_file *f, char *err,
                     size_t errcap)
{
    char path[4096], prev[4200];
    char why[8600] = "";
    int k;
    file_name(path, sizeof path, dir, r, m->workers);
    snprintf(prev, sizeof prev, "%s.prev", path);
    for (k = 0; k < 2; k++) {
        const char *p = k ? prev : path;
        char e[8600];
        memset(f, 0, sizeof *f);
        if (slurp(p, &f->data, &f->size) != 0) {
            if (!k)
                snprintf(why, sizeof why, "%s: %s", path,
                         errno == ENOENT ? "missing" : strerror(errno));
            continue;
        }
        if (check_whole(p, f->data, f->size, e, sizeof e) == 0) {
            const unsigned char *c = f->data + f->size - 4; /* the CRC it stores */
            f->crc = (uint32_t)c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 |
                     (uint32_t)c[3] << 24;
            if (f->crc == m->crc[r] && f->size == m->size[r])
                return 0;
            snprintf(e, sizeof e,
                     "%s is whole but of another checkpoint (CRC32C %08x, %zu bytes; the "
                     "manifest names %08x, %llu bytes)",
                     p, (unsigned)f->crc, f->size, (unsigned)m->crc[r], m->size[r]);
        }
        if (!k)
            snprintf(why, sizeof why, "%s", e);
        file_free(f);
    }
    return fail(err, errcap, "%s; refusing to resume from %s", why, dir);
}

int ckpt_load(ckpt_set *set, const char *dir, const char *method, const config *cfg, int train_n,
              size_t nparam, char *err, size_t errcap)
{
    manifest m;
    int r;
    memset(set, 0, sizeof *set);
    if (read_manifest(dir, &m, err, errcap) != 0)
        goto fail;
    if (strcmp(m.method, method) != 0) {
        fail(err, errcap, "%s holds a checkpoint of method %s, not %s", dir, m.method, method);
        goto fail;
    }
    snprintf(set->method, sizeof set->method, "%s", m.method);
    set->workers = (uint32_t)m.workers;
    set->shards = (uint32_t)m.shards;
    set->global = m.step;
    set->file = xcalloc((size_t)m.workers, sizeof *set->file);
    for (r = 0; r < m.workers; r++) {
        ckpt_file *f = &set->file[r];
        char path[4096];
        file_name(path, sizeof path, dir, r, m.workers);
        if (read_rank(dir, &m, r, f, err, errcap) != 0 ||
            parse(path, f, nparam, err, errcap) != 0 ||
            same_config(path, f, cfg, train_n, nparam, err, errcap) != 0)
            goto fail;
        if (strcmp(f->method, method) != 0 || f->workers != set->workers ||
            f->shards != set->shards || f->rank != (uint32_t)r || f->pos.global != m.step) {
            fail(err, errcap,
                 "%s/rank-%d-of-%d.ckpt does not match the manifest (method %s, %u workers, "
                 "%u shards, rank %u, step %llu)",
                 dir, r, m.workers, f->method, (unsigned)f->workers, (unsigned)f->shards,
                 (unsigned)f->rank, (unsigned long long)f->pos.global);
            goto fail;
        }
        if (!same_pos(&f->pos, &set->file[0].pos) ||
            memcmp(f->x, set->file[0].x, sizeof(float) * nparam) != 0) {
            fail(err, errcap, "%s: the ranks' files disagree on the position or the parameters",
                 dir);
            goto fail;
        }
    }
    free(m.crc);
    free(m.size);
    return 0;
fail:
    free(m.crc);
    free(m.size);
    ckpt_set_free(set);
    return -1;
}

void ckpt_set_free(ckpt_set *set)
{
    uint32_t r;
    if (set->file)
        for (r = 0; r < set->workers; r++)
            file_free(&set->file[r]);
    free(set->file);
    memset(set, 0, sizeof *set);
}
