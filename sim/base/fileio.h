/* fileio.h — the file operations every tool shares: read a whole input file (bounded), write an
 * output atomically (a reader never sees a half-written or stale output), create folders.
 *
 * Exit codes (errors.h): a path the user gave that cannot be used — missing, unreadable, not a
 * regular file, too large, a folder that cannot be created, an output that cannot be created — is bad
 * input (EXIT_BADINPUT, 2). A failure after the file was opened (a read or write error, a full disk)
 * is a runtime failure (EXIT_RUNTIME, 1). */
#ifndef MOESIM_FILEIO_H
#define MOESIM_FILEIO_H

#include <stddef.h>
#include <stdio.h>
#include "sim/base/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest input file any moesim reader takes: 256 MiB. The largest inputs are step traces of
 * 4096-rank runs (tens of MiB); a file above this is refused before it is read. */
#define MOE_FILE_MAX_BYTES ((size_t)256 << 20)

/* Read a whole regular file of at most max_bytes (0: MOE_FILE_MAX_BYTES), NUL-terminated (caller
 * frees); its length in *len when len is not NULL. Refused without reading (exit 2, the file named):
 * a missing or unreadable file, anything but a regular file (a folder, a FIFO, a device such as
 * /dev/zero: it could block or never end), a file above the cap (its size and the cap named). */
char *read_file_bounded(const char *path, size_t max_bytes, size_t *len, moe_error *err);
/* read_file_bounded(path, MOE_FILE_MAX_BYTES, ...) */
char *read_file_text(const char *path, size_t *len, moe_error *err);

/* An output file being written: data goes to a temporary name in the same folder, and only
 * atomic_file_commit() puts it in place (fflush + fsync of the file, rename over `path`, fsync of the
 * folder, so the new content survives a crash once commit returns). A `path` that already exists and
 * is a device, pipe or socket (/dev/null, /dev/stdout) is written straight through instead: renaming
 * over it would replace the device node itself (as root, /dev/null became a plain file). A folder is
 * refused (exit 2). */
typedef struct {
    FILE *f;
    char path[4096];
    char tmp[4096 + 32]; /* "" when writing straight through */
} atomic_file;

int atomic_file_open(atomic_file *af, const char *path, moe_error *err);
/* Commit (returns 0) or, on any error (including an earlier write error on af->f), remove the
 * temporary and leave `path` as it was. */
int atomic_file_commit(atomic_file *af, moe_error *err);
/* Give up: close and remove the temporary. */
void atomic_file_abort(atomic_file *af);
/* The temporary of `name` in its folder is "NAME.tmp.PID.SERIAL" (the writer's process id and a
 * per-process serial). A writer killed mid-write (SIGKILL, a crash) leaves it behind: this removes,
 * in folder `dir`, the regular files named exactly so for `name` whose PID is no running process
 * (kill(PID, 0) says ESRCH). A file of a live process, or of any other name, is kept. Returns how many
 * were removed. */
int atomic_file_remove_dead_temps(const char *dir, const char *name);
/* Put an already written temporary file `tmp` (in the same folder, e.g. written by gnuplot) in place
 * of `path`: fsync it, rename, fsync the folder. A `path` that exists and is not a regular file is
 * refused (exit 2) and `tmp` removed. */
int file_publish(const char *tmp, const char *path, moe_error *err);

/* Write `text` to `path` atomically (atomic_file_open / fputs / atomic_file_commit). */
int write_file_atomic(const char *path, const char *text, moe_error *err);
/* mkdir -p */
int make_dirs(const char *path, moe_error *err);

#ifdef __cplusplus
}
#endif

#endif
