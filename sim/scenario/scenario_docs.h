/* scenario_docs.h — the scenario reference, generated from the field table (scenario_fields.h):
 * `simrun fields` and the generated block of docs/scenario-fields.md.
 *
 * Every row of the table (and every key of a list's items, as "faults.links[].factor") is described
 * with its type, unit, default (the built-in defaults: the deepseek-v3 model on the h800-8rail
 * cluster), where that default comes from (a preset or built in), what it accepts (the words of the
 * error messages), its meaning and the source of the default figure. */
#ifndef MOESIM_SCENARIO_DOCS_H
#define MOESIM_SCENARIO_DOCS_H

#include <stdio.h>

typedef enum { SCN_DOC_TEXT = 0, SCN_DOC_MARKDOWN, SCN_DOC_JSON } scn_doc_format;
extern const char *const scn_doc_format_names[]; /* "text", "markdown", "json", NULL */

/* The markers around the generated block of docs/scenario-fields.md. */
#define SCN_DOC_BEGIN                                                                               \
    "<!-- BEGIN generated: `simrun fields --format markdown --out docs/scenario-fields.md` rewrites this " \
    "block from sim/scenario/scenario_fields.c; do not edit it here -->"
#define SCN_DOC_END "<!-- END generated -->"

/* Write the reference in `fmt`. Returns 0, or -1 when out of memory. */
int scn_fields_describe(FILE *out, scn_doc_format fmt);
/* The same as one string (caller frees); NULL when out of memory. */
char *scn_fields_describe_text(scn_doc_format fmt);

/* `doc` with the text between SCN_DOC_BEGIN and SCN_DOC_END replaced by `generated` (caller frees);
 * NULL when `doc` does not hold both markers in that order. */
char *scn_doc_splice(const char *doc, const char *generated);
/* A copy of the text between the markers of `doc` (caller frees), or NULL without them. */
char *scn_doc_generated_block(const char *doc);

#endif
