/* scenario_paths.c — relative paths in a scenario: current directory first, then the scenario's. */
#include "sim/scenario/scenario_paths.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int copy_path(const char *src, char *out, size_t cap) {
    size_t n = strlen(src);
    if (n >= cap) return -2;
    memcpy(out, src, n + 1);
    return 0;
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
    return copy_path(rel, out, cap) ? -2 : -1;
}
