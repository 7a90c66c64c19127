/* Progress bar on a terminal's stderr. */
#include "term/progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quiver/base.h"

/* Work shorter than this never shows a bar; redraws are rate-limited to
 * this period too, so a fast loop does not spend its time on the terminal. */
#define SHOW_AFTER_NS 400000000ull
#define REDRAW_NS 100000000ull

void cli_progress_start(struct cli_progress *p, const char *label, uint64_t total) {
    memset(p, 0, sizeof *p);
    const char *off = getenv("QV_NO_PROGRESS");
    p->enabled = isatty(STDERR_FILENO) && !(off && *off && strcmp(off, "0") != 0);
    p->label = label;
    p->total = total;
    p->start_ns = qv_now_ns();
}

void cli_progress_update(struct cli_progress *p, uint64_t done) {
    if (!p->enabled) return;
    uint64_t now = qv_now_ns();
    if (now - p->start_ns < SHOW_AFTER_NS || now - p->last_ns < REDRAW_NS) return;
    p->last_ns = now;
    double secs = (double)(now - p->start_ns) / 1e9;
    if (p->total) {
        double frac = (double)done / (double)p->total;
        if (frac > 1) frac = 1;
        char bar[31];
        int fill = (int)(frac * 30);
        for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '-';
        bar[30] = 0;
        double eta = frac > 0 ? secs / frac - secs : 0;
        fprintf(stderr, "\r%s [%s] %5.1f%%  %.1fs elapsed, ~%.0fs left ", p->label, bar,
                frac * 100, secs, eta);
    } else {
        fprintf(stderr, "\r%s %llu  %.1fs ", p->label, (unsigned long long)done, secs);
    }
    fflush(stderr);
    p->drawn = 1;
}

void cli_progress_finish(struct cli_progress *p) {
    if (!p->drawn) return;
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
    p->drawn = 0;
}
