/*
 * A progress bar on stderr, drawn only when stderr is a terminal (piped or
 * redirected output stays clean, and tests never see it) and only once the
 * work has taken long enough to be worth watching (short commands stay
 * silent). QV_NO_PROGRESS=1 turns it off.
 */
#ifndef QV_CLI_PROGRESS_H
#define QV_CLI_PROGRESS_H

#include <stdint.h>

struct cli_progress {
    int enabled;         /* stderr is a TTY */
    int drawn;           /* something is on the line that finish must clear */
    const char *label;
    uint64_t total;      /* 0: unknown (a counter without a bar) */
    uint64_t start_ns, last_ns;
};

void cli_progress_start(struct cli_progress *p, const char *label, uint64_t total);
void cli_progress_update(struct cli_progress *p, uint64_t done);
/* Clears the line so that what follows starts clean. */
void cli_progress_finish(struct cli_progress *p);

#endif
