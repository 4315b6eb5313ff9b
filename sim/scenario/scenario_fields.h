/* scenario_fields.h — the one table of scenario fields (SCENARIO.md, format "moesim-scenario/1").
 *
 * Every JSON field of a scenario is one row: its dotted path, its type, where it lives in `scenario`
 * (offsetof) and its valid range. The same rows drive parsing (scn_apply_object), setting one field
 * by path (scenario_set_path, used by sweeps), writing the resolved scenario (scenario_to_json),
 * per-field validation of a struct (scn_field_check) and unknown-field detection with did-you-mean.
 * Adding a field to the format is adding one row; nothing else may handle a field by name (the
 * cross-field rules in scenario.c read the struct, not JSON).
 *
 * The row also documents the field (`simrun fields`, docs/scenario-fields.md, which a test keeps
 * in step with the table): its unit, its meaning and, for a default figure taken from elsewhere,
 * the source. Every row builder takes them as its last arguments:
 *     F_POS("cluster.storage_GBps", cluster.storage_GBps, "GB/s", "what it means", "where 500 comes from"),
 * (the source may be left out where the default needs none: a switch, a name, a preset's value).
 */
#ifndef MOESIM_SCENARIO_FIELDS_H
#define MOESIM_SCENARIO_FIELDS_H

#include <stddef.h>
#include "sim/base/errors.h"
#include "sim/scenario/scenario_types.h"

struct cJSON;

#define SCN_FORMAT "moesim-scenario/1"

typedef enum {
    SF_INT,        /* JSON integer (integral number) -> int, range [min, max] */
    SF_U64,        /* JSON integer >= 0, exactly representable (<= 2^53) -> uint64_t */
    SF_DOUBLE,     /* finite JSON number -> double, range per flags */
    SF_BOOL,       /* true/false -> int 0/1 */
    SF_STRING,     /* JSON string -> char[size] */
    SF_NSTRING,    /* JSON string or null (null <-> "") -> char[size] */
    SF_ENUM,       /* JSON string among `names` -> enum (int) = index in names */
    SF_AUTO,       /* "auto" (stored as -1) or a number in range -> double */
    SF_ENUM_SET,   /* list of distinct names among `names` -> bitmask (int), bit i = names[i]; [] = 0 */
    SF_INT_AUTO,   /* "auto" (stored as 0, so that a zeroed struct means "auto") or an integer in
                      range [min, max], min >= 1 -> int */
    SF_LEVELS,     /* non-empty list of "plan" | "step" | "run" -> LEVEL_* bitmask (int) */
    SF_INT_LIST,   /* list of integers in range -> int[max_count], count at count_offset */
    SF_OBJ_LIST,   /* list of objects described by `items` -> element[max_count], count at count_offset */
    SF_PRESET,     /* preset name (or null): resets its section (model or cluster) to the preset */
    SF_FORMAT,     /* "format": must equal SCN_FORMAT; not stored */
    SF_SWEEP,      /* "sweep": parsed by sweep.c; not stored in the scenario */
} scn_field_type;

/* range flags */
enum {
    SCN_MIN_OPEN = 1,   /* value > min (else >= min) */
    SCN_MAX_OPEN = 2,   /* value < max (else <= max) */
    SCN_NONEMPTY = 4,   /* strings: "" is not allowed */
    SCN_REQUIRED = 8,   /* list items: the key must be present */
    SCN_IDENT = 16,     /* strings: letters, digits, '.', '_', '+', '-' only (used in file names) */
    SCN_RANK_SELECT = 32, /* SF_INT_LIST: also "all" (count SCN_TRACE_ALL) or "slowest:K" (count
                             SCN_TRACE_SLOWEST, K in element 0): output.trace_ranks */
    SCN_OMIT_ZERO = 64, /* list items: not written by scenario_to_json when 0 (an optional key added
                           to an item without changing how existing scenarios are written) */
    SCN_ABSENT_NEG = 128, /* SF_INT list items: -1 when the key is absent, and not written while
                             negative (an index only some items carry: which ones need it is the
                             scenario's semantic check, scenario_validate) */
};

/* What `simrun fields` and docs/scenario-fields.md say about a field. */
typedef struct {
    const char *unit;    /* "GB/s", "min", "tokens", ... ; "" for a name, a switch or a plain count */
    const char *meaning; /* what the value means and what uses it (required: a test checks every row) */
    const char *source;  /* where the default figure comes from, when it is taken from elsewhere */
} scn_doc;

typedef struct scn_field {
    const char *path;             /* dotted JSON path; for list items: the key inside the item */
    scn_field_type type;
    size_t offset;                /* offsetof in scenario (list items: in the element) */
    size_t size;                  /* strings: buffer size; lists: element size */
    double min, max;              /* numeric range (see flags); lists: item range for SF_INT_LIST */
    unsigned flags;
    const char *const *names;     /* SF_ENUM: NULL-terminated, index = enum value */
    /* lists */
    size_t count_offset;          /* int holding the number of elements */
    int max_count;
    const struct scn_field *items;/* SF_OBJ_LIST: fields of one element (offsets into the element) */
    int n_items;
    scn_doc doc;
} scn_field;

/* The table, in the order scenario_to_json writes it (SCENARIO.md's order, then the extensions). */
extern const scn_field scn_fields[];
extern const int scn_n_fields;

/* Enum names (NULL-terminated, index = enum value), shared with reports that print enums. */
extern const char *const scn_attention_names[], *const scn_ffn_act_names[], *const scn_schedule_names[],
    *const scn_recompute_names[], *const scn_recompute_module_names[], *const scn_placement_names[],
    *const scn_cp_comm_names[], *const scn_route_names[], *const scn_dispatcher_names[],
    *const scn_host_framework_names[], *const scn_cuda_graph_scope_names[], *const scn_group_samples_names[], *const scn_nccl_model_names[], *const scn_retx_names[], *const scn_path_selection_names[], *const scn_transport_names[],
    *const scn_dtype_names[], *const scn_compute_names[], *const scn_failure_dist_names[], *const scn_ckpt_policy_names[],
    *const scn_ckpt_mode_names[], *const scn_spike_action_names[], *const scn_link_kind_names[],
    *const scn_fidelity_names[], *const scn_a2a_impl_names[], *const scn_level_names[], *const scn_failure_class_names[],
    *const scn_failure_model_names[], *const scn_step_sequence_names[];

/* The leaf field with this exact dotted path, or NULL. */
const scn_field *scn_field_find(const char *path);
/* Non-zero when `path` names a section (an object holding fields), e.g. "cluster.gpu". "" is the root. */
int scn_path_is_section(const char *path);
/* Closest known field for an unknown `key` met inside section `prefix` ("" = top level): the full
 * path of a field of exactly that name elsewhere (the nearest one), else a close sibling key. NULL if
 * nothing is close. The result points into a static buffer (valid until the next call). */
const char *scn_field_suggest(const char *prefix, const char *key);
/* Closest full dotted path (for sweep keys), or NULL. */
const char *scn_path_suggest(const char *path);

/* Set field `f` of `s` from JSON `v`, type- and range-checked. `label` is the path shown in errors
 * (normally f->path; sweeps pass "sweep.layout.pp[1]"). Presets reset their section. */
int scn_field_set(scenario *s, const scn_field *f, const struct cJSON *v, const char *label,
                  moe_error *err);
/* Range-check the value stored in `s` (for structs built or edited in code). */
int scn_field_check(const scenario *s, const scn_field *f, moe_error *err);
/* The stored value as JSON (caller owns it); NULL for SF_FORMAT/SF_SWEEP. */
struct cJSON *scn_field_get(const scenario *s, const scn_field *f);
/* Non-zero when field `f` holds the same bytes in `a` and `b` (a cheap test before comparing values:
 * equal bytes mean equal values; unequal bytes, e.g. padding inside list elements, may still be). */
int scn_field_same(const scenario *a, const scenario *b, const scn_field *f);

/* Non-zero when the scenario set field `f` (or the field at `path`) itself: its file, a sweep point
 * or scenario_set_path (scenario.given). Presets, followers and the built-in defaults leave it 0. */
int scn_field_given(const scenario *s, const scn_field *f);
int scn_path_given(const scenario *s, const char *path);

/* Name model preset `name` for `s` ("" = a model given field by field): its architecture (for "" the
 * neutral nothing of preset_custom_model) and, in every field the scenario did not set, its training
 * recipe (presets.h: model_recipe; precision.dispatch following precision.compute). The built-in
 * default scenario names "deepseek-v3" this way. -1 if unknown. */
int scn_model_preset_apply(scenario *s, const char *name);

/* Apply every member of JSON object `obj`, the section at `prefix` ("" = the whole scenario):
 * the section's preset first (unless `skip_preset`), then the other members in file order, recursing
 * into sub-sections. Rejects unknown keys (with a hint), duplicate keys and wrong types. */
int scn_apply_object(scenario *s, const char *prefix, const struct cJSON *obj, int skip_preset,
                     moe_error *err);

/* The preset field whose section supplies this field's default ("model.preset" for model.layers,
 * "cluster.preset" for cluster.* and calibration), or NULL when the default is built in. */
const char *scn_field_default_preset(const scn_field *f);
/* What the field accepts, in words ("an integer >= 1", "one of \"fp8\", \"bf16\""): the same words
 * as the error messages' "expected ...". */
void scn_field_expect_words(const scn_field *f, char *buf, size_t cap);
/* The field's type in one word: integer, number, boolean, string, enum, list, ... */
const char *scn_field_type_name(const scn_field *f);

#endif
