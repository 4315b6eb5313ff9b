/* json_read.c — strict JSON parsing over cJSON and the typed getters (the contract: json_read.h).
 *
 * cJSON builds the tree but is lenient: it takes "01" and "1." (strtod does), any byte <= 32 as
 * whitespace, raw control characters in strings, numbers that overflow to infinity, and duplicate
 * keys. After cJSON accepts a text, one pass checks what it let through: the tree is walked in
 * document order (cJSON keeps members in file order) while a cursor moves through the text, so the
 * k-th number node is matched with the k-th number token and an error can name both the JSON path
 * and the characters the file holds. */
#include "sim/base/json_read.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/alloc.h"
#include "sim/base/fileio.h"

/* ---- formatting ------------------------------------------------------------------------------------ */

void json_format_number(double d, char *buf, size_t cap) {
    if (isnan(d)) snprintf(buf, cap, "nan");
    else if (isinf(d)) snprintf(buf, cap, d > 0 ? "inf" : "-inf");
    else {
        snprintf(buf, cap, "%.15g", d);
        if (strtod(buf, NULL) != d) snprintf(buf, cap, "%.17g", d);
    }
}

void json_truncate_into(const char *text, char *buf, size_t cap) {
    if (cap == 0) return;
    size_t len = strlen(text);
    if (len < cap) {
        memcpy(buf, text, len + 1);
    } else if (cap < 4) {
        buf[0] = '\0';
    } else {
        memcpy(buf, text, cap - 4);
        memcpy(buf + cap - 4, "...", 4);
    }
    for (char *c = buf; *c; c++)
        if ((unsigned char)*c < 0x20) *c = '?'; /* keep the message on one line */
}

void json_shown(const cJSON *v, char *buf, size_t cap) {
    if (cap < 8) { if (cap) buf[0] = '\0'; return; }
    if (!v) { snprintf(buf, cap, "nothing (missing)"); return; }
    if (cJSON_IsNumber(v)) { json_format_number(v->valuedouble, buf, cap); return; }
    if ((cJSON_IsArray(v) || cJSON_IsObject(v)) && cJSON_GetArraySize(v) > 32) {
        snprintf(buf, cap, "%s of %d %s", cJSON_IsArray(v) ? "a list" : "an object", cJSON_GetArraySize(v),
                 cJSON_IsArray(v) ? "values" : "members");
        return;
    }
    char *text = cJSON_PrintUnformatted(v);
    if (!text) { snprintf(buf, cap, "(unprintable)"); return; }
    json_truncate_into(text, buf, cap);
    cJSON_free(text);
}

const char *json_path_key(char *buf, size_t cap, const char *prefix, const char *key) {
    snprintf(buf, cap, "%s%s%s", prefix ? prefix : "", prefix && *prefix ? "." : "", key ? key : "");
    return buf;
}

const char *json_path_index(char *buf, size_t cap, const char *prefix, int i) {
    snprintf(buf, cap, "%s[%d]", prefix ? prefix : "", i);
    return buf;
}

/* ---- strict parsing ------------------------------------------------------------------------------ */

typedef struct {
    const char *file, *text;
    size_t len, pos; /* the cursor: everything before pos has been checked */
    moe_error *err;
    char path[512];
} strict;

static void line_col(const char *text, size_t off, int *line, int *col) {
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') { (*line)++; *col = 1; }
        else (*col)++;
    }
}

/* "FILE: line L, column C: got '<text there>'; expected <what>" */
static int at_offset(const char *file, const char *text, size_t len, size_t off, const char *got,
                     const char *what, moe_error *err) {
    int line, col;
    if (off > len) off = len;
    size_t rest = off;
    while (rest < len && strchr(" \t\r\n", text[rest])) rest++;
    if (!got && rest == len) off = len; /* only whitespace left: the error is at the end of the file */
    line_col(text, off, &line, &col);
    char near[64], where[64];
    if (got) {
        json_truncate_into(got, near, sizeof near);
    } else if (off >= len) {
        snprintf(near, sizeof near, "the end of the file");
    } else {
        size_t n = 0; /* the text need not end with a NUL: stay inside [0, len) */
        while (n < 24 && off + n < len && text[off + n] != '\r' && text[off + n] != '\n') n++;
        char raw[32];
        snprintf(raw, sizeof raw, "%.*s", (int)n, text + off);
        char shown_raw[32];
        json_truncate_into(raw, shown_raw, sizeof shown_raw);
        snprintf(near, sizeof near, "'%s'", shown_raw);
    }
    snprintf(where, sizeof where, "line %d, column %d", line, col);
    return moe_error_input(err, file, where, near, "%s", what);
}

/* Length of a well-formed UTF-8 sequence at s (Unicode 15, table 3-7), 0 if malformed. */
static size_t utf8_len(const unsigned char *s, size_t avail) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c == 0xE0) { n = 3; lo = 0xA0; }
    else if (c == 0xED) { n = 3; hi = 0x9F; }
    else if (c >= 0xE1 && c <= 0xEF) n = 3;
    else if (c == 0xF0) { n = 4; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) n = 4;
    else if (c == 0xF4) { n = 4; hi = 0x8F; }
    else return 0;
    if (avail < n) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return n;
}

/* The JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? over exactly [s, s+n). */
static int number_ok(const char *s, size_t n) {
    size_t i = 0;
    if (i < n && s[i] == '-') i++;
    if (i >= n) return 0;
    if (s[i] == '0') i++;
    else if (s[i] >= '1' && s[i] <= '9') while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    else return 0;
    if (i < n && s[i] == '.') {
        i++;
        size_t d = i;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
        if (i == d) return 0;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        size_t d = i;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
        if (i == d) return 0;
    }
    return i == n;
}

static int is_number_char(char c) {
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* Check a string starting at the quote at st->pos; leaves pos after the closing quote. */
static int skip_string(strict *st) {
    size_t start = st->pos++;
    while (st->pos < st->len) {
        unsigned char c = (unsigned char)st->text[st->pos];
        if (c == '"') { st->pos++; return 0; }
        if (c == '\\') { st->pos += 2; continue; } /* cJSON checked the escape itself */
        if (c < 0x20)
            return at_offset(st->file, st->text, st->len, st->pos, "a raw control character in a string",
                             "valid JSON: control characters inside strings written as escapes (\\n, \\t, "
                             "\\u0001)", st->err);
        size_t n = utf8_len((const unsigned char *)st->text + st->pos, st->len - st->pos);
        if (!n)
            return at_offset(st->file, st->text, st->len, st->pos, "a byte that is not UTF-8",
                             "valid JSON: UTF-8 text", st->err);
        st->pos += n;
    }
    return at_offset(st->file, st->text, st->len, start, NULL, "valid JSON: a closed string", st->err);
}

/* Move the cursor over whitespace, punctuation, keywords and strings up to the next number token
 * (stop_at_number) or the end of the text, checking each byte on the way. */
static int advance(strict *st, int stop_at_number) {
    while (st->pos < st->len) {
        unsigned char c = (unsigned char)st->text[st->pos];
        if (c == '"') {
            if (skip_string(st)) return EXIT_BADINPUT;
            continue;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            if (stop_at_number) return 0;
            /* a number token the tree does not hold: cannot happen after cJSON accepted the text */
            return at_offset(st->file, st->text, st->len, st->pos, NULL, "valid JSON", st->err);
        }
        if (c < 0x20 && c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            char got[48];
            snprintf(got, sizeof got, "a control character (byte 0x%02x)", c);
            return at_offset(st->file, st->text, st->len, st->pos, got,
                             "valid JSON: only spaces, tabs and line breaks between values", st->err);
        }
        if (c >= 0x80) {
            /* only a byte-order mark at the very start, which cJSON skips */
            if (!(st->pos == 0 && st->len >= 3 && memcmp(st->text, "\xEF\xBB\xBF", 3) == 0))
                return at_offset(st->file, st->text, st->len, st->pos, "a non-ASCII byte between values",
                                 "valid JSON", st->err);
            st->pos += 3;
            continue;
        }
        st->pos++;
    }
    return 0;
}

/* The message is built only for a bad number: every number of every input passes through here. */
static int bad_number(strict *st, size_t start, size_t n, const char *expected) {
    char tok[72];
    snprintf(tok, sizeof tok, "%.*s%s", n > 60 ? 60 : (int)n, st->text + start, n > 60 ? "..." : "");
    const char *path = st->path[0] ? st->path : NULL;
    char where[64];
    if (!path) {
        int line, col;
        line_col(st->text, start, &line, &col);
        snprintf(where, sizeof where, "line %d, column %d", line, col);
        path = where;
    }
    return moe_error_input(st->err, st->file, path, tok, "%s", expected);
}

static int check_number(strict *st, const cJSON *node) {
    if (advance(st, 1)) return EXIT_BADINPUT;
    size_t start = st->pos;
    while (st->pos < st->len && is_number_char(st->text[st->pos])) st->pos++;
    size_t n = st->pos - start;
    if (!number_ok(st->text + start, n))
        return bad_number(st, start, n,
                          "a JSON number: digits on both sides of '.', no leading zeros, no '+' "
                          "(write 1, 1.0 or 0.5, not 01, 1. or .5)");
    if (!isfinite(node->valuedouble))
        return bad_number(st, start, n, "a finite number (this one is beyond the range of a double, about 1.8e308)");
    return 0;
}

static int key_cmp(const void *a, const void *b) {
    return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

static int duplicate_key(strict *st, const cJSON *m) {
    size_t n = strlen(st->path);
    char label[160], key[64], got[96];
    const char *sep = n ? "." : "";
    snprintf(label, sizeof label, "%.*s%s%s", n > 100 ? 100 : (int)n, st->path, sep, m->string);
    if (strlen(label) >= sizeof label - 1) json_truncate_into(label, label, sizeof label);
    json_truncate_into(m->string, key, 60);
    snprintf(got, sizeof got, "\"%s\" a second time", key);
    return moe_error_input(st->err, st->file, label, got, "each key at most once per object");
}

/* A key twice in obj: small objects pairwise, large ones sorted (a fuzzer's 100,000-key object must
 * not take n^2). */
static int check_keys_unique(strict *st, const cJSON *obj) {
    int n = 0;
    for (const cJSON *a = obj->child; a; a = a->next) n++;
    if (n <= 16) {
        for (const cJSON *a = obj->child; a; a = a->next)
            for (const cJSON *b = obj->child; b != a; b = b->next)
                if (strcmp(a->string, b->string) == 0) return duplicate_key(st, a);
        return 0;
    }
    const cJSON **keys = moe_xcalloc((size_t)n, sizeof *keys);
    int i = 0;
    for (const cJSON *a = obj->child; a; a = a->next) keys[i++] = a;
    qsort(keys, (size_t)n, sizeof *keys, key_cmp);
    const cJSON *dup = NULL;
    for (i = 1; i < n && !dup; i++)
        if (strcmp(keys[i - 1]->string, keys[i]->string) == 0) dup = keys[i];
    free(keys);
    return dup ? duplicate_key(st, dup) : 0;
}

/* path[keep..] = ".key" (or "key" at the top), cut at the buffer's end as snprintf would cut it. */
static void path_append_key(char *path, size_t cap, size_t keep, const char *key) {
    size_t at = keep;
    if (keep && at + 1 < cap) path[at++] = '.';
    size_t n = strlen(key);
    if (n > cap - 1 - at) n = cap - 1 - at;
    memcpy(path + at, key, n);
    path[at + n] = '\0';
}

static int walk(strict *st, const cJSON *node) {
    if (cJSON_IsNumber(node)) return check_number(st, node);
    if (!cJSON_IsArray(node) && !cJSON_IsObject(node)) return 0;
    if (cJSON_IsObject(node) && check_keys_unique(st, node)) return EXIT_BADINPUT;
    size_t keep = strlen(st->path);
    int i = 0;
    for (const cJSON *c = node->child; c; c = c->next, i++) {
        if (cJSON_IsObject(node))
            path_append_key(st->path, sizeof st->path, keep, c->string);
        else
            snprintf(st->path + keep, sizeof st->path - keep, "[%d]", i);
        int rc = walk(st, c);
        st->path[keep] = '\0';
        if (rc) return rc;
    }
    return 0;
}

cJSON *json_parse_strict(const char *file, const char *text, size_t len, moe_error *err) {
    const char *label = file ? file : "";
    if (!text) {
        moe_error_input(err, label, NULL, NULL, "JSON text");
        return NULL;
    }
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        char val[64];
        snprintf(val, sizeof val, "a NUL byte at offset %zu", (size_t)(nul - text));
        moe_error_input(err, label, NULL, val, "a JSON text file");
        return NULL;
    }
    size_t ws = 0;
    while (ws < len && strchr(" \t\r\n", text[ws])) ws++;
    if (ws == len) {
        moe_error_input(err, label, NULL, "an empty file", "a JSON object");
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    size_t off = (end && end >= text && end <= text + len) ? (size_t)(end - text) : len;
    if (!root) {
        at_offset(label, text, len, off, NULL,
                  "valid JSON: malformed here (a missing or extra comma, quote or bracket, or a truncated "
                  "file?)", err);
        return NULL;
    }
    while (off < len && strchr(" \t\r\n", text[off])) off++;
    if (off < len) {
        cJSON_Delete(root);
        at_offset(label, text, len, off, NULL,
                  "valid JSON: nothing after the document's closing bracket (trailing text)", err);
        return NULL;
    }
    strict st = {.file = label, .text = text, .len = len, .err = err};
    if (walk(&st, root) || advance(&st, 0)) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

cJSON *json_load(const char *path, size_t max_bytes, moe_error *err) {
    size_t len = 0;
    char *text = read_file_bounded(path, max_bytes, &len, err);
    if (!text) return NULL;
    cJSON *root = json_parse_strict(path, text, len, err);
    free(text);
    return root;
}

/* ---- typed getters ------------------------------------------------------------------------------- */

int json_bad(const json_reader *r, const char *path, const cJSON *v, const char *expected_fmt, ...) {
    char shown[128], expected[512];
    va_list ap;
    va_start(ap, expected_fmt);
    vsnprintf(expected, sizeof expected, expected_fmt, ap);
    va_end(ap);
    json_shown(v, shown, sizeof shown);
    return moe_error_input(r->err, r->file, path, shown, "%s", expected);
}

const cJSON *json_member(const cJSON *obj, const char *key) {
    return cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}

static void range_words(unsigned flags, double lo, double hi, int integer, char *buf, size_t cap) {
    const char *what = integer ? "an integer" : "a number";
    char a[40], b[40];
    json_format_number(lo, a, sizeof a);
    json_format_number(hi, b, sizeof b);
    int has_lo = lo > -INFINITY, has_hi = hi < INFINITY;
    if (has_lo && has_hi)
        snprintf(buf, cap, "%s in %c%s, %s%c", what, flags & JSON_LO_OPEN ? '(' : '[', a, b,
                 flags & JSON_HI_OPEN ? ')' : ']');
    else if (has_lo) snprintf(buf, cap, "%s %s %s", what, flags & JSON_LO_OPEN ? ">" : ">=", a);
    else if (has_hi) snprintf(buf, cap, "%s %s %s", what, flags & JSON_HI_OPEN ? "<" : "<=", b);
    else snprintf(buf, cap, integer ? "an integer" : "a finite number");
}

/* NULL v (or null with JSON_NULL_OK): 1 = absent and fine, -1 = absent but required (error set). */
static int absent(const json_reader *r, const cJSON *v, const char *path, unsigned flags, const char *words) {
    if (v && !((flags & JSON_NULL_OK) && cJSON_IsNull(v))) return 0;
    if (!(flags & JSON_REQUIRED)) return 1;
    json_bad(r, path, v, "%s (required)", words);
    return -1;
}

static int in_range(unsigned flags, double x, double lo, double hi) {
    if ((flags & JSON_LO_OPEN) ? !(x > lo) : !(x >= lo)) return 0;
    if ((flags & JSON_HI_OPEN) ? !(x < hi) : !(x <= hi)) return 0;
    return 1;
}

int json_number_value(const json_reader *r, const cJSON *v, const char *path, unsigned flags, double lo,
                      double hi, double *out) {
    char words[160];
    range_words(flags, lo, hi, 0, words, sizeof words);
    int a = absent(r, v, path, flags, words);
    if (a) return a < 0 ? EXIT_BADINPUT : 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || !in_range(flags, v->valuedouble, lo, hi))
        return json_bad(r, path, v, "%s", words);
    *out = v->valuedouble;
    return 0;
}

int json_int_value(const json_reader *r, const cJSON *v, const char *path, unsigned flags, long lo, long hi,
                   int *out) {
    if (lo < INT_MIN) lo = INT_MIN;
    if (hi > INT_MAX) hi = INT_MAX;
    char words[160];
    range_words(flags, (double)lo, (double)hi, 1, words, sizeof words);
    int a = absent(r, v, path, flags, words);
    if (a) return a < 0 ? EXIT_BADINPUT : 0;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
        !in_range(flags, v->valuedouble, (double)lo, (double)hi))
        return json_bad(r, path, v, "%s", words);
    *out = (int)v->valuedouble;
    return 0;
}

int json_get_number(const json_reader *r, const cJSON *obj, const char *prefix, const char *key,
                    unsigned flags, double lo, double hi, double *out) {
    char path[256];
    return json_number_value(r, json_member(obj, key), json_path_key(path, sizeof path, prefix, key), flags,
                             lo, hi, out);
}

int json_get_int(const json_reader *r, const cJSON *obj, const char *prefix, const char *key,
                 unsigned flags, long lo, long hi, int *out) {
    char path[256];
    return json_int_value(r, json_member(obj, key), json_path_key(path, sizeof path, prefix, key), flags, lo,
                          hi, out);
}

int json_get_string(const json_reader *r, const cJSON *obj, const char *prefix, const char *key,
                    unsigned flags, char *dst, size_t cap) {
    char path[256], words[96];
    const cJSON *v = json_member(obj, key);
    json_path_key(path, sizeof path, prefix, key);
    snprintf(words, sizeof words, "a %sstring of at most %zu characters", flags & JSON_NONEMPTY ? "non-empty " : "",
             cap - 1);
    int a = absent(r, v, path, flags, words);
    if (a) return a < 0 ? EXIT_BADINPUT : 0;
    if (!cJSON_IsString(v) || strlen(v->valuestring) >= cap || ((flags & JSON_NONEMPTY) && !v->valuestring[0]))
        return json_bad(r, path, v, "%s", words);
    memcpy(dst, v->valuestring, strlen(v->valuestring) + 1);
    return 0;
}

int json_get_bool(const json_reader *r, const cJSON *obj, const char *prefix, const char *key,
                  unsigned flags, int *out) {
    char path[256];
    const cJSON *v = json_member(obj, key);
    json_path_key(path, sizeof path, prefix, key);
    int a = absent(r, v, path, flags, "true or false");
    if (a) return a < 0 ? EXIT_BADINPUT : 0;
    if (!cJSON_IsBool(v)) return json_bad(r, path, v, "true or false");
    *out = cJSON_IsTrue(v);
    return 0;
}

static int get_container(const json_reader *r, const cJSON *obj, const char *prefix, const char *key,
                         unsigned flags, int want_array, const cJSON **out) {
    char path[256];
    const cJSON *v = json_member(obj, key);
    const char *words = want_array ? "an array" : "an object";
    *out = NULL;
    json_path_key(path, sizeof path, prefix, key);
    int a = absent(r, v, path, flags, words);
    if (a) return a < 0 ? EXIT_BADINPUT : 0;
    if (want_array ? !cJSON_IsArray(v) : !cJSON_IsObject(v)) return json_bad(r, path, v, "%s", words);
    *out = v;
    return 0;
}

int json_get_object(const json_reader *r, const cJSON *obj, const char *prefix, const char *key,
                    unsigned flags, const cJSON **out) {
    return get_container(r, obj, prefix, key, flags, 0, out);
}

int json_get_array(const json_reader *r, const cJSON *obj, const char *prefix, const char *key,
                   unsigned flags, const cJSON **out) {
    return get_container(r, obj, prefix, key, flags, 1, out);
}

int json_check_keys(const json_reader *r, const cJSON *obj, const char *prefix, const char *const *allowed) {
    if (!cJSON_IsObject(obj)) return 0;
    for (const cJSON *m = obj->child; m; m = m->next) {
        int known = 0;
        for (const char *const *k = allowed; *k && !known; k++) known = strcmp(m->string, *k) == 0;
        if (known) continue;
        char path[256], names[400], val[96], hint[96] = "";
        size_t n = 0;
        names[0] = '\0';
        for (const char *const *k = allowed; *k && n < sizeof names; k++)
            n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", k == allowed ? "" : ", ", *k);
        char key[64];
        json_truncate_into(m->string, key, 60);
        snprintf(val, sizeof val, "unknown key \"%s\"", key);
        const char *dym = moe_did_you_mean(m->string, allowed);
        if (dym) snprintf(hint, sizeof hint, " (did you mean \"%s\"?)", dym);
        return moe_error_input(r->err, r->file, json_path_key(path, sizeof path, prefix, key), val, "one of %s%s",
                               names, hint);
    }
    return 0;
}
