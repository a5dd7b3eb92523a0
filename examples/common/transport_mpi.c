#include "transport_mpi.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

typedef struct mpi_ctx {
    int rank, size;
    unsigned long long *sizes; /* [worker * nslots + slot], this step */
    int *scount, *sdispl, *rcount, *rdispl;
    unsigned char *sbuf, *rbuf;
    size_t scap, rcap;
} mpi_ctx;

static mpi_ctx g;

static void mpi_check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "train_fmnist_mpi: %s failed (%d)\n", what, rc);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static unsigned char *room(unsigned char **buf, size_t *cap, size_t need)
{
    if (need > *cap) {
        free(*buf);
        *buf = xmalloc(need ? need : 1);
        *cap = need;
    }
    return *buf;
}

static int owns_worker(void *ctx, int worker)
{
    (void)ctx;
    return worker == g.rank;
}

static int owner_of_slot(int slot) { return slot % g.size; }

static int owns_slot(void *ctx, int slot)
{
    (void)ctx;
    return owner_of_slot(slot) == g.rank;
}

/* Store `size` bytes into a frame buffer the method allocated for them. */
static void put(frame_buf *fb, const unsigned char *data, size_t size)
{
    if (size > fb->cap)
        die("a received frame exceeds its buffer");
    memcpy(fb->data, data, size);
    fb->size = size;
}

static void after_push(void *ctx, sim *s)
{
    const int ns = s->nslots, me = g.rank;
    unsigned long long *mine = xmalloc(sizeof *mine * (size_t)ns);
    size_t total = 0, off;
    int o, w, j;
    (void)ctx;
    if (!g.sizes) /* [worker * nslots + slot] */
        g.sizes = xcalloc((size_t)g.size * (size_t)ns, sizeof *g.sizes);
    for (j = 0; j < ns; j++)
        mine[j] = SIM_PUSH(s, me, j)->size;
    mpi_check(MPI_Allgather(mine, ns, MPI_UNSIGNED_LONG_LONG, g.sizes, ns,
                            MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD),
              "MPI_Allgather(sizes)");
    free(mine);
    /* My frames, grouped by the rank that serves their slot. */
    for (o = 0; o < g.size; o++) {
        g.scount[o] = 0;
        for (j = o; j < ns; j += g.size)
            g.scount[o] += (int)g.sizes[(size_t)me * ns + j];
        g.sdispl[o] = o ? g.sdispl[o - 1] + g.scount[o - 1] : 0;
        total += (size_t)g.scount[o];
    }
    room(&g.sbuf, &g.scap, total);
    for (o = 0, off = 0; o < g.size; o++)
        for (j = o; j < ns; j += g.size) {
            const frame_buf *fb = SIM_PUSH(s, me, j);
            memcpy(g.sbuf + off, fb->data, fb->size);
            off += fb->size;
        }
    /* Every worker's frames of the slots I serve. */
    for (w = 0, total = 0; w < g.size; w++) {
        g.rcount[w] = 0;
        for (j = me; j < ns; j += g.size)
            g.rcount[w] += (int)g.sizes[(size_t)w * ns + j];
        g.rdispl[w] = w ? g.rdispl[w - 1] + g.rcount[w - 1] : 0;
        total += (size_t)g.rcount[w];
    }
    room(&g.rbuf, &g.rcap, total);
    mpi_check(MPI_Alltoallv(g.sbuf, g.scount, g.sdispl, MPI_BYTE, g.rbuf, g.rcount, g.rdispl,
                            MPI_BYTE, MPI_COMM_WORLD),
              "MPI_Alltoallv(push frames)");
    for (w = 0, off = 0; w < g.size; w++)
        for (j = 0; j < ns; j++) {
            const size_t size = (size_t)g.sizes[(size_t)w * ns + j];
            if (owner_of_slot(j) == me) { /* (my own frames came back to me too) */
                put(SIM_PUSH(s, w, j), g.rbuf + off, size);
                off += size;
            } else if (w != me) {
                SIM_PUSH(s, w, j)->size = size; /* counted, never read here */
            }
        }
    mpi_check(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, s->loss, 1, MPI_DOUBLE,
                            MPI_COMM_WORLD),
              "MPI_Allgather(loss)");
}

static void after_serve(void *ctx, sim *s)
{
    const int ns = s->nslots, me = g.rank;
    size_t total = 0, off;
    int r, j;
    (void)ctx;
    for (j = 0; j < ns; j++)
        g.sizes[j] = owner_of_slot(j) == me ? s->bcast[j].size : 0;
    mpi_check(MPI_Allreduce(MPI_IN_PLACE, g.sizes, ns, MPI_UNSIGNED_LONG_LONG, MPI_SUM,
                            MPI_COMM_WORLD),
              "MPI_Allreduce(broadcast sizes)");
    for (r = 0; r < g.size; r++) {
        g.rcount[r] = 0;
        for (j = r; j < ns; j += g.size)
            g.rcount[r] += (int)g.sizes[j];
        g.rdispl[r] = r ? g.rdispl[r - 1] + g.rcount[r - 1] : 0;
        total += (size_t)g.rcount[r];
    }
    room(&g.sbuf, &g.scap, (size_t)g.rcount[me]);
    for (j = me, off = 0; j < ns; j += g.size) {
        memcpy(g.sbuf + off, s->bcast[j].data, s->bcast[j].size);
        off += s->bcast[j].size;
    }
    room(&g.rbuf, &g.rcap, total);
    mpi_check(MPI_Allgatherv(g.sbuf, g.rcount[me], MPI_BYTE, g.rbuf, g.rcount, g.rdispl,
                             MPI_BYTE, MPI_COMM_WORLD),
              "MPI_Allgatherv(broadcast frames)");
    for (r = 0, off = 0; r < g.size; r++)
        for (j = r; j < ns; j += g.size) {
            if (r != me)
                put(&s->bcast[j], g.rbuf + off, (size_t)g.sizes[j]);
            off += (size_t)g.sizes[j];
        }
    mpi_check(MPI_Allreduce(MPI_IN_PLACE, s->extra_bytes, ns, MPI_DOUBLE, MPI_SUM,
                            MPI_COMM_WORLD),
              "MPI_Allreduce(extra bytes)");
}

/* Every rank's own replica against rank 0's, by CRC32C. */
static int identical(void *ctx, sim *s)
{
    uint32_t crc = 0, *all = xmalloc(sizeof *all * (size_t)g.size);
    int r, same = 1;
    (void)ctx;
    check(gw_crc32c(s->x[g.rank], sizeof(float) * MLP_NPARAM, &crc), "gw_crc32c");
    mpi_check(MPI_Allgather(&crc, 1, MPI_UINT32_T, all, 1, MPI_UINT32_T, MPI_COMM_WORLD),
              "MPI_Allgather(replica digests)");
    for (r = 1; r < g.size; r++)
        same &= all[r] == all[0];
    free(all);
    return same;
}

/* Checkpoints: entry i comes from rank i (worker i). */
static void share(void *ctx, void *v, size_t bytes)
{
    (void)ctx;
    mpi_check(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, v, (int)bytes, MPI_BYTE,
                            MPI_COMM_WORLD),
              "MPI_Allgather(checkpoint entries)");
}

static void sum(void *ctx, double *v, size_t n)
{
    (void)ctx;
    mpi_check(MPI_Allreduce(MPI_IN_PLACE, v, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce(sum)");
}

static const sim_transport mpi_transport = {NULL,  owns_worker, owns_slot, after_push,
                                            after_serve, identical, share, sum};

const sim_transport *transport_mpi(int workers)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g.size);
    if (g.size != workers) {
        if (g.rank == 0)
            fprintf(stderr, "train_fmnist_mpi: %d ranks for %d workers; run one rank per worker\n",
                    g.size, workers);
        return NULL;
    }
    g.scount = xcalloc((size_t)g.size, sizeof(int));
    g.sdispl = xcalloc((size_t)g.size, sizeof(int));
    g.rcount = xcalloc((size_t)g.size, sizeof(int));
    g.rdispl = xcalloc((size_t)g.size, sizeof(int));
    return &mpi_transport;
}

int transport_mpi_rank(void) { return g.rank; }
