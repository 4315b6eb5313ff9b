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
 *   - no include circle between modules (a source file with its headers) anywhere in the tree: no
 *     module reaches itself again through the project headers it includes (see "include circles");
 *   - the table of layers in CMakeLists.txt's comment says what the build does;
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

/* The name an #include line names (name[PATH_LEN]): '"' for "name", '<' for <name>, 0 when the
 * line is no #include. */
static char include_name(const char *line, char *name) {
    const char *p = line;
    while (isspace((unsigned char)*p)) p++;
    if (strncmp(p, "#include", 8) != 0) return 0;
    p += 8;
    while (isspace((unsigned char)*p)) p++;
    if ((*p != '"' && *p != '<') || sscanf(p + 1, "%255[^\">]", name) != 1) return 0;
    return *p;
}

/* One #include line of file `path` in layer `l`: NULL when allowed, else why not. */
static const char *check_include(const layer *l, const char *path, const char *line, char *why, size_t n) {
    char name[PATH_LEN];
    char kind = include_name(line, name);
    if (!kind) return NULL;
    int cuda_file = ends_with(path, ".cu") || ends_with(path, ".cuh");
    if (kind == '"') {
        if (strchr(name, '/') == NULL) return NULL;            /* same-folder include */
        if (strncmp(name, "tests/", 6) == 0) return NULL;      /* unreachable from a layer anyway */
        if (!may_see(l, name)) {
            snprintf(why, n, "%s includes \"%s\", which layer %s may not see", path, name, l->folder);
            return why;
        }
    } else {
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
    /* the calibration layer reads the scenario's types, not its API */
    assert_null(check_include(calib, "calibration/x.c", "#include \"sim/scenario/scenario_types.h\"", why, sizeof why));
    assert_non_null(check_include(calib, "calibration/x.c", "#include \"sim/scenario/scenario.h\"", why, sizeof why));
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

/* ---- include circles between modules -------------------------------------------------------------
 * A module is a source file with its headers: the files whose paths differ only in the extension
 * (x.c, x.h, x.cpp, x.cu, x.cuh), and x_internal.h, the part of x's contract that only its own folder
 * reads. Module A uses module B when a file of A has an #include "..." line naming a file of B
 * ("dir/name.h" from the repository root, "name.h" from the including file's folder; a name that is
 * no project file, a system or generated header, does not count). An include circle is a strongly
 * connected component of more than one module in the "uses" graph: each of its modules reaches every
 * other one through includes, so none of them can be read, tested or changed without the rest.
 * The graph covers every file of every layer's folder, tools/ and tests/, their subfolders included. */

#define MAX_SOURCES 2048
#define MAX_INCLUDES 16384

typedef struct {
    char path[PATH_LEN];
    int module;
} source_file;

typedef struct {
    int from, to;   /* files */
    int line;       /* of the #include in `from` */
} include_edge;

typedef struct {
    source_file files[MAX_SOURCES];
    int n_files;
    char modules[MAX_SOURCES][PATH_LEN];
    int n_modules;
    include_edge edges[MAX_INCLUDES];
    int n_edges;
} include_graph;

/* The module of a file: its path without the extension, and without "_internal" for a header. */
static void module_key(const char *path, char key[PATH_LEN]) {
    snprintf(key, PATH_LEN, "%.255s", path);
    char *slash = strrchr(key, '/'), *dot = strrchr(key, '.');
    if (dot && (!slash || dot > slash)) *dot = '\0';
    if (ends_with(path, ".h") && ends_with(key, "_internal")) key[strlen(key) - strlen("_internal")] = '\0';
}

static int graph_add_file(include_graph *g, const char *path) {
    assert_true(g->n_files < MAX_SOURCES);
    source_file *f = &g->files[g->n_files];
    snprintf(f->path, PATH_LEN, "%.255s", path);
    char key[PATH_LEN];
    module_key(path, key);
    f->module = -1;
    for (int m = 0; m < g->n_modules && f->module < 0; m++)
        if (strcmp(g->modules[m], key) == 0) f->module = m;
    if (f->module < 0) {
        snprintf(g->modules[g->n_modules], PATH_LEN, "%s", key);
        f->module = g->n_modules++;
    }
    return g->n_files++;
}

static int graph_find_file(const include_graph *g, const char *path) {
    for (int i = 0; i < g->n_files; i++)
        if (strcmp(g->files[i].path, path) == 0) return i;
    return -1;
}

/* The #include "..." lines of file `from` (its whole text), as edges to the project files they name.
 * Every file must be added before the includes of any. */
static void graph_add_includes(include_graph *g, int from, const char *text) {
    const char *path = g->files[from].path, *dir_end = strrchr(path, '/');
    int line_no = 0;
    for (const char *line = text; *line;) {
        size_t len = strcspn(line, "\n");
        char buf[1024], name[PATH_LEN], target[2 * PATH_LEN];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
        line_no++;
        line += len + (line[len] == '\n');
        if (include_name(buf, name) != '"') continue;
        if (strchr(name, '/') || !dir_end) snprintf(target, sizeof target, "%s", name);
        else snprintf(target, sizeof target, "%.*s/%s", (int)(dir_end - path), path, name);
        int to = graph_find_file(g, target);
        if (to < 0 || g->files[to].module == g->files[from].module) continue;
        assert_true(g->n_edges < MAX_INCLUDES);
        g->edges[g->n_edges++] = (include_edge){.from = from, .to = to, .line = line_no};
    }
}

/* Tarjan's strongly connected components of the module graph. */
typedef struct {
    const include_graph *g;
    int *index, *low, *on_stack, *stack, *component;
    int n_stack, next_index, n_components;
} scc_search;

static void strong_connect(scc_search *t, int v) {
    const include_graph *g = t->g;
    t->index[v] = t->low[v] = t->next_index++;
    t->stack[t->n_stack++] = v;
    t->on_stack[v] = 1;
    for (int e = 0; e < g->n_edges; e++) {
        if (g->files[g->edges[e].from].module != v) continue;
        int w = g->files[g->edges[e].to].module;
        if (t->index[w] < 0) {
            strong_connect(t, w);
            if (t->low[w] < t->low[v]) t->low[v] = t->low[w];
        } else if (t->on_stack[w] && t->index[w] < t->low[v]) {
            t->low[v] = t->index[w];
        }
    }
    if (t->low[v] != t->index[v]) return;
    int w;
    do {
        w = t->stack[--t->n_stack];
        t->on_stack[w] = 0;
        t->component[w] = t->n_components;
    } while (w != v);
    t->n_components++;
}

/* The shortest chain of includes from module `root` back to itself inside its component, printed
 * one #include a line. */
static void print_closing_chain(const include_graph *g, const int *component, int root, FILE *out) {
    int n = g->n_modules, *via = malloc(sizeof(int) * n), *queue = malloc(sizeof(int) * n);
    for (int m = 0; m < n; m++) via[m] = -1;   /* the edge that first reached module m */
    int head = 0, tail = 0, closing = -1;
    queue[tail++] = root;
    while (head < tail && closing < 0) {
        int u = queue[head++];
        for (int e = 0; e < g->n_edges && closing < 0; e++) {
            if (g->files[g->edges[e].from].module != u) continue;
            int w = g->files[g->edges[e].to].module;
            if (component[w] != component[root]) continue;
            if (w == root) closing = e;
            else if (via[w] < 0) {
                via[w] = e;
                queue[tail++] = w;
            }
        }
    }
    assert_true(closing >= 0);   /* a component of two or more modules has a circle through each */
    int chain[MAX_SOURCES], len = 0;
    for (int e = closing; e >= 0;) {
        chain[len++] = e;
        int from = g->files[g->edges[e].from].module;
        e = from == root ? -1 : via[from];
    }
    for (int i = len - 1; i >= 0; i--) {
        const include_edge *e = &g->edges[chain[i]];
        fprintf(out, "  %s:%d includes %s\n", g->files[e->from].path, e->line, g->files[e->to].path);
    }
    free(via);
    free(queue);
}

/* Prints every include circle (its modules, then the chain of includes that closes it through its
 * first module) and returns how many there are. */
static int report_include_circles(const include_graph *g, FILE *out) {
    int n = g->n_modules;
    scc_search t = {.g = g};
    int *buf = malloc(sizeof(int) * 5 * (size_t)(n ? n : 1));
    t.index = buf, t.low = buf + n, t.on_stack = buf + 2 * n, t.stack = buf + 3 * n, t.component = buf + 4 * n;
    for (int m = 0; m < n; m++) t.index[m] = -1, t.on_stack[m] = 0;
    for (int m = 0; m < n; m++)
        if (t.index[m] < 0) strong_connect(&t, m);
    int circles = 0;
    for (int c = 0; c < t.n_components; c++) {
        int size = 0, root = -1;
        for (int m = 0; m < n; m++)
            if (t.component[m] == c && size++ == 0) root = m;
        if (size < 2) continue;
        circles++;
        fprintf(out, "layering: include circle between %d modules:", size);
        for (int m = 0; m < n; m++)
            if (t.component[m] == c) fprintf(out, " %s", g->modules[m]);
        fprintf(out, "\n");
        print_closing_chain(g, t.component, root, out);
    }
    free(buf);
    return circles;
}

/* Adds every source file under `dir` (subfolders too) to the graph. */
static void add_tree(include_graph *g, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[2 * PATH_LEN];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        DIR *sub = opendir(path);
        if (sub) {
            closedir(sub);
            add_tree(g, path);
        } else if (is_source(e->d_name)) {
            graph_add_file(g, path);
        }
    }
    closedir(d);
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    char *text = malloc((size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    text[n] = '\0';
    fclose(f);
    return text;
}

static void modules_form_no_include_circle(void **state) {
    (void)state;
    load_table();
    include_graph *g = calloc(1, sizeof *g);
    assert_non_null(g);
    for (int i = 0; i < N_LAYERS; i++) add_tree(g, LAYERS[i].folder);
    add_tree(g, "tools");
    add_tree(g, "tests");
    for (int f = 0; f < g->n_files; f++) {
        char *text = read_text(g->files[f].path);
        graph_add_includes(g, f, text);
        free(text);
    }
    fprintf(stderr, "layering: %d files, %d modules, %d project includes between modules\n", g->n_files,
            g->n_modules, g->n_edges);
    /* the tree was really read: every layer, its headers and their includes */
    assert_true(g->n_files > 250);
    assert_true(g->n_modules > 150);
    assert_true(g->n_edges > 500);
    assert_true(graph_find_file(g, "sim/scenario/scenario.h") >= 0);
    assert_true(graph_find_file(g, "tests/fuzz/fuzz_input.h") >= 0);
    assert_int_equal(report_include_circles(g, stderr), 0);
    free(g);
}

/* Synthetic trees, each file a path and its text. */
typedef struct {
    const char *path, *text;
} fake_file;

static int circles_in(const fake_file *files, int n, char **report) {
    include_graph *g = calloc(1, sizeof *g);
    assert_non_null(g);
    for (int i = 0; i < n; i++) graph_add_file(g, files[i].path);
    for (int i = 0; i < n; i++) graph_add_includes(g, i, files[i].text);
    size_t len;
    FILE *out = open_memstream(report, &len);
    assert_non_null(out);
    int circles = report_include_circles(g, out);
    fclose(out);
    free(g);
    return circles;
}

static void the_circle_finder_detects_circles(void **state) {
    (void)state;
    char *report;
    /* a folder's shared types in its API's header: the API's source includes a sibling that
     * includes the types back */
    const fake_file shared[] = {
        {"s/scn.h", "#include <stdint.h>\n#include \"base/err.h\"\n"},
        {"s/scn.c", "#include \"s/scn.h\"\n\n#include \"s/presets.h\"\n"},
        {"s/presets.h", "#include \"s/scn.h\"\n"},
        {"s/presets.c", "#include \"presets.h\"\n"},
        {"base/err.h", ""},
    };
    assert_int_equal(circles_in(shared, 5, &report), 1);
    printf("%s", report);
    assert_non_null(strstr(report, "include circle between 2 modules: s/scn s/presets\n"
                                   "  s/scn.c:3 includes s/presets.h\n"
                                   "  s/presets.h:1 includes s/scn.h\n"));
    free(report);
    /* the types in a header of their own: one-way */
    const fake_file split[] = {
        {"s/scn_types.h", "#include \"base/err.h\"\n"},
        {"s/scn.h", "#include \"s/scn_types.h\"\n"},
        {"s/scn.c", "#include \"s/scn.h\"\n#include \"s/presets.h\"\n"},
        {"s/presets.h", "#include \"s/scn_types.h\"\n"},
        {"s/presets.c", "#include \"presets.h\"\n#include \"missing.h\"\n"},
        {"base/err.h", ""},
    };
    assert_int_equal(circles_in(split, 6, &report), 0);
    assert_string_equal(report, "");
    free(report);
    /* a private header that includes its module's public one is that module; a sibling that the
     * public header includes and that uses the private header closes a circle */
    const fake_file internal[] = {
        {"r/db.h", "#include \"base/err.h\"\n"},
        {"r/db_internal.h", "#include \"r/db.h\"\n"},
        {"r/db.c", "#include \"r/db_internal.h\"\n"},
        {"r/export.h", "#include \"r/db.h\"\n"},
        {"r/export.c", "#include \"r/export.h\"\n#include \"r/db_internal.h\"\n"},
        {"base/err.h", ""},
    };
    assert_int_equal(circles_in(internal, 6, &report), 0);
    free(report);
    const fake_file internal_back[] = {
        {"r/db.h", "#include \"r/export.h\"\n"},
        {"r/db_internal.h", "#include \"r/db.h\"\n"},
        {"r/db.c", "#include \"r/db_internal.h\"\n"},
        {"r/export.h", ""},
        {"r/export.c", "#include \"r/export.h\"\n#include \"r/db_internal.h\"\n"},
    };
    assert_int_equal(circles_in(internal_back, 5, &report), 1);
    assert_non_null(strstr(report, "  r/db.h:1 includes r/export.h\n  r/export.c:2 includes r/db_internal.h\n"));
    free(report);
    /* a longer circle through .c files, one module hanging off it, and a second circle apart */
    const fake_file chains[] = {
        {"a.h", ""}, {"a.c", "#include \"b.h\"\n"},
        {"b.h", ""}, {"b.c", "#include \"c.h\"\n"},
        {"c.h", ""}, {"c.c", "  #include \"a.h\"\n"},
        {"d.c", "#include \"a.h\"\n"},
        {"x/p.h", "#include \"x/q.h\"\n"}, {"x/q.h", "#include \"p.h\"\n"},
    };
    assert_int_equal(circles_in(chains, 9, &report), 2);
    printf("%s", report);
    assert_non_null(strstr(report, "include circle between 3 modules: a b c\n"
                                   "  a.c:1 includes b.h\n  b.c:1 includes c.h\n  c.c:1 includes a.h\n"));
    assert_non_null(strstr(report, "include circle between 2 modules: x/p x/q\n"));
    assert_null(strstr(report, "d.c"));
    free(report);
}

/* ---- the table in CMakeLists.txt --------------------------------------------------------------------
 * CMakeLists.txt also shows the layers to its reader, as a comment table ("layer folder may-use
 * links"). Each row must say what moesim_layer() does: its "may use" names (a layer's name for its
 * folder, "layer/file.h" for one header of it, any other path as it is, "-" for none; they end at
 * the first other word) are exactly the paths the layer sees besides its own folder, and its links
 * name SimGrid and MPI (other than "never ...") exactly when the layer links them. */
typedef struct {
    char name[64], folder[PATH_LEN];
    char uses[MAX_SEEN][PATH_LEN];
    int n_uses;
    char links[256];
} table_row;

/* The rows of the table in `cmake` (CMakeLists.txt's text); their count. */
static int read_table(const char *cmake, table_row *rows, int cap) {
    const char *p = strstr(cmake, "#   layer ");
    assert_non_null(p);
    char words[MAX_LAYERS][MAX_SEEN + 8][PATH_LEN];
    int n_words[MAX_LAYERS], n = 0;
    for (p = strchr(p, '\n'); p && strncmp(p + 1, "#   ", 4) == 0 && n < cap; p = strchr(p + 1, '\n'), n++) {
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)strcspn(p + 5, "\n"), p + 5);
        n_words[n] = 0;
        for (char *w = strtok(line, " "); w && n_words[n] < MAX_SEEN + 8; w = strtok(NULL, " "))
            snprintf(words[n][n_words[n]++], PATH_LEN, "%s", w);
        assert_true(n_words[n] >= 3);
        memset(&rows[n], 0, sizeof rows[n]);
        snprintf(rows[n].name, sizeof rows[n].name, "%.63s", words[n][0]);
        snprintf(rows[n].folder, PATH_LEN, "%s", words[n][1]);
    }
    for (int r = 0; r < n; r++) {
        int w = 2;
        for (; w < n_words[r]; w++) {
            char *word = words[r][w], head[PATH_LEN];
            if (strcmp(word, "-") == 0) continue;
            snprintf(head, sizeof head, "%.*s", (int)strcspn(word, "/"), word);
            const table_row *of = NULL;
            for (int k = 0; k < n; k++)
                if (strcmp(rows[k].name, head) == 0) of = &rows[k];
            if (!of && !strchr(word, '/')) break;   /* the links column */
            assert_true(rows[r].n_uses < MAX_SEEN);
            snprintf(rows[r].uses[rows[r].n_uses++], PATH_LEN, "%s%s", of ? of->folder : word,
                     of ? word + strlen(head) : "");
        }
        for (; w < n_words[r]; w++)
            snprintf(rows[r].links + strlen(rows[r].links), sizeof rows[r].links - strlen(rows[r].links), " %s",
                     words[r][w]);
    }
    return n;
}

static int names_library(const char *links, const char *lib) {
    char never[64];
    snprintf(never, sizeof never, "never %s", lib);
    return strstr(links, lib) && !strstr(links, never);
}

/* How many layers of the build the table misstates (each printed). */
static int table_errors(const table_row *rows, int n) {
    int bad = 0;
    for (int i = 0; i < N_LAYERS; i++) {
        const layer *l = &LAYERS[i];
        const table_row *row = NULL;
        for (int r = 0; r < n; r++)
            if (strcmp(rows[r].folder, l->folder) == 0) row = &rows[r];
        int same = row != NULL;
        for (int k = 0; same && k < row->n_uses; k++) same = may_see(l, row->uses[k]) && strcmp(row->uses[k], l->folder);
        for (int k = 0; same && k < l->n_seen; k++) {
            int listed = strcmp(l->seen[k], l->folder) == 0;
            for (int u = 0; u < row->n_uses; u++) listed |= strcmp(row->uses[u], l->seen[k]) == 0;
            same = listed;
        }
        same = same && names_library(row->links, "SimGrid") == l->simgrid && names_library(row->links, "MPI") == l->mpi;
        if (!same) {
            fprintf(stderr, "layering: CMakeLists.txt's table misstates layer %s (it sees:", l->folder);
            for (int k = 0; k < l->n_seen; k++) fprintf(stderr, " %s", l->seen[k]);
            fprintf(stderr, "%s%s)\n", l->simgrid ? "; links SimGrid" : "", l->mpi ? "; links MPI" : "");
            bad++;
        }
    }
    return bad;
}

static void the_cmake_table_is_the_build(void **state) {
    (void)state;
    load_table();
    char *cmake = read_text("CMakeLists.txt");
    table_row rows[MAX_LAYERS];
    int n = read_table(cmake, rows, MAX_LAYERS);
    assert_true(n >= N_LAYERS);
    assert_int_equal(table_errors(rows, n), 0);
    /* a row that says less or more than its layer sees, or a library it does not link, is caught */
    const char *edits[][2] = {
        {"base scenario/scenario_types.h plan/costmodel.h plan/recipes.h plan/global_params.h kernels",
         "base scenario plan/costmodel.h plan/recipes.h plan/global_params.h kernels"},
        {"base scenario/scenario_types.h plan/costmodel.h plan/recipes.h plan/global_params.h kernels",
         "base scenario/scenario_types.h plan kernels"},
        {"plan scenario base kernels/moe_capacity.h", "plan scenario base kernels"},
        {"#   exec        sim/exec           program plan scenario base platforms\n",
         "#   exec        sim/exec           program plan scenario base platforms SimGrid\n"},
        {"#   run         sim/run            plan scenario base", "#   run         sim/run            plan scenario base platforms"},
    };
    for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
        char *at = strstr(cmake, edits[e][0]);
        assert_non_null(at);
        size_t before = (size_t)(at - cmake), cut = strlen(edits[e][0]);
        char *edited = malloc(strlen(cmake) + strlen(edits[e][1]) + 1);
        sprintf(edited, "%.*s%s%s", (int)before, cmake, edits[e][1], at + cut);
        n = read_table(edited, rows, MAX_LAYERS);
        assert_int_equal(table_errors(rows, n), 1);
        free(edited);
    }
    free(cmake);
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
        cmocka_unit_test(modules_form_no_include_circle),
        cmocka_unit_test(the_circle_finder_detects_circles),
        cmocka_unit_test(the_cmake_table_is_the_build),
        cmocka_unit_test(tools_hold_only_mains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
