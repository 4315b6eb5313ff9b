/* schedule_rules.c — the pipeline schedules' shape rules (schedule_rules.h). */
#include "sim/scenario/schedule_rules.h"

#include <stdio.h>

static int bad_m(const char *file, long long m, int pp, int global_batch, const char *expected, moe_error *err) {
    char v[96];
    if (global_batch > 0) snprintf(v, sizeof v, "%d (%lld micro-batches per pipeline, pp = %d)", global_batch, m, pp);
    else snprintf(v, sizeof v, "%lld micro-batches per pipeline, pp = %d", m, pp);
    return moe_error_input(err, file, "layout.global_batch", v, "%s", expected);
}

int scn_schedule_check(const char *file, schedule_kind kind, int pp, long long m, int global_batch, moe_error *err) {
    if (kind == SCHED_INTERLEAVED && pp > 0 && m % pp != 0)
        return bad_m(file, m, pp, global_batch,
                     "micro-batches per pipeline divisible by layout.pp (interleaved 1F1B runs them in groups of pp)",
                     err);
    if (kind == SCHED_DUALPIPE) {
        if (pp % 2 != 0) {
            char v[32];
            snprintf(v, sizeof v, "%d", pp);
            return moe_error_input(err, file, "layout.pp", v,
                                   "an even number of stages for the \"dualpipe\" schedule (two opposite pipelines), "
                                   "or 1 (no pipeline: 1F1B)");
        }
        if (m % 2 != 0 || m < 2LL * pp)
            return bad_m(file, m, pp, global_batch,
                         "an even number of micro-batches per pipeline, at least 2*pp, for the \"dualpipe\" schedule "
                         "(half enter at each end; DualPipe's reference asserts it)", err);
    }
    return 0;
}
