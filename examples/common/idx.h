/* idx.h: Fashion-MNIST (or MNIST) in the idx format, gzipped or plain. */
#ifndef EXAMPLES_IDX_H
#define EXAMPLES_IDX_H

#define IDX_IMG_SIDE 28
#define IDX_IMG_SIZE (IDX_IMG_SIDE * IDX_IMG_SIDE)
#define IDX_CLASSES 10
#define IDX_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"
#define EXIT_SKIP 77 /* meson's "skipped": the data is not installed */

typedef struct dataset {
    int n;
    unsigned char *images; /* n * IDX_IMG_SIZE bytes, 0..255 */
    unsigned char *labels; /* n bytes, 0..IDX_CLASSES-1 */
} dataset;

/* Load DIR/PREFIX-images-idx3-ubyte[.gz] and DIR/PREFIX-labels-idx1-ubyte[.gz]
 * (PREFIX "train" or "t10k"). Returns 0, EXIT_SKIP when a file does not
 * exist (with a hint on how to install it), 1 on a malformed file. On error
 * *ds is left empty. */
int idx_load(const char *dir, const char *prefix, dataset *ds);
void idx_free(dataset *ds);

#endif
