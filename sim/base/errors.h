/* errors.h — user-facing errors: file, JSON path, bad value, what was expected; exit codes.
 *
 * Every function that can fail on user input takes a `moe_error *` and returns non-zero on failure
 * after filling it with moe_error_set(). The tools print err.msg and exit with err.code.
 * Message form (one line):  FILE: PATH: got VALUE; expected WHAT
 */
#ifndef MOESIM_ERRORS_H
#define MOESIM_ERRORS_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_BADINPUT = 2 };

typedef struct {
    int code;            /* EXIT_BADINPUT for bad input, EXIT_RUNTIME otherwise */
    char msg[1024];
} moe_error;

/* "FILE: PATH: got VALUE; expected EXPECTED_FMT..." with code EXIT_BADINPUT. file/path may be NULL
 * or "" (then left out); value may be NULL (then "got" is left out). Always returns EXIT_BADINPUT. */
int moe_error_input(moe_error *err, const char *file, const char *path, const char *value,
                    const char *expected_fmt, ...) __attribute__((format(printf, 5, 6)));

/* Free-form message with an explicit code. Returns code. */
int moe_error_set(moe_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Put "FILE: PATH: " in front of err->msg (a file referenced from another file: the scenario and
 * the field that named it, then the referenced file's own message). Returns err->code. */
int moe_error_context(moe_error *err, const char *file, const char *path);

/* Suggest the closest of `candidates` (NULL-terminated) to `word`: a Levenshtein distance of at most
 * one per three characters of the word (1 under 6 characters, 2 under 9, else 3), or a word of 3 or
 * more characters that begins the candidate; NULL if none is that close. For "did you mean" hints:
 * a far suggestion ("moe" -> "ep") misleads more than none. */
const char *moe_did_you_mean(const char *word, const char *const *candidates);

#ifdef __cplusplus
}
#endif

#endif
