/* results.c — atomic file output, results.json and its flattened CSV. */
#include "sim/report/results.h"
#include "sim/base/alloc.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

cJSON *results_document(cJSON *points) {
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "format", "moesim-results/1");
    cJSON_AddStringToObject(doc, "version", MOESIM_VERSION);
    cJSON_AddItemToObject(doc, "points", points);
    return doc;
}

/* ---- CSV: flatten every point, columns in first-seen order over all points ------------------- */

typedef struct {
    char **names;
    int n, cap;
} columns;

static int column_index(const columns *c, const char *name) {
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->names[i], name) == 0) return i;
    return -1;
}

static void column_add(columns *c, const char *name) {
    if (column_index(c, name) >= 0) return;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        c->names = moe_xrealloc(c->names, (size_t)c->cap, sizeof(char *));
    }
    c->names[c->n++] = moe_xstrdup(name);
}

static int is_scalar_array(const cJSON *a) {
    for (const cJSON *e = a->child; e; e = e->next)
        if (cJSON_IsObject(e) || cJSON_IsArray(e)) return 0;
    return 1;
}

/* Visit every flattened scalar of `node` under `prefix`; calls fn(name, value, ctx). */
typedef void (*flat_fn)(const char *name, const cJSON *value, void *ctx);

static void flatten(const cJSON *node, const char *prefix, flat_fn fn, void *ctx) {
    for (const cJSON *e = node->child; e; e = e->next) {
        char name[512];
        snprintf(name, sizeof name, "%s%s%s", prefix, *prefix ? "." : "", e->string);
        if (cJSON_IsObject(e))
            flatten(e, name, fn, ctx);
        else if (!cJSON_IsArray(e) || is_scalar_array(e))
            fn(name, e, ctx);
    }
}

static void collect_column(const char *name, const cJSON *v, void *ctx) {
    (void)v;
    column_add(ctx, name);
}

/* One CSV cell: numbers as cJSON prints them, strings quoted when needed, arrays joined with ';'. */
static void append_cell(char **buf, size_t *len, size_t *cap, const cJSON *v) {
    char *text = NULL;
    if (cJSON_IsString(v)) {
        text = moe_xstrdup(v->valuestring);
    } else if (cJSON_IsArray(v)) {
        size_t tl = 0;
        text = moe_xcalloc(1, 1);
        for (const cJSON *e = v->child; e; e = e->next) {
            char *p = cJSON_IsString(e) ? moe_xstrdup(e->valuestring) : cJSON_PrintUnformatted(e);
            text = moe_xrealloc(text, tl + strlen(p) + 2, 1);
            tl += (size_t)sprintf(text + tl, "%s%s", tl ? ";" : "", p);
            free(p);
        }
    } else {
        text = cJSON_PrintUnformatted(v);
    }
    int quote = strpbrk(text, ",\"\n;") != NULL && !cJSON_IsNumber(v);
    size_t need = *len + 2 * strlen(text) + 4;
    if (need > *cap) {
        while (need > *cap) *cap *= 2;
        *buf = moe_xrealloc(*buf, *cap, 1);
    }
    if (quote) (*buf)[(*len)++] = '"';
    for (const char *p = text; *p; p++) {
        if (*p == '"') (*buf)[(*len)++] = '"';
        (*buf)[(*len)++] = *p;
    }
    if (quote) (*buf)[(*len)++] = '"';
    (*buf)[*len] = '\0';
    free(text);
}

typedef struct {
    const columns *cols;
    const cJSON **cells;
} row_ctx;

static void collect_cell(const char *name, const cJSON *v, void *ctx) {
    row_ctx *r = ctx;
    int i = column_index(r->cols, name);
    if (i >= 0) r->cells[i] = v;
}

char *results_csv(const cJSON *doc) {
    const cJSON *points = cJSON_GetObjectItemCaseSensitive(doc, "points");
    columns cols = {0};
    for (const cJSON *p = points ? points->child : NULL; p; p = p->next) flatten(p, "", collect_column, &cols);

    size_t cap = 1 << 16, len = 0;
    char *buf = moe_xmalloc(cap);
    buf[0] = '\0';
    for (int i = 0; i < cols.n; i++) {
        cJSON *name = cJSON_CreateString(cols.names[i]);
        if (i) buf[len++] = ',';
        append_cell(&buf, &len, &cap, name);
        cJSON_Delete(name);
    }
    buf[len++] = '\n';
    buf[len] = '\0';
    const cJSON **cells = moe_xcalloc((size_t)cols.n + 1, sizeof *cells);
    for (const cJSON *p = points ? points->child : NULL; p; p = p->next) {
        memset(cells, 0, sizeof *cells * (size_t)cols.n);
        row_ctx r = {&cols, cells};
        flatten(p, "", collect_cell, &r);
        for (int i = 0; i < cols.n; i++) {
            if (len + 2 > cap) buf = moe_xrealloc(buf, cap *= 2, 1);
            if (i) buf[len++] = ',';
            buf[len] = '\0';
            if (cells[i]) append_cell(&buf, &len, &cap, cells[i]);
        }
        if (len + 2 > cap) buf = moe_xrealloc(buf, cap *= 2, 1);
        buf[len++] = '\n';
        buf[len] = '\0';
    }
    free(cells);
    for (int i = 0; i < cols.n; i++) free(cols.names[i]);
    free(cols.names);
    return buf;
}

int results_write(const char *dir, const cJSON *doc, moe_error *err) {
    if (make_dirs(dir, err)) return err->code;
    char path[4096];
    char *json = cJSON_Print(doc);
    snprintf(path, sizeof path, "%s/results.json", dir);
    size_t jl = strlen(json);
    json = moe_xrealloc(json, jl + 2, 1);
    json[jl] = '\n';
    json[jl + 1] = '\0';
    int rc = write_file_atomic(path, json, err);
    free(json);
    if (rc) return rc;
    char *csv = results_csv(doc);
    snprintf(path, sizeof path, "%s/results.csv", dir);
    rc = write_file_atomic(path, csv, err);
    free(csv);
    return rc;
}
