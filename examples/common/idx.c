#include "idx.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "util.h"

static uint32_t be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static int gz_read_all(gzFile f, void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n > 0) {
        unsigned chunk = n > (1u << 24) ? (1u << 24) : (unsigned)n;
        int got = gzread(f, p, chunk);
        if (got <= 0)
            return -1;
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

/* Read one idx file with `ndim` dimensions and unsigned-byte data. */
static int read_idx(const char *dir, const char *name, unsigned ndim, uint32_t dims[3],
                    unsigned char **data)
{
    char path[4096];
    unsigned char head[4 + 4 * 3];
    gzFile f;
    size_t total = 1;
    unsigned i;
    int extra;

    snprintf(path, sizeof path, "%s/%s.gz", dir, name);
    f = gzopen(path, "rb"); /* gzopen also reads plain files */
    if (!f) {
        snprintf(path, sizeof path, "%s/%s", dir, name);
        f = gzopen(path, "rb");
    }
    if (!f) {
        fprintf(stderr,
                "%s: cannot open %s/%s.gz: %s\n"
                "  Fashion-MNIST is not installed there. On Debian/Ubuntu:\n"
                "    apt-get install dataset-fashion-mnist\n"
                "  or download the four idx files (gzipped or not) and pass --data DIR.\n",
                util_prog, dir, name, errno ? strerror(errno) : "cannot open");
        return EXIT_SKIP;
    }
    if (gz_read_all(f, head, 4 + 4 * ndim) != 0) {
        fprintf(stderr, "%s: %s: truncated idx header\n", util_prog, path);
        gzclose(f);
        return 1;
    }
    /* Magic: two zero bytes, type 0x08 (unsigned byte), number of dimensions. */
    if (head[0] != 0 || head[1] != 0 || head[2] != 0x08 || head[3] != ndim) {
        fprintf(stderr, "%s: %s: not an idx%u-ubyte file (magic %02x %02x %02x %02x)\n",
                util_prog, path, ndim, head[0], head[1], head[2], head[3]);
        gzclose(f);
        return 1;
    }
    for (i = 0; i < ndim; i++) {
        dims[i] = be32(head + 4 + 4 * i);
        if (dims[i] == 0 || dims[i] > 10000000u) {
            fprintf(stderr, "%s: %s: implausible dimension %u\n", util_prog, path, dims[i]);
            gzclose(f);
            return 1;
        }
        total *= dims[i];
    }
    if (ndim == 3 && (dims[1] != IDX_IMG_SIDE || dims[2] != IDX_IMG_SIDE)) {
        fprintf(stderr, "%s: %s: images are %ux%u, expected %dx%d\n", util_prog, path, dims[1],
                dims[2], IDX_IMG_SIDE, IDX_IMG_SIDE);
        gzclose(f);
        return 1;
    }
    *data = xmalloc(total);
    if (gz_read_all(f, *data, total) != 0) {
        fprintf(stderr, "%s: %s: truncated (expected %zu data bytes)\n", util_prog, path, total);
        free(*data);
        *data = NULL;
        gzclose(f);
        return 1;
    }
    extra = gzgetc(f);
    gzclose(f);
    if (extra != -1) {
        fprintf(stderr, "%s: %s: trailing bytes after the data\n", util_prog, path);
        free(*data);
        *data = NULL;
        return 1;
    }
    return 0;
}

int idx_load(const char *dir, const char *prefix, dataset *ds)
{
    char name[64];
    uint32_t idims[3] = {0, 0, 0}, ldims[3] = {0, 0, 0};
    int rc, i;

    memset(ds, 0, sizeof *ds);
    snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
    rc = read_idx(dir, name, 3, idims, &ds->images);
    if (!rc) {
        snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
        rc = read_idx(dir, name, 1, ldims, &ds->labels);
    }
    if (!rc && idims[0] != ldims[0]) {
        fprintf(stderr, "%s: %s: %u images but %u labels\n", util_prog, prefix, idims[0],
                ldims[0]);
        rc = 1;
    }
    for (i = 0; !rc && i < (int)idims[0]; i++) {
        if (ds->labels[i] >= IDX_CLASSES) {
            fprintf(stderr, "%s: %s: label %d of sample %d out of range\n", util_prog, prefix,
                    ds->labels[i], i);
            rc = 1;
        }
    }
    if (rc) {
        idx_free(ds);
        return rc;
    }
    ds->n = (int)idims[0];
    return 0;
}

void idx_free(dataset *ds)
{
    free(ds->images);
    free(ds->labels);
    memset(ds, 0, sizeof *ds);
}
