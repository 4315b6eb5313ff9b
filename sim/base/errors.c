/* errors.c — error formatting and did-you-mean hints. */
#include "sim/base/errors.h"

#include <stdio.h>
#include <string.h>

int moe_error_input(moe_error *err, const char *file, const char *path, const char *value,
                    const char *expected_fmt, ...) {
    char expected[512];
    va_list ap;
    va_start(ap, expected_fmt);
    vsnprintf(expected, sizeof expected, expected_fmt, ap);
    va_end(ap);
    int n = 0;
    size_t cap = sizeof err->msg;
    err->code = EXIT_BADINPUT;
    err->msg[0] = '\0';
    if (file && *file) n += snprintf(err->msg + n, cap - (size_t)n, "%s: ", file);
    if (path && *path && (size_t)n < cap) n += snprintf(err->msg + n, cap - (size_t)n, "%s: ", path);
    if (value && (size_t)n < cap) n += snprintf(err->msg + n, cap - (size_t)n, "got %s; ", value);
    if ((size_t)n < cap) snprintf(err->msg + n, cap - (size_t)n, "expected %s", expected);
    return EXIT_BADINPUT;
}

int moe_error_set(moe_error *err, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = code;
    return code;
}

int moe_error_context(moe_error *err, const char *file, const char *path) {
    char inner[sizeof err->msg];
    memcpy(inner, err->msg, sizeof inner);
    inner[sizeof inner - 1] = '\0';
    int n = 0;
    size_t cap = sizeof err->msg;
    if (file && *file) n += snprintf(err->msg + n, cap - (size_t)n, "%s: ", file);
    if (path && *path && (size_t)n < cap) n += snprintf(err->msg + n, cap - (size_t)n, "%s: ", path);
    if ((size_t)n < cap) snprintf(err->msg + n, cap - (size_t)n, "%s", inner);
    return err->code;
}

/* Levenshtein distance, bounded to short identifiers (JSON keys). */
static int edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 99;
    int prev[64], cur[64];
    for (size_t j = 0; j <= lb; j++) prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            int del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, sizeof(int) * (lb + 1));
    }
    return prev[lb];
}

const char *moe_did_you_mean(const char *word, const char *const *candidates) {
    const char *best = NULL;
    size_t lw = strlen(word);
    /* close: at most one edit per three characters of the word (one for words under six; "layuot" is
     * two edits from "layout"), and never more than three */
    int limit = lw >= 9 ? 3 : lw >= 6 ? 2 : 1, best_d = limit + 1;
    for (const char *const *c = candidates; *c; c++) {
        int d = edit_distance(word, *c);
        if (lw >= 3 && strncmp(word, *c, lw) == 0) d = d < 1 ? d : 1; /* a prefix of a longer key */
        if (d < best_d) { best_d = d; best = *c; }
    }
    return best;
}
