/* report.h: the progress line on stderr: redrawn in place on a terminal,
 * one line per 10% of an epoch otherwise (CI logs). */
#ifndef EXAMPLES_REPORT_H
#define EXAMPLES_REPORT_H

typedef struct progress_line {
    const char *label;
    int epoch, epochs, steps, tty, last_decile;
} progress_line;

/* 1: no progress lines at all (the MPI ranks other than 0). */
extern int progress_quiet;

void progress_start(progress_line *p, const char *label, int epoch, int epochs, int steps);
/* After step `step` (1-based) with running mean loss `loss`. */
void progress_step(progress_line *p, int step, double loss);

#endif
