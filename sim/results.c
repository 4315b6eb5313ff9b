/* results.c — atomic file output, results.json and its flattened CSV. */
#include "sim/results.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
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

char *read_file_text(const char *path, moe_error *err) {
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
        c->names = realloc(c->names, sizeof(char *) * (size_t)c->cap);
    }
    c->names[c->n++] = strdup(name);
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
        text = strdup(v->valuestring);
    } else if (cJSON_IsArray(v)) {
        size_t tl = 0;
        text = calloc(1, 1);
        for (const cJSON *e = v->child; e; e = e->next) {
            char *p = cJSON_IsString(e) ? strdup(e->valuestring) : cJSON_PrintUnformatted(e);
            text = realloc(text, tl + strlen(p) + 2);
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
        *buf = realloc(*buf, *cap);
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
    char *buf = malloc(cap);
    buf[0] = '\0';
    for (int i = 0; i < cols.n; i++) {
        cJSON *name = cJSON_CreateString(cols.names[i]);
        if (i) buf[len++] = ',';
        append_cell(&buf, &len, &cap, name);
        cJSON_Delete(name);
    }
    buf[len++] = '\n';
    buf[len] = '\0';
    const cJSON **cells = calloc((size_t)cols.n + 1, sizeof *cells);
    for (const cJSON *p = points ? points->child : NULL; p; p = p->next) {
        memset(cells, 0, sizeof *cells * (size_t)cols.n);
        row_ctx r = {&cols, cells};
        flatten(p, "", collect_cell, &r);
        for (int i = 0; i < cols.n; i++) {
            if (len + 2 > cap) buf = realloc(buf, cap *= 2);
            if (i) buf[len++] = ',';
            buf[len] = '\0';
            if (cells[i]) append_cell(&buf, &len, &cap, cells[i]);
        }
        if (len + 2 > cap) buf = realloc(buf, cap *= 2);
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
    json = realloc(json, jl + 2);
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
