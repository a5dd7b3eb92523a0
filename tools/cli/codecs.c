/* gradwire codecs: every built-in codec (gw_codec_list) with its parameters
 * in wire order (gw_codec_params), each one's range (gw_codec_param_bounds)
 * and the value a new spec holds (gw_codec_spec_create + gw_codec_spec_get;
 * the float parameters through gw_codec_spec_get_f32). */
#include <string.h>

#include <gradwire.h>

#include "cli.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gradwire codecs\n"
            "Lists every built-in codec with its parameters (wire order), their ranges and the\n"
            "value a new codec spec holds. threshold and budget are floats (the ranges are of\n"
            "their bit patterns, shown as floats).\n");
}

static int is_float_param(gw_param p)
{
    return p == GW_PARAM_THRESHOLD || p == GW_PARAM_BUDGET;
}

static int print_codec(gw_codec_id id)
{
    gw_param params[64];
    size_t count = 0, i;
    gw_codec_spec *spec = NULL;
    const char *name = gw_codec_name(id);
    gw_status st = gw_codec_params(id, params, sizeof params / sizeof params[0], &count);
    if (st == GW_OK && count > sizeof params / sizeof params[0]) st = GW_ERR_BUFFER_TOO_SMALL;
    if (st == GW_OK) st = gw_codec_spec_create(&spec, id);
    if (st != GW_OK) {
        fprintf(stderr, "gradwire codecs: codec %d: %s\n", (int)id, gw_status_name(st));
        return -1;
    }
    printf("%s (%d)\n", name ? name : "?", (int)id);
    if (count == 0) printf("  (no parameters)\n");
    for (i = 0; i < count; ++i) {
        int64_t lo = 0, hi = 0, def = 0, cur = 0;
        const char *pname = gw_param_name(params[i]);
        st = gw_codec_param_bounds(id, params[i], &lo, &hi, &def);
        if (st != GW_OK) {
            fprintf(stderr, "gradwire codecs: %s: %s\n", pname ? pname : "?", gw_status_name(st));
            gw_codec_spec_free(spec);
            return -1;
        }
        printf("  %-12s ", pname ? pname : "?");
        if (is_float_param(params[i])) {
            float f = 0;
            gw_codec_spec_get_f32(spec, params[i], &f);
            printf("%.9g..%.9g  default %.9g", (double)cli_f32_from_bits((uint32_t)lo),
                   (double)cli_f32_from_bits((uint32_t)hi), (double)f);
            if ((int64_t)(uint32_t)def != def || cli_f32_from_bits((uint32_t)def) != f)
                printf(" (bounds say %.9g)", (double)cli_f32_from_bits((uint32_t)def));
            printf(" (float)\n");
        } else {
            gw_codec_spec_get(spec, params[i], &cur);
            printf("%lld..%lld  default %lld", (long long)lo, (long long)hi, (long long)cur);
            if (cur != def) printf(" (bounds say %lld)", (long long)def);
            printf("\n");
        }
    }
    gw_codec_spec_free(spec);
    return 0;
}

int cmd_codecs(int argc, char **argv)
{
    gw_codec_id ids[256];
    size_t count = 0, i;
    if (argc > 0) {
        if (cli_is_help(argv[0])) {
            usage(stdout);
            return CLI_OK;
        }
        fprintf(stderr, "gradwire codecs: unexpected argument '%s'\n", argv[0]);
        usage(stderr);
        return CLI_USAGE;
    }
    if (gw_codec_list(ids, sizeof ids / sizeof ids[0], &count) != GW_OK ||
        count > sizeof ids / sizeof ids[0]) {
        fprintf(stderr, "gradwire codecs: gw_codec_list failed\n");
        return CLI_BAD;
    }
    printf("%lu codecs; each parameter: range, then the value a new spec holds\n",
           (unsigned long)count);
    for (i = 0; i < count; ++i)
        if (print_codec(ids[i]) != 0) return CLI_BAD;
    return CLI_OK;
}
