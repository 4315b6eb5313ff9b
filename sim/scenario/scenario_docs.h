/* scenario_docs.h — the scenario reference, generated from the field table (scenario_fields.h):
 * `simrun fields`, and docs/scenario-fields.md whole (its markdown: the page's text around the tables,
 * scenario_docs_prose.c, and the tables).
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

/* The page's text before and after the tables (scenario_docs_prose.c). */
extern const char scn_doc_page_head[];
extern const char scn_doc_page_tail[];

/* Write the reference in `fmt` (markdown: the whole page, docs/scenario-fields.md). Returns 0, or -1
 * when out of memory. */
int scn_fields_describe(FILE *out, scn_doc_format fmt);
/* The same as one string (caller frees); NULL when out of memory. */
char *scn_fields_describe_text(scn_doc_format fmt);

#endif
