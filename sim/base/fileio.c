/* fileio.c — whole-file reads, atomic writes, mkdir -p. */
#include "sim/base/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int write_file_atomic(const char *path, const char *text, moe_error *err) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return moe_error_set(err, EXIT_RUNTIME, "%s: cannot create: %s", tmp, strerror(errno));
    size_t len = strlen(text), done = 0;
    while (done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            close(fd);
            unlink(tmp);
            return moe_error_set(err, EXIT_RUNTIME, "%s: write failed: %s", tmp, strerror(e));
        }
        done += (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        unlink(tmp);
        return moe_error_set(err, EXIT_RUNTIME, "%s: cannot flush: %s", tmp, strerror(errno));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return moe_error_set(err, EXIT_RUNTIME, "%s: cannot rename into place: %s", path, strerror(e));
    }
    return 0;
}

char *read_file_text(const char *path, size_t *len_out, moe_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        moe_error_input(err, path, NULL, NULL, "a readable file (%s)", strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (len < cap - 1) break;
        cap *= 2;
        buf = realloc(buf, cap);
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        moe_error_input(err, path, NULL, NULL, "a readable file (read error)");
        return NULL;
    }
    buf[len] = '\0';
    if (len_out) *len_out = len;
    return buf;
}

int make_dirs(const char *path, moe_error *err) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return moe_error_set(err, EXIT_RUNTIME, "%s: cannot create folder: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        return moe_error_set(err, EXIT_RUNTIME, "%s: cannot create folder: %s", buf, strerror(errno));
    return 0;
}
