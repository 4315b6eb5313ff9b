/* fileio.h — the few file operations every tool shares: read a whole file, write one atomically (a
 * reader never sees a half-written output), create folders. */
#ifndef MOESIM_FILEIO_H
#define MOESIM_FILEIO_H

#include <stddef.h>
#include "sim/base/errors.h"

/* Write `text` to `path` atomically: a temporary name in the same folder, fsync, then rename(). */
int write_file_atomic(const char *path, const char *text, moe_error *err);
/* Read a whole file, NUL-terminated (caller frees); its length in *len when len is not NULL.
 * NULL with err set (file named, the reason) on failure. */
char *read_file_text(const char *path, size_t *len, moe_error *err);
/* mkdir -p */
int make_dirs(const char *path, moe_error *err);

#endif
