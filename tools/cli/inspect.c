/* gradwire inspect FRAME...: each frame's header fields as the bytes spell
 * them (whatever is present, even of a bad frame), both checksums recomputed,
 * the library's verdict (gw_frame_inspect), and of a valid frame its codec
 * parameters, sizes and the statistics of its decoded values. A file may hold
 * several frames back to back (a stream); the first bad one ends the file.
 * Every read is bounded by the bytes given; decoding is capped by
 * --max-elements since a small sparse frame may claim 2^40 elements. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gradwire.h>

#include "cli.h"

#define FIELD "  %-13s "

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gradwire inspect [--max-elements N] FRAME [FRAME...]\n"
            "  FRAME             a file holding one or more frames back to back; '-' reads stdin;\n"
            "                    hex text as in tests/vectors/*.frame.hex is accepted too\n"
            "  --max-elements N  decode (for the statistics) frames of at most N elements\n"
            "                    (default 64M; K, M, G suffixes)\n"
            "Prints the header fields, both CRC32C checksums, the library's verdict, the codec's\n"
            "parameters, the sizes and the decoded values' min, max, mean, L2 norm and nonzero\n"
            "count. Exit status: 0 every frame valid, 1 a frame is bad, 2 usage or read error.\n");
}

static uint64_t le(const unsigned char *p, size_t bytes)
{
    uint64_t v = 0;
    while (bytes--) v = v << 8 | p[bytes];
    return v;
}

static const char *codec_label(unsigned id)
{
    const char *name = gw_codec_name((gw_codec_id)id);
    return name ? name : "unknown";
}

/* The header as its bytes spell it, field by field while they last; the
 * recomputed checksums. Returns nothing: the verdict is the library's. */
static void print_header(const unsigned char *p, size_t size)
{
    unsigned version;
    size_t hdr, plen_at, len_at;
    uint32_t crc = 0;
    if (size < 4 || memcmp(p, "GWFR", 4) != 0) {
        size_t i, have = size < 4 ? size : 4;
        printf(FIELD, "magic");
        if (have == 0) printf("(no bytes)\n");
        for (i = 0; i < have; ++i) printf("%02x ", p[i]);
        if (have) printf(memcmp(p, "GWFR", have) == 0 ? "(GWFR cut short)\n" : "(not GWFR)\n");
        return;
    }
    printf(FIELD "GWFR\n", "magic");
    if (size < 5) return;
    version = p[4];
    printf(FIELD "%u\n", "format", version);
    if (version != 1 && version != 2) return;
    if (size >= 6) printf(FIELD "%s (%u)\n", "codec", codec_label(p[5]), (unsigned)p[5]);
    if (size >= 8) printf(FIELD "0x%04x\n", "flags", (unsigned)le(p + 6, 2));
    if (version == 2) {
        if (size >= 16) {
            uint64_t tag = le(p + 8, 8);
            printf(FIELD "0x%016llx (tensor %lu, round %lu)\n", "tag", (unsigned long long)tag,
                   (unsigned long)GW_TAG_TENSOR(tag), (unsigned long)GW_TAG_STEP(tag));
        }
        len_at = 16;
        plen_at = 32;
        hdr = GW_FRAME_HEADER_SIZE;
    } else {
        len_at = 8;
        plen_at = 24;
        hdr = 26;
    }
    if (size >= len_at + 8)
        printf(FIELD "%llu\n", "elements", (unsigned long long)le(p + len_at, 8));
    if (size >= len_at + 16)
        printf(FIELD "%llu bytes\n", "payload", (unsigned long long)le(p + len_at + 8, 8));
    if (size >= plen_at + 2)
        printf(FIELD "%u bytes\n", "params size", (unsigned)le(p + plen_at, 2));
    if (version == 2) {
        if (size >= hdr) {
            uint32_t stored = (uint32_t)le(p + 36, 4);
            gw_crc32c(p, 36, &crc);
            if (crc == stored) printf(FIELD "ok (0x%08x)\n", "header crc", (unsigned)crc);
            else
                printf(FIELD "MISMATCH (stored 0x%08x, computed 0x%08x)\n", "header crc",
                       (unsigned)stored, (unsigned)crc);
        } else {
            printf(FIELD "missing (%lu of %lu header bytes)\n", "header crc", (unsigned long)size,
                   (unsigned long)hdr);
        }
    } else {
        printf(FIELD "none (format 1)\n", "header crc");
    }
    if (size >= hdr) {
        uint64_t plen = le(p + plen_at, 2), len = le(p + len_at + 8, 8);
        /* hdr + plen + len + 4 <= size, written so that nothing overflows */
        if (len <= size && size - len >= hdr + plen + 4) {
            size_t body = (size_t)(hdr + plen + len);
            uint32_t stored = (uint32_t)le(p + body, 4);
            gw_crc32c(p, body, &crc);
            if (crc == stored) printf(FIELD "ok (0x%08x)\n", "frame crc", (unsigned)crc);
            else
                printf(FIELD "MISMATCH (stored 0x%08x, computed 0x%08x)\n", "frame crc",
                       (unsigned)stored, (unsigned)crc);
            return;
        }
    }
    printf(FIELD "missing (the frame is cut short)\n", "frame crc");
}

static void print_params(const unsigned char *p, size_t size)
{
    gw_codec_spec *spec = NULL;
    gw_codec_id codec;
    gw_param params[64];
    size_t count = 0, i;
    printf(FIELD, "params");
    if (gw_frame_spec(p, size, &spec) != GW_OK || gw_codec_spec_codec(spec, &codec) != GW_OK ||
        gw_codec_params(codec, params, sizeof params / sizeof params[0], &count) != GW_OK) {
        printf("(unreadable)\n");
        gw_codec_spec_free(spec);
        return;
    }
    if (count == 0) printf("(none)");
    for (i = 0; i < count; ++i) {
        const char *name = gw_param_name(params[i]);
        printf("%s%s=", i ? " " : "", name ? name : "?");
        if (params[i] == GW_PARAM_THRESHOLD || params[i] == GW_PARAM_BUDGET) {
            float f = 0;
            gw_codec_spec_get_f32(spec, params[i], &f);
            printf("%.9g", (double)f);
        } else {
            int64_t v = 0;
            gw_codec_spec_get(spec, params[i], &v);
            printf("%lld", (long long)v);
        }
    }
    printf("\n");
    gw_codec_spec_free(spec);
}

/* Decode the valid frame p[0..size) of `count` elements; print its statistics. */
static void print_stats(const unsigned char *p, size_t size, uint64_t count, uint64_t max_elements)
{
    float *x, lo, hi;
    double sum = 0, sumsq = 0;
    uint64_t i, nonzero = 0, got = 0;
    gw_status st;
    if (count > max_elements) {
        printf(FIELD "skipped: %llu elements, more than --max-elements %llu\n", "stats",
               (unsigned long long)count, (unsigned long long)max_elements);
        return;
    }
    x = (float *)malloc(count ? (size_t)count * sizeof(float) : 1);
    if (!x) {
        printf(FIELD "skipped: out of memory for %llu elements\n", "stats",
               (unsigned long long)count);
        return;
    }
    st = gw_decode(p, size, x, count, &got);
    if (st != GW_OK) {
        printf(FIELD "decode failed: %s: %s\n", "stats", gw_status_name(st), gw_status_str(st));
        free(x);
        return;
    }
    lo = hi = count ? x[0] : 0.0f;
    for (i = 0; i < got; ++i) {
        double v = x[i];
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
        sum += v;
        sumsq += v * v;
        nonzero += x[i] != 0.0f;
    }
    free(x);
    if (got == 0) {
        printf(FIELD "-\n" FIELD "-\n" FIELD "-\n", "min", "max", "mean");
    } else {
        printf(FIELD "%.9g\n", "min", (double)lo);
        printf(FIELD "%.9g\n", "max", (double)hi);
        printf(FIELD "%.6g\n", "mean", sum / (double)got);
    }
    printf(FIELD "%.6g\n", "l2 norm", sqrt(sumsq));
    printf(FIELD "%llu of %llu\n", "nonzero", (unsigned long long)nonzero, (unsigned long long)got);
}

/* Inspect every frame of one input; returns CLI_OK or CLI_BAD. */
static int inspect_input(const char *path, const cli_input *in, uint64_t max_elements)
{
    static const unsigned char nothing[1] = {0};
    const unsigned char *base = in->size ? in->data : nothing;
    size_t offset = 0;
    unsigned frame_no = 0;
    printf("== %s: %lu bytes (%s)\n", strcmp(path, "-") == 0 ? "<stdin>" : path,
           (unsigned long)in->size, in->hex ? "hex" : "binary");
    do {
        const unsigned char *p = base + offset;
        size_t size = in->size - offset;
        gw_frame_info info = GW_FRAME_INFO_INIT;
        gw_status st;
        double ratio = 0;
        printf("frame %u at offset %lu\n", ++frame_no, (unsigned long)offset);
        print_header(p, size);
        st = gw_frame_inspect(p, size, &info);
        if (st != GW_OK) {
            printf(FIELD "BAD %s: %s\n", "status", gw_status_name(st), gw_status_str(st));
            return CLI_BAD;
        }
        printf(FIELD "ok\n", "status");
        print_params(p, (size_t)info.frame_size);
        gw_frame_compression_ratio(p, (size_t)info.frame_size, &ratio);
        printf(FIELD "%llu bytes (%llu as f32), ratio %.3f\n", "frame size",
               (unsigned long long)info.frame_size, (unsigned long long)(4 * info.count), ratio);
        print_stats(p, (size_t)info.frame_size, info.count, max_elements);
        offset += (size_t)info.frame_size;
    } while (offset < in->size);
    return CLI_OK;
}

int cmd_inspect(int argc, char **argv)
{
    uint64_t max_elements = (uint64_t)1 << 26;
    int i, first, rc = CLI_OK;
    for (i = 0; i < argc; ++i) {
        if (cli_is_help(argv[i])) {
            usage(stdout);
            return CLI_OK;
        } else if (strcmp(argv[i], "--max-elements") == 0) {
            if (i + 1 >= argc) {
                usage(stderr);
                return CLI_USAGE;
            }
            if (cli_parse_count(argv[++i], "--max-elements", &max_elements)) return CLI_USAGE;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "gradwire inspect: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return CLI_USAGE;
        } else {
            break;
        }
    }
    first = i;
    if (first >= argc) {
        usage(stderr);
        return CLI_USAGE;
    }
    for (i = first; i < argc; ++i) {
        cli_input in;
        int r;
        if (cli_read_input(argv[i], &in) != 0) {
            rc = CLI_USAGE;
            continue;
        }
        r = inspect_input(argv[i], &in, max_elements);
        cli_input_free(&in);
        if (r != CLI_OK && rc == CLI_OK) rc = r;
    }
    return rc;
}
