/* point_pool.c — a small fork/wait worker pool over sweep points. */
#include "sim/report/point_pool.h"
#include "sim/base/alloc.h"
#include "sim/base/json_read.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim/report/results.h"

void point_file_path(const char *points_dir, int id, char *out, unsigned cap) {
    snprintf(out, cap, "%s/point-%06d.json", points_dir, id);
}

static void error_file_path(const char *points_dir, int id, char *out, unsigned cap) {
    snprintf(out, cap, "%s/point-%06d.err", points_dir, id);
}

/* Evaluate one point in this process and write its file (or its error file) atomically. Returns the
 * point's exit code. */
static int eval_one(int id, point_fn fn, void *ctx, const char *dir) {
    moe_error err = {0};
    char path[4096];
    cJSON *point = fn(id, ctx, &err);
    if (!point) {
        error_file_path(dir, id, path, sizeof path);
        char text[1100];
        snprintf(text, sizeof text, "%d\n%s\n", err.code ? err.code : EXIT_RUNTIME, err.msg);
        moe_error ignored;
        write_file_atomic(path, text, &ignored);
        return err.code ? err.code : EXIT_RUNTIME;
    }
    char *text = cJSON_Print(point);
    cJSON_Delete(point);
    point_file_path(dir, id, path, sizeof path);
    int rc = write_file_atomic(path, text, &err);
    free(text);
    return rc ? EXIT_RUNTIME : 0;
}

/* The child: evaluate ids[0..n) in order; exit with the worst code (each failed point left its
 * error file, which the parent reads). */
static void child_main(const int *ids, int n, point_fn fn, void *ctx, const char *dir) {
    int worst = 0;
    for (int i = 0; i < n; i++) {
        int rc = eval_one(ids[i], fn, ctx, dir);
        if (rc > worst) worst = rc;
    }
    _exit(worst);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void show_progress(int done, int total, double t0) {
    double el = now_s() - t0, rate = el > 0 ? done / el : 0;
    double left = rate > 0 ? (total - done) / rate : 0;
    fprintf(stderr, "\r  %d/%d points  %.1f points/s  %.0f s left   ", done, total, rate, left);
    if (done == total) fputc('\n', stderr);
}

/* Record a failed child: keep the first failure's message and the worst code. */
static void note_failure(const char *dir, int id, int status, int *worst, moe_error *err) {
    char path[4096], msg[1024] = "";
    int code = EXIT_RUNTIME;
    error_file_path(dir, id, path, sizeof path);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%d\n", &code) != 1) code = EXIT_RUNTIME;
        if (!fgets(msg, sizeof msg, f)) msg[0] = '\0';
        msg[strcspn(msg, "\n")] = '\0';
        fclose(f);
        unlink(path);
    } else if (WIFSIGNALED(status)) {
        snprintf(msg, sizeof msg, "worker killed by signal %d", WTERMSIG(status));
    } else {
        snprintf(msg, sizeof msg, "worker exited with %d", WEXITSTATUS(status));
    }
    if (*worst == 0) moe_error_set(err, code, "point %d: %s", id, msg);
    if (code > *worst) *worst = code;
}

/* A failed worker: every point of its chunk without a point file failed; record them. */
static void note_chunk(const char *dir, const int *ids, int n, int status, int *worst, moe_error *err) {
    for (int i = 0; i < n; i++) {
        char path[4096];
        point_file_path(dir, ids[i], path, sizeof path);
        if (access(path, R_OK) != 0) note_failure(dir, ids[i], status, worst, err);
    }
}

int run_points(const int *ids, int n, point_fn fn, void *ctx, const point_run_opts *opt, moe_error *err) {
    if (make_dirs(opt->points_dir, err)) return err->code;
    int jobs = opt->jobs > 0 ? opt->jobs : 1, chunk = opt->chunk > 1 ? opt->chunk : 1;
    /* the ids still to evaluate (resume skips finished points) */
    int *todo = moe_xmalloc(sizeof(int) * (size_t)(n + 1)), n_todo = 0, done = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        point_file_path(opt->points_dir, ids[i], path, sizeof path);
        if (opt->resume && access(path, R_OK) == 0) done++;
        else todo[n_todo++] = ids[i];
    }
    pid_t *pids = moe_xcalloc((size_t)jobs, sizeof *pids);
    int *slot_first = moe_xcalloc((size_t)jobs, sizeof *slot_first), *slot_n = moe_xcalloc((size_t)jobs, sizeof *slot_n);
    int next = 0, running = 0, worst = 0;
    double t0 = now_s();
    fflush(stdout);
    fflush(stderr);
    while (next < n_todo || running > 0) {
        for (int s = 0; s < jobs && next < n_todo; s++) {
            if (pids[s]) continue;
            int take = n_todo - next < chunk ? n_todo - next : chunk;
            pid_t pid = fork();
            if (pid < 0) {
                worst = moe_error_set(err, EXIT_RUNTIME, "fork failed: %s", strerror(errno));
                next = n_todo;
                break;
            }
            if (pid == 0) child_main(todo + next, take, fn, ctx, opt->points_dir);
            pids[s] = pid;
            slot_first[s] = next;
            slot_n[s] = take;
            next += take;
            running++;
        }
        if (running == 0) continue;
        int status = 0;
        pid_t pid = wait(&status);
        if (pid < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int s = 0; s < jobs; s++) {
            if (pids[s] != pid) continue;
            pids[s] = 0;
            running--;
            done += slot_n[s];
            if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
                note_chunk(opt->points_dir, todo + slot_first[s], slot_n[s], status, &worst, err);
        }
        if (opt->progress) show_progress(done, n, t0);
    }
    free(pids);
    free(slot_first);
    free(slot_n);
    free(todo);
    return worst;
}

static int by_id(const void *a, const void *b) {
    const cJSON *pa = *(const cJSON *const *)a, *pb = *(const cJSON *const *)b;
    int ia = cJSON_GetObjectItemCaseSensitive(pa, "id")->valueint;
    int ib = cJSON_GetObjectItemCaseSensitive(pb, "id")->valueint;
    return (ia > ib) - (ia < ib);
}

cJSON *collect_points(const char *const *dirs, int n_dirs, moe_error *err) {
    cJSON **items = NULL;
    int n = 0, cap = 0;
    for (int d = 0; d < n_dirs; d++) {
        DIR *dp = opendir(dirs[d]);
        if (!dp) {
            moe_error_input(err, dirs[d], NULL, NULL, "a folder of point files (%s)", strerror(errno));
            goto fail;
        }
        struct dirent *de;
        while ((de = readdir(dp))) {
            int id;
            char tail[8];
            if (sscanf(de->d_name, "point-%d.%7s", &id, tail) != 2 || strcmp(tail, "json") != 0) continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dirs[d], de->d_name);
            cJSON *p = json_load(path, 0, err);
            if (!p) { closedir(dp); goto fail; }
            const cJSON *pid = json_member(p, "id");
            if (!cJSON_IsNumber(pid)) {
                cJSON_Delete(p);
                closedir(dp);
                moe_error_input(err, path, "id", NULL, "a point object with a numeric id");
                goto fail;
            }
            if (n == cap) items = moe_xrealloc(items, (size_t)(cap = cap ? 2 * cap : 256), sizeof *items);
            items[n++] = p;
        }
        closedir(dp);
    }
    qsort(items, (size_t)n, sizeof *items, by_id);
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        if (i > 0 && by_id(&items[i - 1], &items[i]) == 0) {
            if (!cJSON_Compare(items[i - 1], items[i], 1)) {
                int id = cJSON_GetObjectItemCaseSensitive(items[i], "id")->valueint;
                moe_error_set(err, EXIT_BADINPUT, "point %d appears twice with different results", id);
                for (int j = i; j < n; j++) cJSON_Delete(items[j]);
                free(items);
                cJSON_Delete(arr);
                return NULL;
            }
            cJSON_Delete(items[i]);
            continue;
        }
        cJSON_AddItemToArray(arr, items[i]);
    }
    free(items);
    return arr;
fail:
    for (int i = 0; i < n; i++) cJSON_Delete(items[i]);
    free(items);
    return NULL;
}
