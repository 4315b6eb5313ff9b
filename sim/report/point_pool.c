/* point_pool.c — worker processes over ranges of sweep points, records streamed back through pipes
 * (point_pool.h). */
#define _GNU_SOURCE /* F_SETPIPE_SZ */
#include "sim/report/point_pool.h"
#include "sim/base/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A frame on a worker's pipe: header, then `len` bytes (a record, or progress text). */
typedef struct {
    int64_t id;
    uint32_t len;
    uint8_t type;   /* 'R' record (len 0: the point needed no record), 'P' progress inside the point */
    uint8_t pad[3];
} frame_hdr;

static double mono_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int skipped(const uint8_t *skip, long lo, long id) {
    return skip && (skip[(id - lo) >> 3] >> ((id - lo) & 7) & 1);
}

/* ---- the worker -------------------------------------------------------------------------------- */

static int g_worker_fd = -1;
static long g_worker_id;
static double g_worker_progress_t;
static record_buf g_out;   /* frames not yet written */

static void worker_flush(void) {
    size_t off = 0;
    while (off < g_out.len) {
        ssize_t w = write(g_worker_fd, g_out.data + off, g_out.len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) _exit(EXIT_RUNTIME);   /* the parent is gone: nothing to write for */
        off += (size_t)w;
    }
    g_out.len = 0;
}

static void worker_frame(long id, uint8_t type, const void *data, size_t len) {
    frame_hdr h = {.id = id, .len = (uint32_t)len, .type = type};
    record_buf_put(&g_out, &h, sizeof h);
    if (len) record_buf_put(&g_out, data, len);
}

void point_progress(const char *fmt, ...) {
    if (g_worker_fd < 0) return;
    double t = mono_s();
    if (t - g_worker_progress_t < 0.5) return;
    g_worker_progress_t = t;
    char text[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    worker_frame(g_worker_id, 'P', text, strlen(text));
    worker_flush();
}

static void worker_main(pid_t parent, int fd, long a, long b, long lo, point_fn fn, void *ctx, const point_run_opts *opt) {
    /* die with the parent, also when it was killed before the request took effect */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(EXIT_RUNTIME);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    g_worker_fd = fd;
    record_buf rec = {0};
    for (long id = a; id < b; id++) {
        if (skipped(opt->skip, lo, id)) continue;
        g_worker_id = id;
        rec.len = 0;
        fn(id, ctx, &rec);
        worker_frame(id, 'R', rec.data, rec.len);
        if (opt->exact || g_out.len >= (1 << 16)) worker_flush();
    }
    worker_flush();
    _exit(0);
}

/* ---- the parent --------------------------------------------------------------------------------- */

typedef struct {
    pid_t pid;
    int fd;
    long a, b;           /* the range being evaluated */
    long last;           /* the last id it reported (a - 1: none yet) */
    int exact;
    record_buf in;       /* bytes read, not yet parsed */
    char progress[160];  /* progress inside its current point */
} slot;

typedef struct {
    long a, b;
    int exact;
} range;

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { g_stop = sig; }

static const char *signal_text(int sig) {
    const char *s = strsignal(sig);
    return s ? s : "a signal";
}

typedef struct {
    range *q;
    int n, cap;
} range_queue;

static void queue_push(range_queue *q, long a, long b, int exact) {
    if (a >= b) return;
    if (q->n == q->cap) q->q = moe_xrealloc(q->q, sizeof *q->q * (size_t)(q->cap = q->cap ? 2 * q->cap : 16), 1);
    q->q[q->n++] = (range){a, b, exact};
}

/* `done` of the `todo` points this run evaluates (and the rate over them: `kept` points stored by an
 * earlier run, --resume, are neither counted nor timed). */
static void show_progress(const point_run_opts *opt, void *ctx, long done, long todo, long kept, double t0,
                          const slot *slots, int jobs, int final) {
    double el = mono_s() - t0, rate = el > 0 ? (double)done / el : 0;
    double left = rate > 0 ? (double)(todo - done) / rate : 0;
    char extra[260] = "", inner[200] = "", status[200] = "";
    if (opt->status) opt->status(ctx, status, sizeof status);
    if (kept && status[0]) snprintf(extra, sizeof extra, "%ld kept, %s", kept, status);
    else if (kept) snprintf(extra, sizeof extra, "%ld kept", kept);
    else snprintf(extra, sizeof extra, "%s", status);
    for (int s = 0; s < jobs; s++)
        if (slots[s].pid && slots[s].progress[0]) {
            snprintf(inner, sizeof inner, "  point %ld: %s", slots[s].last + 1, slots[s].progress);
            break;
        }
    char eta[32] = "?";
    if (rate > 0) snprintf(eta, sizeof eta, "%.0f s", left);
    if (opt->progress == PROGRESS_LIVE)
        fprintf(stderr, "\r\033[K  %s %ld/%ld points  %.0f/s  %s left%s%s%s", opt->what, done, todo, rate, eta,
                extra[0] ? "  " : "", extra, inner);
    else
        fprintf(stderr, "progress: %s %ld/%ld points, %.0f points/s, ETA %s%s%s%s\n", opt->what, done, todo, rate, eta,
                extra[0] ? ", " : "", extra, inner);
    if (final && opt->progress == PROGRESS_LIVE) fputc('\n', stderr);
    fflush(stderr);
}

/* Parse the complete frames in s->in. Returns the sink's error, or 0. */
static int drain(slot *s, point_sink sink, void *ctx, long *done, moe_error *err) {
    size_t off = 0;
    int rc = 0;
    while (!rc && s->in.len - off >= sizeof(frame_hdr)) {
        frame_hdr h;
        memcpy(&h, s->in.data + off, sizeof h);
        if (s->in.len - off - sizeof h < h.len) break;
        const char *body = s->in.data + off + sizeof h;
        if (h.type == 'P') {
            size_t n = h.len < sizeof s->progress - 1 ? h.len : sizeof s->progress - 1;
            memcpy(s->progress, body, n);
            s->progress[n] = '\0';
        } else {
            s->last = (long)h.id;
            s->progress[0] = '\0';
            ++*done;
            if (h.len) rc = sink((long)h.id, body, h.len, NULL, ctx, err);
        }
        off += sizeof h + h.len;
    }
    memmove(s->in.data, s->in.data + off, s->in.len - off);
    s->in.len -= off;
    return rc;
}

static void describe_status(int status, char *out, size_t cap) {
    if (WIFSIGNALED(status))
        snprintf(out, cap, "its worker process was killed by signal %d (%s)", WTERMSIG(status), signal_text(WTERMSIG(status)));
    else
        snprintf(out, cap, "its worker process exited with %d before sending it", WEXITSTATUS(status));
}

int run_points(long lo, long hi, point_fn fn, point_sink sink, void *ctx, const point_run_opts *opt, moe_error *err) {
    int jobs = opt->jobs > 0 ? opt->jobs : 1;
    long chunk = opt->chunk > 1 ? opt->chunk : 1;
    long total = hi - lo, done = 0;
    for (long id = lo; id < hi; id++) done += skipped(opt->skip, lo, id);
    long done0 = done;
    slot *slots = moe_xcalloc((size_t)jobs, sizeof *slots);
    struct pollfd *pfd = moe_xcalloc((size_t)jobs, sizeof *pfd);
    range_queue retry = {0};
    long cursor = lo;
    int rc = 0, running = 0;
    pid_t parent = getpid();

    struct sigaction sa = {0}, old_int, old_term, old_hup;
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    g_stop = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup);

    double t0 = mono_s(), next_tick = t0 + (opt->progress == PROGRESS_LIVE ? 0.2 : opt->progress_every_s);
    while (!rc && !g_stop && (cursor < hi || retry.n > 0 || running > 0)) {
        /* start workers on free slots */
        for (int i = 0; i < jobs && !rc && (cursor < hi || retry.n > 0); i++) {
            slot *s = &slots[i];
            if (s->pid) continue;
            range r;
            if (retry.n > 0) {
                r = retry.q[--retry.n];
            } else {
                /* skip whole chunks that are done (resume) without a process */
                long a = cursor, b = cursor + chunk < hi ? cursor + chunk : hi;
                cursor = b;
                long k = a;
                while (k < b && skipped(opt->skip, lo, k)) k++;
                if (k == b) { i--; continue; }
                r = (range){k, b, opt->exact};
            }
            int fds[2];
            if (pipe(fds) != 0) { rc = moe_error_set(err, EXIT_RUNTIME, "pipe: %s", strerror(errno)); break; }
            fcntl(fds[0], F_SETPIPE_SZ, 1 << 20);
            fflush(stdout);
            fflush(stderr);
            pid_t pid = fork();
            if (pid < 0) {
                close(fds[0]);
                close(fds[1]);
                queue_push(&retry, r.a, r.b, r.exact);
                rc = moe_error_set(err, EXIT_RUNTIME, "fork failed: %s", strerror(errno));
                break;
            }
            if (pid == 0) {
                close(fds[0]);
                for (int j = 0; j < jobs; j++)
                    if (slots[j].pid) close(slots[j].fd);
                worker_main(parent, fds[1], r.a, r.b, lo, fn, ctx, &(point_run_opts){.skip = opt->skip, .exact = r.exact});
            }
            close(fds[1]);
            *s = (slot){.pid = pid, .fd = fds[0], .a = r.a, .b = r.b, .last = r.a - 1, .exact = r.exact, .in = s->in};
            s->in.len = 0;
            running++;
        }
        if (rc || running == 0) continue;
        int n = 0;
        for (int i = 0; i < jobs; i++)
            if (slots[i].pid) pfd[n++] = (struct pollfd){.fd = slots[i].fd, .events = POLLIN};
        double now = mono_s();
        int timeout_ms = opt->progress ? (int)((next_tick - now) * 1000) + 1 : 1000;
        if (timeout_ms < 1) timeout_ms = 1;
        if (poll(pfd, (nfds_t)n, timeout_ms) < 0 && errno != EINTR) {
            rc = moe_error_set(err, EXIT_RUNTIME, "poll: %s", strerror(errno));
            break;
        }
        for (int i = 0; i < jobs && !rc; i++) {
            slot *s = &slots[i];
            if (!s->pid) continue;
            int k = 0;
            while (k < n && pfd[k].fd != s->fd) k++;
            if (k == n || !(pfd[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            if (s->in.cap - s->in.len < (1 << 16)) {
                record_buf_put(&s->in, "", 0);
                size_t want = s->in.len + (1 << 20);
                if (s->in.cap < want) {
                    s->in.data = moe_xrealloc(s->in.data, want, 1);
                    s->in.cap = want;
                }
            }
            ssize_t got = read(s->fd, s->in.data + s->in.len, s->in.cap - s->in.len);
            if (got < 0 && errno == EINTR) continue;
            if (got > 0) {
                s->in.len += (size_t)got;
                rc = drain(s, sink, ctx, &done, err);
                continue;
            }
            /* end of the stream: the worker exited */
            close(s->fd);
            int status = 0;
            while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR) {}
            s->pid = 0;
            running--;
            /* the user's signal reached the worker too: its point did not fail, it was not run; it stays
             * unrecorded and --resume evaluates it */
            if (g_stop) continue;
            long next = s->last + 1;
            while (next < s->b && skipped(opt->skip, lo, next)) next++;
            if (next >= s->b) continue;   /* everything arrived */
            if (!s->exact) {
                /* records may have been buffered when it died: redo the rest one record at a time,
                 * which tells exactly which point kills a worker */
                queue_push(&retry, next, s->b, 1);
                continue;
            }
            char why[200];
            describe_status(status, why, sizeof why);
            rc = sink(next, NULL, 0, why, ctx, err);
            done++;
            queue_push(&retry, next + 1, s->b, 1);
        }
        if (opt->progress && mono_s() >= next_tick) {
            show_progress(opt, ctx, done - done0, total - done0, done0, t0, slots, jobs, 0);
            next_tick = mono_s() + (opt->progress == PROGRESS_LIVE ? 0.2 : opt->progress_every_s);
        }
    }
    int sig = g_stop;
    /* on a signal or an error, workers go first: nothing is evaluated that nobody stores */
    for (int i = 0; i < jobs; i++) {
        if (!slots[i].pid) continue;
        kill(slots[i].pid, SIGKILL);
        close(slots[i].fd);
        while (waitpid(slots[i].pid, NULL, 0) < 0 && errno == EINTR) {}
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    if (opt->progress && !rc) show_progress(opt, ctx, done - done0, total - done0, done0, t0, slots, jobs, 1);
    if (!rc && sig)
        rc = moe_error_set(err, 128 + sig, "interrupted by %s after %ld of %ld points", signal_text(sig), done - done0,
                           total - done0);
    for (int i = 0; i < jobs; i++) free(slots[i].in.data);
    free(slots);
    free(pfd);
    free(retry.q);
    return rc;
}
