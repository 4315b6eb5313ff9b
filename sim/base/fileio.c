/* fileio.c — bounded whole-file reads, atomic writes, mkdir -p (the contract: fileio.h). */
#define _POSIX_C_SOURCE 200809L
#include "sim/base/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/base/alloc.h"

/* ---- reading ---------------------------------------------------------------------------------- */

static const char *kind_of(mode_t m) {
    if (S_ISDIR(m)) return "a folder";
    if (S_ISFIFO(m)) return "a FIFO (named pipe)";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

static void size_words(size_t bytes, char *buf, size_t cap) {
    if (bytes >= ((size_t)1 << 30))
        snprintf(buf, cap, "a file of %.2f GiB (%zu bytes)", (double)bytes / (1 << 30), bytes);
    else if (bytes >= ((size_t)1 << 20))
        snprintf(buf, cap, "a file of %.1f MiB (%zu bytes)", (double)bytes / (1 << 20), bytes);
    else
        snprintf(buf, cap, "a file of %zu bytes", bytes);
}

static int too_large(moe_error *err, const char *path, size_t bytes, size_t max_bytes) {
    char got[96];
    size_words(bytes, got, sizeof got);
    if (max_bytes % ((size_t)1 << 20) == 0)
        return moe_error_input(err, path, NULL, got, "a file of at most %zu MiB", max_bytes >> 20);
    return moe_error_input(err, path, NULL, got, "a file of at most %zu bytes", max_bytes);
}

char *read_file_bounded(const char *path, size_t max_bytes, size_t *len_out, moe_error *err) {
    if (!max_bytes) max_bytes = MOE_FILE_MAX_BYTES;
    if (!path || !*path) {
        moe_error_input(err, NULL, NULL, "an empty path", "the name of a readable file");
        return NULL;
    }
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer; it is refused below instead */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        moe_error_input(err, path, NULL, NULL, "a readable file (%s)", strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        moe_error_input(err, path, NULL, NULL, "a readable file (%s)", strerror(e));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        moe_error_input(err, path, NULL, kind_of(st.st_mode),
                        "a regular file (a FIFO or a device may block or never end)");
        return NULL;
    }
    if ((unsigned long long)st.st_size > max_bytes) {
        close(fd);
        too_large(err, path, (size_t)st.st_size, max_bytes);
        return NULL;
    }
    /* the size may change while it is read: read to the end, never past the cap */
    size_t cap = (size_t)st.st_size + 1, len = 0;
    char *buf = moe_xmalloc(cap + 1);
    for (;;) {
        if (len == cap) {
            if (len > max_bytes) break;
            cap = cap * 2 > max_bytes + 1 ? max_bytes + 1 : cap * 2;
            buf = moe_xrealloc(buf, cap + 1, 1);
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            free(buf);
            moe_error_set(err, EXIT_RUNTIME, "%s: read failed: %s", path, strerror(e));
            return NULL;
        }
        if (n == 0) break;
        len += (size_t)n;
    }
    close(fd);
    if (len > max_bytes) {
        free(buf);
        too_large(err, path, len, max_bytes);
        return NULL;
    }
    buf[len] = '\0';
    if (len_out) *len_out = len;
    return buf;
}

char *read_file_text(const char *path, size_t *len, moe_error *err) {
    return read_file_bounded(path, MOE_FILE_MAX_BYTES, len, err);
}

/* ---- atomic writes -------------------------------------------------------------------------------- */

/* An output path that cannot be created is the user's path (exit 2); anything else is runtime. */
static int open_failed(moe_error *err, const char *path, int e) {
    if (e == EACCES || e == EPERM || e == ENOENT || e == ENOTDIR || e == EROFS || e == EISDIR ||
        e == ENAMETOOLONG || e == ELOOP || e == ENXIO)
        return moe_error_input(err, path, NULL, NULL, "a writable output path (%s)", strerror(e));
    return moe_error_set(err, EXIT_RUNTIME, "%s: cannot create: %s", path, strerror(e));
}

/* fsync the folder holding `path`, so that a rename into it is durable. Some file systems refuse to
 * sync a folder (EINVAL); the rename is then as durable as they make it. */
static int sync_parent(const char *path, moe_error *err) {
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return moe_error_set(err, EXIT_RUNTIME, "%s: cannot open the folder to sync: %s", dir, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0 && e != EINVAL && e != EROFS)
        return moe_error_set(err, EXIT_RUNTIME, "%s: cannot sync the folder: %s", dir, strerror(e));
    return 0;
}

/* An existing path that is not a regular file: a folder is refused; a device, pipe or socket is
 * opened for writing as it is (never renamed over). O_NONBLOCK only for the open, so a FIFO nobody
 * reads fails at once (ENXIO) instead of blocking. */
static int open_straight(atomic_file *af, const struct stat *st, moe_error *err) {
    if (S_ISDIR(st->st_mode))
        return moe_error_input(err, af->path, NULL, "a folder", "an output file name (a file, not a folder)");
    int fd = open(af->path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return open_failed(err, af->path, errno);
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 || !(af->f = fdopen(fd, "wb"))) {
        int e = errno;
        close(fd);
        return moe_error_set(err, EXIT_RUNTIME, "%s: cannot open: %s", af->path, strerror(e));
    }
    af->tmp[0] = '\0';
    return 0;
}

/* A temporary's name: the final name, TMP_INFIX, the writer's pid, '.', a serial. */
#define TMP_INFIX ".tmp."

/* The pid of `entry` when it is exactly NAME.tmp.PID.SERIAL (digits only), else 0. */
static long temp_writer(const char *entry, const char *name) {
    size_t n = strlen(name), k = strlen(TMP_INFIX);
    if (strncmp(entry, name, n) != 0 || strncmp(entry + n, TMP_INFIX, k) != 0) return 0;
    const char *s = entry + n + k;
    char *end;
    if (*s < '0' || *s > '9') return 0;
    long pid = strtol(s, &end, 10);
    if (*end != '.' || end[1] < '0' || end[1] > '9') return 0;
    for (s = end + 1; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return pid > 0 ? pid : 0;
}

int atomic_file_remove_dead_temps(const char *dir, const char *name) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int removed = 0;
    for (struct dirent *e; (e = readdir(d));) {
        long pid = temp_writer(e->d_name, name);
        struct stat st;
        if (!pid || pid != (long)(pid_t)pid || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;   /* alive (or not ours to know): kept */
        removed += unlinkat(dirfd(d), e->d_name, 0) == 0;
    }
    closedir(d);
    return removed;
}

int atomic_file_open(atomic_file *af, const char *path, moe_error *err) {
    static atomic_uint serial;
    memset(af, 0, sizeof *af);
    if (!path || !*path) return moe_error_input(err, NULL, NULL, "an empty path", "an output file name");
    if (strlen(path) >= sizeof af->path)
        return moe_error_input(err, NULL, NULL, "a path too long", "an output path under %zu characters",
                               sizeof af->path);
    snprintf(af->path, sizeof af->path, "%s", path);
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) return open_straight(af, &st, err);
    snprintf(af->tmp, sizeof af->tmp, "%s" TMP_INFIX "%ld.%u", path, (long)getpid(), atomic_fetch_add(&serial, 1));
    int fd = open(af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return open_failed(err, path, errno);
    af->f = fdopen(fd, "wb");
    if (!af->f) {
        int e = errno;
        close(fd);
        unlink(af->tmp);
        return moe_error_set(err, EXIT_RUNTIME, "%s: cannot open: %s", af->tmp, strerror(e));
    }
    return 0;
}

void atomic_file_abort(atomic_file *af) {
    if (af->f) fclose(af->f);
    af->f = NULL;
    if (af->tmp[0]) unlink(af->tmp);
    af->tmp[0] = '\0';
}

int atomic_file_commit(atomic_file *af, moe_error *err) {
    if (!af->f) return moe_error_set(err, EXIT_RUNTIME, "%s: no file open for writing", af->path);
    if (!af->tmp[0]) { /* straight through: nothing to sync or rename (fsync of /dev/null is EINVAL) */
        int bad = ferror(af->f) || fflush(af->f) != 0;
        int e = errno;
        if (fclose(af->f) != 0 && !bad) { bad = 1; e = errno; }
        af->f = NULL;
        return bad ? moe_error_set(err, EXIT_RUNTIME, "%s: write failed: %s", af->path, strerror(e)) : 0;
    }
    int bad = ferror(af->f) || fflush(af->f) != 0 || fsync(fileno(af->f)) != 0;
    int e = errno;
    if (fclose(af->f) != 0 && !bad) { bad = 1; e = errno; }
    af->f = NULL;
    if (bad) {
        unlink(af->tmp);
        return moe_error_set(err, EXIT_RUNTIME, "%s: write failed: %s", af->path, strerror(e));
    }
    if (rename(af->tmp, af->path) != 0) {
        e = errno;
        unlink(af->tmp);
        if (e == EISDIR || e == ENOTDIR || e == EACCES || e == EPERM || e == EROFS)
            return moe_error_input(err, af->path, NULL, NULL, "a writable output path (%s)", strerror(e));
        return moe_error_set(err, EXIT_RUNTIME, "%s: cannot rename into place: %s", af->path, strerror(e));
    }
    af->tmp[0] = '\0';
    return sync_parent(af->path, err);
}

int file_publish(const char *tmp, const char *path, moe_error *err) {
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        unlink(tmp);
        return moe_error_input(err, path, NULL, S_ISDIR(st.st_mode) ? "a folder" : "a device, pipe or socket",
                               "an output file name (a regular file or a new name)");
    }
    int fd = open(tmp, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return moe_error_set(err, EXIT_RUNTIME, "%s: cannot open: %s", tmp, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0) {
        unlink(tmp);
        return moe_error_set(err, EXIT_RUNTIME, "%s: cannot sync: %s", tmp, strerror(e));
    }
    if (rename(tmp, path) != 0) {
        e = errno;
        unlink(tmp);
        return moe_error_set(err, EXIT_RUNTIME, "%s: cannot rename into place: %s", path, strerror(e));
    }
    return sync_parent(path, err);
}

int write_file_atomic(const char *path, const char *text, moe_error *err) {
    atomic_file af;
    int rc = atomic_file_open(&af, path, err);
    if (rc) return rc;
    size_t len = strlen(text);
    if (fwrite(text, 1, len, af.f) != len) {
        int e = errno;
        atomic_file_abort(&af);
        return moe_error_set(err, EXIT_RUNTIME, "%s: write failed: %s", path, strerror(e));
    }
    return atomic_file_commit(&af, err);
}

/* ---- folders ---------------------------------------------------------------------------------------- */

static int mkdir_one(const char *dir, moe_error *err) {
    if (mkdir(dir, 0755) == 0) return 0;
    int e = errno;
    struct stat st;
    if (e == EEXIST && stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) return 0;
    if (e == EEXIST) return moe_error_input(err, dir, NULL, "a file", "a folder (or a path to create one)");
    if (e == ENOSPC || e == EIO || e == ENOMEM || e == EDQUOT)
        return moe_error_set(err, EXIT_RUNTIME, "%s: cannot create folder: %s", dir, strerror(e));
    return moe_error_input(err, dir, NULL, NULL, "a folder that can be created (%s)", strerror(e));
}

int make_dirs(const char *path, moe_error *err) {
    char buf[4096];
    if (!path || !*path) return moe_error_input(err, NULL, NULL, "an empty path", "a folder name");
    if (strlen(path) >= sizeof buf)
        return moe_error_input(err, NULL, NULL, "a path too long", "a folder path under %zu characters", sizeof buf);
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        int rc = mkdir_one(buf, err);
        *p = '/';
        if (rc) return rc;
    }
    return mkdir_one(buf, err);
}
