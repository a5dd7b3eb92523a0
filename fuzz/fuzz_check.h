/* Shared by the fuzz targets and the seed writer: an invariant check that
 * names itself before aborting (libFuzzer reports the abort as a crash and
 * keeps the input). */
#ifndef GW_FUZZ_CHECK_H
#define GW_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(cond)                                                              \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                           \
            abort();                                                                  \
        }                                                                             \
    } while (0)

#endif /* GW_FUZZ_CHECK_H */
