/* cli_run.h — run one of moesim's tools as a user would (fork + exec), for the end-to-end tests.
 * Header-only: each test executable includes it once. */
#ifndef MOESIM_TESTS_CLI_RUN_H
#define MOESIM_TESTS_CLI_RUN_H

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* Run `bin` with the NULL-terminated string arguments in `ap`; stdout and stderr go to DIR/stdout and
 * DIR/stderr (kept for failure messages) and, when `out`/`err` are given, are read back into them
 * (truncated to the capacity). Returns the exit code, or 128 + the signal that killed it. */
static inline int cli_run_va(const char *bin, const char *dir, char *out, size_t out_cap, char *err,
                             size_t err_cap, va_list ap) {
    char *argv[32];
    int argc = 0;
    argv[argc++] = (char *)bin;
    for (char *a; (a = va_arg(ap, char *)) != NULL && argc < 31;) argv[argc++] = a;
    argv[argc] = NULL;
    char po[4200], pe[4200];
    snprintf(po, sizeof po, "%s/stdout", dir);
    snprintf(pe, sizeof pe, "%s/stderr", dir);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int fo = open(po, O_WRONLY | O_CREAT | O_TRUNC, 0644), fe = open(pe, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fo, 1);
        dup2(fe, 2);
        execv(bin, argv);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    const char *paths[2] = {po, pe};
    char *bufs[2] = {out, err};
    size_t caps[2] = {out_cap, err_cap};
    for (int i = 0; i < 2; i++) {
        if (!bufs[i] || caps[i] == 0) continue;
        FILE *f = fopen(paths[i], "r");
        size_t n = f ? fread(bufs[i], 1, caps[i] - 1, f) : 0;
        bufs[i][n] = '\0';
        if (f) fclose(f);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The path of tool `name` in the build ($MOESIM_BIN, else build/tools) into buf. */
static inline const char *cli_tool_path(const char *name, char *buf, size_t cap) {
    const char *bin = getenv("MOESIM_BIN");
    snprintf(buf, cap, "%s/%s", bin ? bin : "build/tools", name);
    return buf;
}

/* Run the tool `name` of the build ($MOESIM_BIN, else build/tools) as cli_run_va does. */
static inline int cli_run_tool_va(const char *name, const char *dir, char *out, size_t out_cap, char *err,
                                  size_t err_cap, va_list ap) {
    char exe[4200];
    return cli_run_va(cli_tool_path(name, exe, sizeof exe), dir, out, out_cap, err, err_cap, ap);
}

/* rm -rf DIR (a test's scratch folder); 0 on success. */
static inline int cli_remove_tree(const char *dir) {
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* cli_run_va with the arguments inline (NULL-terminated). */
static inline int cli_run(const char *bin, const char *dir, char *out, size_t out_cap, char *err, size_t err_cap, ...) {
    va_list ap;
    va_start(ap, err_cap);
    int rc = cli_run_va(bin, dir, out, out_cap, err, err_cap, ap);
    va_end(ap);
    return rc;
}

#endif
