/* step_outcome.c — a failed step in words (step_outcome.h). */
#include "sim/report/step_outcome.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static double field(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *word(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "?";
}

step_outcome step_outcome_of(const cJSON *step) {
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(step, "timed_out"))) return STEP_COMPLETED;
    const cJSON *bd = cJSON_GetObjectItemCaseSensitive(step, "breakdown");
    return cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(bd, "hang")) ? STEP_HUNG : STEP_TIMED_OUT;
}

const char *step_outcome_word(step_outcome o) {
    return o == STEP_HUNG ? "hung" : o == STEP_TIMED_OUT ? "timeout" : NULL;
}

/* "rank 99 (node 12, GPU 3)": the record's global GPU as its node and its index in the node */
static int rank_words(const cJSON *rec, int gpn, char *buf, size_t cap) {
    double gpu = field(rec, "gpu");
    if (gpn > 0 && isfinite(gpu))
        return snprintf(buf, cap, "rank %.0f (node %.0f, GPU %.0f)", field(rec, "rank"), floor(gpu / gpn),
                        fmod(gpu, gpn));
    return snprintf(buf, cap, "rank %.0f", field(rec, "rank"));
}

/* "A2A_DISPATCH of EP group 0 (layer 10, micro-batch 1)"; an op outside the layers (the gradient
 * collectives of the step's tail: layer and micro-batch -1) without them */
static void where_words(const cJSON *rec, char *buf, size_t cap) {
    int n = snprintf(buf, cap, "%s of %s group %.0f", word(rec, "op"), word(rec, "group_kind"), field(rec, "group"));
    double layer = field(rec, "layer"), mb = field(rec, "micro_batch");
    if (n > 0 && (size_t)n < cap && layer >= 0)
        n += snprintf(buf + n, cap - (size_t)n, " (layer %.0f%s", layer, mb >= 0 ? "" : ")");
    if (n > 0 && (size_t)n < cap && mb >= 0)
        snprintf(buf + n, cap - (size_t)n, "%smicro-batch %.0f)", layer >= 0 ? ", " : " (", mb);
}

void step_outcome_text(const cJSON *timeout, const cJSON *hang, int gpn, char *buf, size_t cap) {
    char who[96], where[160];
    size_t n = 0;
    buf[0] = '\0';
    if (cJSON_IsObject(hang)) {
        rank_words(hang, gpn, who, sizeof who);
        where_words(hang, where, sizeof where);
        n = (size_t)snprintf(buf, cap, "the step hung: %s never arrived at %s, where %.0f ranks waited", who, where,
                             field(hang, "waiting"));
        if (n < cap && field(hang, "blocked_elsewhere") > 0)
            n += (size_t)snprintf(buf + n, cap - n, " (%.0f more blocked elsewhere)", field(hang, "blocked_elsewhere"));
    } else if (cJSON_IsObject(timeout)) {
        rank_words(timeout, gpn, who, sizeof who);
        where_words(timeout, where, sizeof where);
        n = (size_t)snprintf(buf, cap, "the step timed out: %s waited %.3f s in %s", who, field(timeout, "waited_s"),
                             where);
    }
    if (n && n < cap && cJSON_IsObject(timeout) && strcmp(word(timeout, "detected_by"), "qp_retry_exhausted") == 0)
        snprintf(buf + n, cap - n, "; a queue pair sending into the stalled receiver's discarded queue ran out of "
                 "retries after %.3f s and failed it at t = %.3f s, before NCCL's watchdog (%g s)",
                 field(timeout, "detect_s"), field(timeout, "fired_s"), field(timeout, "timeout_s"));
    else if (n && n < cap && cJSON_IsObject(timeout))
        snprintf(buf + n, cap - n, "; NCCL's watchdog (faults.collective_timeout_s = %g s) failed it at t = %.3f s",
                 field(timeout, "timeout_s"), field(timeout, "fired_s"));
}
