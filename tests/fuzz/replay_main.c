/* replay_main.c — a plain main for a fuzz harness (any compiler, no libFuzzer): run the harness once
 * on every file named on the command line or found in a folder named there (sorted, not recursive).
 * ctest replays tests/fuzz/corpus-regressions/ and the seed corpora with it, so every input that
 * ever crashed stays a test in the normal and sanitized builds. Prints each input slower than 1 s. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "sim/base/alloc.h"
#include "sim/base/fileio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int n_run, n_slow;

static int run_file(const char *path) {
    moe_error err = {0};
    size_t len = 0;
    char *data = read_file_bounded(path, (size_t)64 << 20, &len, &err);
    if (!data) {
        fprintf(stderr, "replay: %s\n", err.msg);
        return 1;
    }
    /* exactly `len` bytes, no NUL after them, as libFuzzer passes an input: a reader that reads past
     * its input is caught by ASan here too */
    uint8_t *exact = moe_xmalloc(len);
    memcpy(exact, data, len);
    free(data);
    double t0 = now_s();
    LLVMFuzzerTestOneInput(exact, len);
    double dt = now_s() - t0;
    free(exact);
    n_run++;
    if (dt > 1.0) {
        n_slow++;
        fprintf(stderr, "replay: slow input (%.2f s): %s\n", dt, path);
    }
    return 0;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int run_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: %s: cannot open the folder\n", dir);
        return 1;
    }
    char **names = NULL;
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        names = moe_xrealloc(names, n + 1, sizeof *names);
        names[n++] = moe_xstrdup(e->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_names);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) bad |= run_file(path);
        free(names[i]);
    }
    free(names);
    return bad;
}

int main(int argc, char **argv) {
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: not found\n", argv[i]);
            bad = 1;
        } else if (S_ISDIR(st.st_mode)) {
            bad |= run_dir(argv[i]);
        } else {
            bad |= run_file(argv[i]);
        }
    }
    printf("replay: %d inputs, %d slower than 1 s\n", n_run, n_slow);
    return bad;
}
