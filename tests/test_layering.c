/* test_layering.c — the layer rules of CMakeLists.txt, checked against every source's #include lines.
 *
 * The build already refuses most violations: each layer compiles against an include tree holding only
 * the folders it may use. This test covers what compiling cannot see (a header that no file of its own
 * layer includes, system headers, the graph as a whole) and reads the same table the build uses
 * (build/layers.txt, written by moesim_layer()), so the rule exists once:
 *   - a project include ("sim/x/y.h") in a layer's file names a path the layer may see;
 *   - SimGrid headers only in layers that link SimGrid, <mpi.h> only in layers that link MPI;
 *     CUDA / cuBLAS / NCCL headers only in .cu / .cuh files;
 *   - the "may see" graph between layers has no circle;
 *   - tools/ holds only mains (every C file there defines main).
 * Each checker is also run on a synthetic violation, so the test fails if a checker stops detecting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LAYERS 32
#define MAX_SEEN 24
#define PATH_LEN 256

typedef struct {
    char folder[PATH_LEN];
    char seen[MAX_SEEN][PATH_LEN];
    int n_seen;
    int simgrid, mpi;
} layer;

static layer LAYERS[MAX_LAYERS];
static int N_LAYERS;

static void load_table(void) {
    FILE *f = fopen(MOESIM_LAYER_TABLE, "r");
    assert_non_null(f);
    char line[4096];
    N_LAYERS = 0;
    while (fgets(line, sizeof line, f) && N_LAYERS < MAX_LAYERS) {
        line[strcspn(line, "\n")] = '\0';
        char *seen = strchr(line, '|'), *sys;
        if (!seen) continue;
        *seen++ = '\0';
        sys = strchr(seen, '|');
        assert_non_null(sys);
        *sys++ = '\0';
        layer *l = &LAYERS[N_LAYERS++];
        memset(l, 0, sizeof *l);
        snprintf(l->folder, sizeof l->folder, "%.255s", line);
        for (char *tok = strtok(seen, " "); tok && l->n_seen < MAX_SEEN; tok = strtok(NULL, " "))
            snprintf(l->seen[l->n_seen++], PATH_LEN, "%s", tok);
        l->simgrid = strstr(sys, "simgrid") != NULL;
        l->mpi = strstr(sys, "mpi") != NULL;
    }
    fclose(f);
    assert_true(N_LAYERS >= 10);
}

/* The layer whose folder holds `path` (the longest folder prefix), or NULL. */
static const layer *layer_of(const char *path) {
    const layer *best = NULL;
    for (int i = 0; i < N_LAYERS; i++) {
        size_t n = strlen(LAYERS[i].folder);
        if (strncmp(path, LAYERS[i].folder, n) == 0 && path[n] == '/' &&
            (!best || n > strlen(best->folder)))
            best = &LAYERS[i];
    }
    return best;
}

static int may_see(const layer *l, const char *inc) {
    for (int i = 0; i < l->n_seen; i++) {
        size_t n = strlen(l->seen[i]);
        if (strncmp(inc, l->seen[i], n) == 0 && (inc[n] == '/' || inc[n] == '\0')) return 1;
    }
    return 0;
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* One #include line of file `path` in layer `l`: NULL when allowed, else why not. */
static const char *check_include(const layer *l, const char *path, const char *line, char *why, size_t n) {
    const char *p = line;
    while (isspace((unsigned char)*p)) p++;
    if (strncmp(p, "#include", 8) != 0) return NULL;
    p += 8;
    while (isspace((unsigned char)*p)) p++;
    char name[PATH_LEN];
    if (sscanf(p + 1, "%255[^\">]", name) != 1) return NULL;
    int cuda_file = ends_with(path, ".cu") || ends_with(path, ".cuh");
    if (*p == '"') {
        if (strchr(name, '/') == NULL) return NULL;            /* same-folder include */
        if (strncmp(name, "tests/", 6) == 0) return NULL;      /* unreachable from a layer anyway */
        if (!may_see(l, name)) {
            snprintf(why, n, "%s includes \"%s\", which layer %s may not see", path, name, l->folder);
            return why;
        }
    } else if (*p == '<') {
        if (strncmp(name, "simgrid", 7) == 0 && !l->simgrid) {
            snprintf(why, n, "%s includes <%s> but layer %s does not link SimGrid", path, name, l->folder);
            return why;
        }
        if (strcmp(name, "mpi.h") == 0 && !l->mpi) {
            snprintf(why, n, "%s includes <mpi.h> but layer %s does not link MPI", path, l->folder);
            return why;
        }
        if ((strncmp(name, "cuda", 4) == 0 || strncmp(name, "cublas", 6) == 0 ||
             strcmp(name, "nccl.h") == 0) && !cuda_file) {
            snprintf(why, n, "%s includes <%s> outside a .cu/.cuh file", path, name);
            return why;
        }
    }
    return NULL;
}

static int is_source(const char *name) {
    return ends_with(name, ".c") || ends_with(name, ".h") || ends_with(name, ".cpp") ||
           ends_with(name, ".cu") || ends_with(name, ".cuh");
}

/* Checks every source file of every layer; prints each violation; returns their count. */
static int scan_layer(const layer *l) {
    DIR *d = opendir(l->folder);
    if (!d) return 0;
    int bad = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!is_source(e->d_name)) continue;
        char path[2 * PATH_LEN];
        snprintf(path, sizeof path, "%s/%s", l->folder, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        char line[1024], why[1024];
        while (fgets(line, sizeof line, f))
            if (check_include(l, path, line, why, sizeof why)) {
                fprintf(stderr, "layering: %s\n", why);
                bad++;
            }
        fclose(f);
    }
    closedir(d);
    return bad;
}

static void every_include_is_allowed(void **state) {
    (void)state;
    load_table();
    int bad = 0;
    for (int i = 0; i < N_LAYERS; i++) bad += scan_layer(&LAYERS[i]);
    assert_int_equal(bad, 0);
}

static void the_checker_detects_violations(void **state) {
    (void)state;
    load_table();
    const layer *scenario = layer_of("sim/scenario/x.c"), *simgrid = layer_of("sim/simgrid/x.c");
    assert_non_null(scenario);
    assert_non_null(simgrid);
    char why[512];
    /* the scenario layer calling the plan: the circle the restructuring removed */
    assert_non_null(check_include(scenario, "sim/scenario/x.c", "#include \"sim/plan/plan.h\"", why, sizeof why));
    assert_null(check_include(scenario, "sim/scenario/x.c", "#include \"sim/base/errors.h\"", why, sizeof why));
    assert_non_null(check_include(scenario, "sim/scenario/x.c", "#include <simgrid/engine.h>", why, sizeof why));
    assert_null(check_include(simgrid, "sim/simgrid/x.c", "#include <simgrid/engine.h>", why, sizeof why));
    assert_non_null(check_include(simgrid, "sim/simgrid/x.c", "#include <mpi.h>", why, sizeof why));
    assert_non_null(check_include(scenario, "sim/scenario/x.c", "#include <cuda_runtime.h>", why, sizeof why));
    const layer *calib = layer_of("calibration/x.c");
    assert_non_null(calib);
    assert_null(check_include(calib, "calibration/x.c", "#include \"sim/plan/costmodel.h\"", why, sizeof why));
    assert_non_null(check_include(calib, "calibration/x.c", "#include \"sim/plan/plan.h\"", why, sizeof why));
    assert_non_null(check_include(calib, "calibration/x.c", "#include \"sim/exec/step_exec.h\"", why, sizeof why));
}

/* Depth-first search for a circle in the graph layer -> layers of the paths it may see. */
static int visit(int i, int *state_of, int *edge_count) {
    if (state_of[i] == 1) return 1;
    if (state_of[i] == 2) return 0;
    state_of[i] = 1;
    for (int k = 0; k < LAYERS[i].n_seen; k++) {
        char probe[2 * PATH_LEN];
        snprintf(probe, sizeof probe, "%s/x", LAYERS[i].seen[k]);
        const layer *t = layer_of(probe);
        if (!t) {  /* a single header: the layer of its folder */
            snprintf(probe, sizeof probe, "%s", LAYERS[i].seen[k]);
            t = layer_of(probe);
        }
        if (!t || t == &LAYERS[i]) continue;
        ++*edge_count;
        if (visit((int)(t - LAYERS), state_of, edge_count)) return 1;
    }
    state_of[i] = 2;
    return 0;
}

static void layers_form_no_circle(void **state) {
    (void)state;
    load_table();
    int state_of[MAX_LAYERS] = {0}, edges = 0;
    for (int i = 0; i < N_LAYERS; i++) assert_false(visit(i, state_of, &edges));
    assert_true(edges > N_LAYERS);   /* the graph was really walked */
    /* a synthetic circle is found: base made to see sim/point, which sees base */
    layer *b = (layer *)layer_of("sim/base/x.c");
    const layer *top = layer_of("sim/point/x.c");
    assert_non_null(b);
    assert_non_null(top);
    assert_true(may_see(top, "sim/base/errors.h"));
    layer saved = *b;
    snprintf(b->seen[b->n_seen++], PATH_LEN, "%s", top->folder);
    int fresh[MAX_LAYERS] = {0}, found = 0;
    for (int i = 0; i < N_LAYERS && !found; i++) found = visit(i, fresh, &edges);
    *b = saved;
    assert_true(found);
}

static int defines_main(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[1024];
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = strncmp(line, "int main(", 9) == 0;
    fclose(f);
    return found;
}

static void tools_hold_only_mains(void **state) {
    (void)state;
    DIR *d = opendir("tools");
    assert_non_null(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        if (ends_with(e->d_name, ".h") || ends_with(e->d_name, ".cu") || ends_with(e->d_name, ".cpp")) {
            fprintf(stderr, "layering: tools/%s is not a main\n", e->d_name);
            fail();
        }
        if (!ends_with(e->d_name, ".c")) continue;
        char path[2 * PATH_LEN];
        snprintf(path, sizeof path, "tools/%s", e->d_name);
        if (!defines_main(path)) {
            fprintf(stderr, "layering: %s defines no main\n", path);
            fail();
        }
        n++;
    }
    closedir(d);
    assert_true(n >= 4);
    assert_false(defines_main("sim/base/errors.c"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_include_is_allowed),
        cmocka_unit_test(the_checker_detects_violations),
        cmocka_unit_test(layers_form_no_circle),
        cmocka_unit_test(tools_hold_only_mains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
