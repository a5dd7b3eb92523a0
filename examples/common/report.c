#define _POSIX_C_SOURCE 200809L

#include "report.h"

#include <stdio.h>
#include <unistd.h>

void progress_start(progress_line *p, const char *label, int epoch, int epochs, int steps)
{
    p->label = label;
    p->epoch = epoch;
    p->epochs = epochs;
    p->steps = steps;
    p->tty = isatty(fileno(stderr));
    p->last_decile = 0;
}

int progress_quiet = 0;

void progress_step(progress_line *p, int step, double loss)
{
    const int pct = (int)(100L * step / p->steps);
    if (progress_quiet)
        return;
    if (p->tty) {
        if (step == p->steps || step % 5 == 0)
            fprintf(stderr, "\r  [%-4s] epoch %d/%d  step %d/%d  %3d%%  loss %.4f   ", p->label,
                    p->epoch, p->epochs, step, p->steps, pct, loss);
        if (step == p->steps)
            fprintf(stderr, "\r%70s\r", "");
        fflush(stderr);
    } else {
        const int decile = (int)(10L * step / p->steps);
        if (decile > p->last_decile && step < p->steps) {
            p->last_decile = decile;
            fprintf(stderr, "  [%s] epoch %d/%d  step %d/%d  %d%%  loss %.4f\n", p->label,
                    p->epoch, p->epochs, step, p->steps, pct, loss);
        }
    }
}
