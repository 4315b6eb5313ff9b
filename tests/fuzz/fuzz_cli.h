/* fuzz_cli.h — a tool's whole command line as fuzz input: one argument per line, run in-process
 * through the tool's own cli_main (its main() is renamed when its source is included).
 *
 * Sandbox: every input runs in a private folder (in /dev/shm where it exists) holding a few fixtures (a bad scenario, a FIFO, a
 * folder, an empty file, a step trace, an nccl-tests log, a calibration trace, a failure log copied
 * from the source tree), and whatever a command writes there is removed after it. An argument that
 * names a path outside the sandbox (starts with '/' or holds "..", also after "--opt=") is not run,
 * except /dev/null and /dev/zero, so a fuzzed `--out /somewhere` never writes outside it. Commands
 * that run for seconds by design (simcal bench, simcal probe-host) are skipped. */
#ifndef MOESIM_FUZZ_CLI_H
#define MOESIM_FUZZ_CLI_H

#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/base/alloc.h"
#include "sim/base/fileio.h"

#define FUZZ_CLI_MAX_ARGS 24

static const char *const fuzz_cli_fixtures[][2] = {
    {"trace.json", "tests/data/traces/healthy-pp8.json"},
    {"hang.json", "tests/data/traces/hang-ep.json"},
    {"nccl.log", "tests/data/nccl/h800-8gpu-alltoall_perf.log"},
    {"calib.json", "tests/fuzz/fixtures/calib.json"}, /* small: 18 points, one fit of each kind */
    {"model.json", "calibration/models/h800-published.json"},
    {"fail.csv", "tests/data/failures/mixed_log.csv"},
    {"bad.json", "tests/data/bad/duplicate_key.json"},
};
#define FUZZ_CLI_N_FIXTURES (sizeof fuzz_cli_fixtures / sizeof fuzz_cli_fixtures[0])
static const char *const fuzz_cli_made[] = {"fifo", "dir", "empty.json"};

static char fuzz_cli_dir[64];
static char *fuzz_cli_text[FUZZ_CLI_N_FIXTURES];     /* the fixtures' contents, read once */
static struct stat fuzz_cli_stat[FUZZ_CLI_N_FIXTURES]; /* and their files as last written */

static int fuzz_cli_remove(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st; (void)flag; (void)ftw;
    return remove(path);
}

static void fuzz_cli_drop_sandbox(void) {
    if (fuzz_cli_dir[0]) nftw(fuzz_cli_dir, fuzz_cli_remove, 16, FTW_DEPTH | FTW_PHYS);
}

static int fuzz_cli_same_file(const struct stat *a, const struct stat *b) {
    return a->st_ino == b->st_ino && a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
           a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_mode == b->st_mode;
}

static int fuzz_cli_dir_empty(const char *path) {
    DIR *d = opendir(path);
    if (!d) return 0; /* gone or replaced by a file: rebuild it */
    int empty = 1;
    for (struct dirent *e; empty && (e = readdir(d));) empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
    closedir(d);
    return empty;
}

/* Put every fixture back as it was made, so that each input starts from the same sandbox whatever
 * the inputs before it overwrote (a crash found after many inputs then reproduces on its own). */
static void fuzz_cli_restore(void) {
    for (size_t i = 0; i < FUZZ_CLI_N_FIXTURES; i++) {
        const char *name = fuzz_cli_fixtures[i][0];
        struct stat now;
        if (lstat(name, &now) == 0 && fuzz_cli_same_file(&now, &fuzz_cli_stat[i])) continue;
        nftw(name, fuzz_cli_remove, 16, FTW_DEPTH | FTW_PHYS);
        moe_error err = {0};
        if (write_file_atomic(name, fuzz_cli_text[i], &err) || lstat(name, &fuzz_cli_stat[i])) {
            fprintf(stderr, "fuzz: fixture %s: %s\n", name, err.msg);
            abort();
        }
    }
    struct stat st;
    if (lstat("fifo", &st) || !S_ISFIFO(st.st_mode)) {
        nftw("fifo", fuzz_cli_remove, 16, FTW_DEPTH | FTW_PHYS);
        if (mkfifo("fifo", 0644)) abort();
    }
    if (lstat("empty.json", &st) || !S_ISREG(st.st_mode) || st.st_size) {
        nftw("empty.json", fuzz_cli_remove, 16, FTW_DEPTH | FTW_PHYS);
        moe_error err = {0};
        if (write_file_atomic("empty.json", "", &err)) abort();
    }
    if (lstat("dir", &st) || !S_ISDIR(st.st_mode) || !fuzz_cli_dir_empty("dir")) { /* a command wrote there */
        nftw("dir", fuzz_cli_remove, 16, FTW_DEPTH | FTW_PHYS);
        if (mkdir("dir", 0755)) abort();
    }
}

static void fuzz_cli_sandbox(void) {
    if (fuzz_cli_dir[0]) return;
    /* In memory where the system has one: the per-input clean-up is file-system work, and on a disk
     * (ext4 discarding freed blocks) it took more than half of every execution. */
    struct stat shm;
    const char *base = stat("/dev/shm", &shm) == 0 && S_ISDIR(shm.st_mode) && access("/dev/shm", W_OK) == 0
                           ? "/dev/shm" : "/tmp";
    snprintf(fuzz_cli_dir, sizeof fuzz_cli_dir, "%s/moesim-fuzz-cli-XXXXXX", base);
    if (!mkdtemp(fuzz_cli_dir)) abort();
    const char *src = getenv("MOESIM_SOURCE_DIR");
#ifdef MOESIM_SOURCE_DIR
    if (!src) src = MOESIM_SOURCE_DIR;
#endif
    for (size_t i = 0; i < FUZZ_CLI_N_FIXTURES; i++) {
        char from[4096];
        snprintf(from, sizeof from, "%s/%s", src ? src : ".", fuzz_cli_fixtures[i][1]);
        moe_error err = {0};
        if (!(fuzz_cli_text[i] = read_file_text(from, NULL, &err))) {
            fprintf(stderr, "fuzz: fixture: %s\n", err.msg);
            abort();
        }
    }
    if (chdir(fuzz_cli_dir)) abort();
    fuzz_cli_restore();
    atexit(fuzz_cli_drop_sandbox);
}

/* Remove what the command left in the sandbox (anything that is not a fixture). */
static void fuzz_cli_clean(void) {
    DIR *d = opendir(".");
    if (!d) abort();
    for (struct dirent *e; (e = readdir(d));) {
        const char *n = e->d_name;
        int keep = !strcmp(n, ".") || !strcmp(n, "..");
        for (size_t i = 0; i < FUZZ_CLI_N_FIXTURES && !keep; i++) keep = !strcmp(n, fuzz_cli_fixtures[i][0]);
        for (size_t i = 0; i < sizeof fuzz_cli_made / sizeof *fuzz_cli_made && !keep; i++)
            keep = !strcmp(n, fuzz_cli_made[i]);
        if (!keep) nftw(n, fuzz_cli_remove, 16, FTW_DEPTH | FTW_PHYS);
    }
    closedir(d);
    fuzz_cli_restore();
}

static int fuzz_cli_path_ok(const char *a) {
    const char *v = a;
    if (a[0] == '-' && strchr(a, '=')) v = strchr(a, '=') + 1;
    if (strstr(a, "..")) return 0;
    if (v[0] == '/' || a[0] == '/') return !strcmp(v, "/dev/null") || !strcmp(v, "/dev/zero");
    return 1;
}

/* Split data into argv[1..] at newlines and run `tool_main(argc, argv)`; argv[0] = name. */
static int fuzz_cli_run(const char *name, int (*tool_main)(int, char **), const uint8_t *data, size_t size,
                        const char *const *skip_commands) {
    fuzz_cli_sandbox();
    char *buf = moe_xmalloc(size + 1);
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[FUZZ_CLI_MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = (char *)name;
    for (char *s = buf; argc <= FUZZ_CLI_MAX_ARGS;) {
        char *nl = memchr(s, '\n', (size_t)(buf + size - s));
        if (nl) *nl = '\0';
        if (strlen(s) != (size_t)((nl ? nl : buf + size) - s) || !fuzz_cli_path_ok(s)) {
            free(buf); /* an embedded NUL (argv cannot hold one) or a path outside the sandbox */
            return 0;
        }
        argv[argc++] = s;
        if (!nl) break;
        s = nl + 1;
    }
    argv[argc] = NULL;
    for (const char *const *c = skip_commands; argc > 1 && c && *c; c++)
        if (!strcmp(argv[1], *c)) {
            free(buf);
            return 0;
        }
    (void)tool_main(argc, argv);
    fflush(stdout);
    fuzz_cli_clean();
    free(buf);
    return 0;
}

#endif
