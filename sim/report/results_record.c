/* results_record.c — a point object flattened into one record (results_record.h). */
#include "sim/report/results_record.h"
#include "sim/base/alloc.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

void record_buf_put(record_buf *b, const void *bytes, size_t n) {
    if (n == 0) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        b->data = moe_xrealloc(b->data, cap, 1);
        b->cap = cap;
    }
    memcpy(b->data + b->len, bytes, n);
    b->len += n;
}

void record_buf_free(record_buf *b) {
    free(b->data);
    *b = (record_buf){0};
}

static void put_u8(record_buf *b, uint8_t v) { record_buf_put(b, &v, 1); }
static void put_u16(record_buf *b, uint16_t v) { record_buf_put(b, &v, 2); }
static void put_u32(record_buf *b, uint32_t v) { record_buf_put(b, &v, 4); }

static void put_text(record_buf *b, const char *s) {
    uint32_t n = s ? (uint32_t)strlen(s) : 0;
    put_u32(b, n);
    if (n) record_buf_put(b, s, n);
}

record_kind record_kind_of(const cJSON *v) {
    if (cJSON_IsNumber(v)) return KIND_NUMBER;
    if (cJSON_IsBool(v)) return KIND_BOOL;
    if (cJSON_IsString(v)) return KIND_STRING;
    return KIND_JSON;
}

/* One leaf: path, kind, value. */
static void put_entry(record_buf *b, const char *path, size_t path_len, const cJSON *v) {
    put_u16(b, (uint16_t)path_len);
    record_buf_put(b, path, path_len);
    record_kind k = record_kind_of(v);
    put_u8(b, (uint8_t)k);
    if (k == KIND_NUMBER) {
        double d = v->valuedouble;
        record_buf_put(b, &d, sizeof d);
    } else if (k == KIND_BOOL) {
        put_u8(b, cJSON_IsTrue(v));
    } else if (k == KIND_STRING) {
        put_text(b, v->valuestring);
    } else {
        char *t = cJSON_PrintUnformatted(v);
        put_text(b, t);
        free(t);
    }
}

/* Depth-first over `node`'s members; objects recurse, everything else is a leaf. Returns entries. */
static int flatten(record_buf *b, const cJSON *node, char *path, size_t plen, int top) {
    int n = 0;
    for (const cJSON *e = node->child; e; e = e->next) {
        if (top && (strcmp(e->string, "id") == 0 || strcmp(e->string, "scenario") == 0 ||
                    strcmp(e->string, "status") == 0 || strcmp(e->string, "reason") == 0))
            continue;   /* travel beside the entries */
        size_t kl = strlen(e->string), nl = plen + (plen ? 1 : 0) + kl;
        if (nl >= 1024) continue;   /* deeper than any result key: not representable, left out */
        if (plen) path[plen] = RECORD_PATH_SEP;
        memcpy(path + plen + (plen ? 1 : 0), e->string, kl);
        if (cJSON_IsObject(e) && e->child) {
            n += flatten(b, e, path, nl, 0);
        } else {
            put_entry(b, path, nl, e);
            n++;
        }
    }
    return n;
}

void record_encode(record_buf *out, record_status status, const char *reason, const char *scenario_patch,
                   const cJSON *point) {
    put_u8(out, (uint8_t)status);
    put_text(out, reason);
    put_text(out, scenario_patch);
    size_t at = out->len;
    put_u16(out, 0);
    if (point) {
        char path[1024];
        int n = flatten(out, point, path, 0, 1);
        uint16_t n16 = (uint16_t)(n > 65535 ? 65535 : n);
        memcpy(out->data + at, &n16, 2);
    }
}

/* ---- reading ---------------------------------------------------------------------------------- */

static int take(record_reader *r, void *dst, size_t n) {
    if ((size_t)(r->end - r->p) < n) return -1;
    memcpy(dst, r->p, n);
    r->p += n;
    return 0;
}

static int take_text(record_reader *r, const char **s, uint32_t *n) {
    if (take(r, n, 4)) return -1;
    if ((size_t)(r->end - r->p) < *n) return -1;
    *s = *n ? r->p : NULL;
    r->p += *n;
    return 0;
}

int record_open(record_reader *r, const void *rec, size_t len) {
    memset(r, 0, sizeof *r);
    r->p = rec;
    r->end = r->p + len;
    uint8_t st;
    uint16_t n;
    if (take(r, &st, 1) || take_text(r, &r->reason, &r->reason_len) || take_text(r, &r->patch, &r->patch_len) ||
        take(r, &n, 2))
        return -1;
    if (st != RECORD_OK && st != RECORD_INFEASIBLE && st != RECORD_ERROR && st != RECORD_ERROR_INPUT) return -1;
    r->status = (record_status)st;
    r->n_entries = n;
    return 0;
}

int record_next(record_reader *r, record_entry *e) {
    if (r->next >= r->n_entries) return 0;
    uint8_t k;
    if (take(r, &e->path_len, 2) || (size_t)(r->end - r->p) < e->path_len) return -1;
    e->path = r->p;
    r->p += e->path_len;
    if (take(r, &k, 1)) return -1;
    e->kind = (record_kind)k;
    e->text = NULL;
    e->text_len = 0;
    if (k == KIND_NUMBER) {
        if (take(r, &e->number, sizeof e->number)) return -1;
    } else if (k == KIND_BOOL) {
        uint8_t b;
        if (take(r, &b, 1)) return -1;
        e->number = b;
    } else if (k == KIND_STRING || k == KIND_JSON) {
        if (take_text(r, &e->text, &e->text_len)) return -1;
        if (!e->text) e->text = "";
    } else {
        return -1;
    }
    r->next++;
    return 1;
}
