/* scenario_paths.c — relative paths in a scenario: the current directory, the scenario's, then the
 * folders moesim's shipped files live in (scenario_paths.h). */
#include "sim/scenario/scenario_paths.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int copy_path(const char *src, char *out, size_t cap) {
    size_t n = strlen(src);
    if (n >= cap) return -2;
    memcpy(out, src, n + 1);
    return 0;
}

int moesim_data_root(int i, char *out, size_t cap) {
    if (i == 0) {
        /* installed: <prefix>/bin/simrun -> <prefix>/share/moesim (MOESIM_BIN_TO_DATA, from CMake) */
#ifdef MOESIM_BIN_TO_DATA
        char exe[4096];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0) return -1;
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (!slash) return -1;
        *slash = '\0';
        int w = snprintf(out, cap, "%s/%s", exe, MOESIM_BIN_TO_DATA);
        return w > 0 && (size_t)w < cap && access(out, F_OK) == 0 ? 0 : -1;
#else
        return -1;
#endif
    }
    if (i == 1) {
        /* the source tree of this build; the environment overrides it ("" = none) */
        const char *root = getenv("MOESIM_SOURCE_DIR");
#ifdef MOESIM_SOURCE_DIR
        if (!root) root = MOESIM_SOURCE_DIR;
#endif
        if (!root || !*root) return -1;
        return copy_path(root, out, cap) ? -1 : 0;
    }
    return -1;
}

int scenario_resolve_path(const scenario *s, const char *rel, char *out, size_t cap) {
    if (!rel || !out || cap == 0) return -2;
    int found_here = access(rel, F_OK) == 0;
    if (rel[0] == '/' || found_here) {   /* absolute, or found from the current directory */
        if (copy_path(rel, out, cap)) return -2;
        return found_here ? 0 : -1;
    }
    /* "dir/x.json" -> "dir/<rel>"; a scenario without a directory lives in the current one */
    const char *slash = strrchr(s->file, '/');
    if (slash) {
        int dir_len = (int)(slash - s->file);
        int n = snprintf(out, cap, "%.*s/%s", dir_len, s->file, rel);
        if (n < 0 || (size_t)n >= cap) return -2;
        if (access(out, F_OK) == 0) return 0;
    }
    /* moesim's own files ("calibration/models/h800-published.json") from anywhere */
    char root[4096];
    for (int i = 0; i < 2; i++) {
        if (moesim_data_root(i, root, sizeof root)) continue;
        int n = snprintf(out, cap, "%s/%s", root, rel);
        if (n < 0 || (size_t)n >= cap) return -2;
        if (access(out, F_OK) == 0) return 0;
    }
    return copy_path(rel, out, cap) ? -2 : -1;
}
