/* scenario_docs.c — the scenario reference from the field table (scenario_docs.h). */
#define _POSIX_C_SOURCE 200809L
#include "sim/scenario/scenario_docs.h"
#include "sim/base/alloc.h"
#include "sim/base/json_read.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "sim/scenario/scenario_defaults.h"
#include "sim/scenario/scenario_fields.h"

const char *const scn_doc_format_names[] = {"text", "markdown", "json", NULL};

/* One line of the reference: a field, or one key of a list's items. */
typedef struct {
    char path[160];
    const scn_field *f;
    char value[256];   /* the default, as JSON; "" for list items */
    char from[96];     /* "model preset deepseek-v3", "built in", "" */
    char accepts[512];
} doc_row;

/* Defaults that scenario_parse derives from other fields rather than taking from the defaults. */
static const char *derived_default(const char *path) {
    if (strcmp(path, "name") == 0) return "the file name without .json";
    if (strcmp(path, "output.dir") == 0) return "results/<name>";
    return NULL;
}

static void fill_row(doc_row *r, const char *path, const scn_field *f, const scenario *d, int item) {
    memset(r, 0, sizeof *r);
    snprintf(r->path, sizeof r->path, "%s", path);
    r->f = f;
    scn_field_expect_words(f, r->accepts, sizeof r->accepts);
    if (item) return;
    const char *derived = derived_default(path);
    if (derived) {
        snprintf(r->value, sizeof r->value, "%s", derived);
        snprintf(r->from, sizeof r->from, "derived");
        return;
    }
    cJSON *v = f->type == SF_SWEEP ? cJSON_CreateObject() : scn_field_get(d, f);
    char *t = v ? cJSON_PrintUnformatted(v) : NULL;
    snprintf(r->value, sizeof r->value, "%s", t ? t : "");
    cJSON_free(t);
    cJSON_Delete(v);
    const char *preset = scn_field_default_preset(f);
    if (preset && strcmp(preset, "model.preset") == 0) snprintf(r->from, sizeof r->from, "model preset %s", d->model.preset);
    else if (preset) snprintf(r->from, sizeof r->from, "cluster preset %s", d->cluster.preset);
    else snprintf(r->from, sizeof r->from, "built in");
}

/* Markdown table cells: '|' escaped. */
static void md_cell(FILE *out, const char *s) {
    for (; s && *s; s++) {
        if (*s == '|') fputc('\\', out);
        fputc(*s, out);
    }
}

static void md_row(FILE *out, const doc_row *r) {
    fputs("| `", out);
    md_cell(out, r->path);
    fprintf(out, "` | %s | %s | ", scn_field_type_name(r->f), r->f->doc.unit && *r->f->doc.unit ? r->f->doc.unit : "");
    if (strcmp(r->from, "derived") == 0) {
        md_cell(out, r->value);
    } else if (*r->value) {
        fputc('`', out);
        md_cell(out, r->value);
        fprintf(out, "` (%s)", r->from);
    }
    fputs(" | ", out);
    md_cell(out, r->accepts);
    fputs(" | ", out);
    md_cell(out, r->f->doc.meaning);
    if (r->f->doc.source) {
        fputs(". *Default:* ", out);
        md_cell(out, r->f->doc.source);
    }
    fputs(" |\n", out);
}

static void text_row(FILE *out, const doc_row *r) {
    const char *unit = r->f->doc.unit && *r->f->doc.unit ? r->f->doc.unit : NULL;
    fprintf(out, "%s  (%s%s%s)", r->path, scn_field_type_name(r->f), unit ? ", " : "", unit ? unit : "");
    if (*r->value) fprintf(out, "  default %s [%s]", r->value, r->from);
    fprintf(out, "\n    %s\n    accepts %s\n", r->f->doc.meaning ? r->f->doc.meaning : "(undocumented)", r->accepts);
    if (r->f->doc.source) fprintf(out, "    default from: %s\n", r->f->doc.source);
}

static cJSON *json_row(const doc_row *r) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", r->path);
    cJSON_AddStringToObject(o, "type", scn_field_type_name(r->f));
    cJSON_AddStringToObject(o, "unit", r->f->doc.unit ? r->f->doc.unit : "");
    if (*r->value) {
        moe_error ignored = {0}; /* a value this file printed; a string when it does not parse */
        cJSON *v = json_parse_strict("(default)", r->value, strlen(r->value), &ignored);
        cJSON_AddItemToObject(o, "default", v ? v : cJSON_CreateString(r->value));
        cJSON_AddStringToObject(o, "default_from", r->from);
    }
    cJSON_AddStringToObject(o, "accepts", r->accepts);
    cJSON_AddStringToObject(o, "meaning", r->f->doc.meaning ? r->f->doc.meaning : "");
    if (r->f->doc.source) cJSON_AddStringToObject(o, "source", r->f->doc.source);
    return o;
}

/* The top-level section of a path ("" for top-level fields). */
static size_t section_len(const char *path) {
    const char *dot = strchr(path, '.');
    return dot ? (size_t)(dot - path) : 0;
}

int scn_fields_describe(FILE *out, scn_doc_format fmt) {
    scenario *d = moe_xmalloc(sizeof *d);
    cJSON *fields = fmt == SCN_DOC_JSON ? cJSON_CreateArray() : NULL;
    scenario_defaults(d);
    const char *section = NULL;
    size_t section_n = 0;
    if (fmt == SCN_DOC_MARKDOWN) fputs(scn_doc_page_head, out);
    for (int i = 0; i < scn_n_fields; i++) {
        const scn_field *f = &scn_fields[i];
        size_t n = section_len(f->path);
        if (fmt == SCN_DOC_MARKDOWN && (!section || n != section_n || strncmp(section, f->path, n) != 0)) {
            section = f->path;
            section_n = n;
            if (n) fprintf(out, "\n### %.*s\n\n", (int)n, f->path);
            else fputs("\n### top level\n\n", out);
            fputs("| field | type | unit | default | accepts | meaning |\n| --- | --- | --- | --- | --- | --- |\n", out);
        }
        doc_row r;
        fill_row(&r, f->path, f, d, 0);
        if (fmt == SCN_DOC_MARKDOWN) md_row(out, &r);
        else if (fmt == SCN_DOC_TEXT) text_row(out, &r);
        else cJSON_AddItemToArray(fields, json_row(&r));
        for (int k = 0; f->type == SF_OBJ_LIST && k < f->n_items; k++) {
            char path[160];
            snprintf(path, sizeof path, "%s[].%s", f->path, f->items[k].path);
            fill_row(&r, path, &f->items[k], d, 1);
            if (fmt == SCN_DOC_MARKDOWN) md_row(out, &r);
            else if (fmt == SCN_DOC_TEXT) text_row(out, &r);
            else cJSON_AddItemToArray(fields, json_row(&r));
        }
    }
    free(d);
    if (fmt == SCN_DOC_MARKDOWN) fputs(scn_doc_page_tail, out);
    if (fmt == SCN_DOC_JSON) {
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "format", "moesim-fields/1");
        cJSON_AddItemToObject(doc, "fields", fields);
        char *t = cJSON_Print(doc);
        cJSON_Delete(doc);
        if (!t) return -1;
        fprintf(out, "%s\n", t);
        cJSON_free(t);
    }
    return 0;
}

char *scn_fields_describe_text(scn_doc_format fmt) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    int rc = scn_fields_describe(f, fmt);
    fclose(f);
    if (rc) { free(buf); return NULL; }
    return buf;
}
