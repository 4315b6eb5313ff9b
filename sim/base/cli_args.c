/* cli_args.c — getopt_long-based command tables and option helpers (see cli_args.h). */
#include "sim/base/cli_args.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/errors.h"

#ifndef MOESIM_VERSION
#define MOESIM_VERSION "unknown"
#endif

/* ---- messages ------------------------------------------------------------------------------------- */

/* "simrun merge" for a named command, "simrun" for an implicit or unnamed one. */
static void command_label(const cli_parser *p, char *buf, size_t cap) {
    if (p->cmd && p->cmd->name && !p->implicit) snprintf(buf, cap, "%s %s", p->tool->name, p->cmd->name);
    else snprintf(buf, cap, "%s", p->tool->name);
}

int cli_error(cli_parser *p, const char *fmt, ...) {
    p->rc = EXIT_BADINPUT;
    if (p->silent) return p->rc;
    char label[128];
    command_label(p, label, sizeof label);
    fprintf(stderr, "%s: ", label);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(see %s --help)\n", label);
    return p->rc;
}

int cli_usage_error(const char *tool, const char *fmt, const char *arg) {
    fprintf(stderr, "%s: ", tool);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(see %s --help)\n", tool);
    return EXIT_BADINPUT;
}

static void print_version(const cli_tool *t) { printf("%s (moesim) %s\n", t->name, MOESIM_VERSION); }

/* ---- help ------------------------------------------------------------------------------------------ */

static const char COMMON_HELP[] =
    "  -h, --help           this text\n"
    "      --version        the moesim version (the git description of the build)\n"
    "(every option also reads --opt=value; -o, -j, -q are --out, --jobs, --quiet)\n";

void cli_print_command_help(const cli_tool *t, const cli_command *cmd) {
    if (cmd->name) printf("usage: %s %s %s\n\n", t->name, cmd->name, cmd->synopsis);
    else printf("usage: %s %s\n\n", t->name, cmd->synopsis);
    printf("%s\n\noptions:\n%s%s", cmd->summary, cmd->options ? cmd->options : "", COMMON_HELP);
    if (!cmd->name && t->epilog) printf("\n%s", t->epilog);
}

void cli_print_tool_help(const cli_tool *t) {
    for (const cli_command *c = t->commands; c->name; c++)
        printf("%s %s %s %s\n", c == t->commands ? "usage:" : "      ", t->name, c->name, c->synopsis);
    printf("\n%s\n\ncommands (%s COMMAND --help: the command's options):\n", t->about, t->name);
    for (const cli_command *c = t->commands; c->name; c++) printf("  %-18s %s\n", c->name, c->summary);
    printf("\ncommon options (every command):\n"
           "  -o, --out PATH       where the command writes (see each command)\n"
           "  -j, --jobs N         worker processes, for the commands that run in parallel\n"
           "  -q, --quiet          no tables or progress on stdout/stderr (errors still)\n"
           "%s", COMMON_HELP);
    if (t->epilog) printf("\n%s", t->epilog);
}

/* ---- dispatch ---------------------------------------------------------------------------------------- */

static const cli_command *find_command(const cli_tool *t, const char *name) {
    for (const cli_command *c = t->commands; c->name; c++)
        if (strcmp(c->name, name) == 0) return c;
    return NULL;
}

void cli_parser_init(cli_parser *p, const cli_tool *t, const cli_command *cmd) {
    memset(p, 0, sizeof *p);
    p->tool = t;
    p->cmd = cmd;
}

static int unknown_command(const cli_tool *t, const char *word) {
    const char *names[64];
    int n = 0;
    for (const cli_command *c = t->commands; c->name && n < 63; c++) names[n++] = c->name;
    names[n] = NULL;
    const char *dym = moe_did_you_mean(word, names);
    fprintf(stderr, "%s: unknown command '%s'; expected one of", t->name, word);
    for (int i = 0; i < n; i++) fprintf(stderr, "%s %s", i ? "," : "", names[i]);
    if (dym) fprintf(stderr, " (did you mean '%s'?)", dym);
    fprintf(stderr, "\n(see %s --help)\n", t->name);
    return EXIT_BADINPUT;
}

int cli_main(const cli_tool *t, int argc, char **argv) {
    const char *a = argc > 1 ? argv[1] : NULL;
    if (!a) {
        fprintf(stderr, "%s: no command given\n(see %s --help)\n", t->name, t->name);
        return EXIT_BADINPUT;
    }
    if (!strcmp(a, "--help") || !strcmp(a, "-h") || !strcmp(a, "help")) {
        if (!strcmp(a, "help") && argc > 2) {
            const cli_command *c = find_command(t, argv[2]);
            if (!c) return unknown_command(t, argv[2]);
            cli_print_command_help(t, c);
            return EXIT_OK;
        }
        cli_print_tool_help(t);
        return EXIT_OK;
    }
    if (!strcmp(a, "--version")) {
        print_version(t);
        return EXIT_OK;
    }
    cli_parser p;
    const cli_command *c = find_command(t, a);
    if (c) {
        cli_parser_init(&p, t, c);
        return c->run(&p, argc - 1, argv + 1);
    }
    c = t->implicit ? t->implicit(t, argc, argv) : NULL;
    if (!c) return unknown_command(t, a);
    cli_parser_init(&p, t, c);
    p.implicit = 1;
    return c->run(&p, argc, argv);
}

/* ---- options --------------------------------------------------------------------------------------- */

static void build_shortopts(cli_parser *p, const struct option *o) {
    size_t n = 0;
    p->shortopts[n++] = ':'; /* ':' for a missing value, '?' for an unknown option */
    for (; o->name && n + 3 < sizeof p->shortopts; o++) {
        if (o->flag || o->val <= 0 || o->val > 127 || !isalnum(o->val)) continue;
        p->shortopts[n++] = (char)o->val;
        if (o->has_arg == required_argument) p->shortopts[n++] = ':';
    }
    p->shortopts[n] = '\0';
}

static const struct option *option_by_val(const struct option *o, int val) {
    for (; o->name; o++)
        if (!o->flag && o->val == val) return o;
    return NULL;
}

/* The word getopt_long just looked at. */
static const char *last_word(int argc, char **argv) {
    return optind >= 1 && optind - 1 < argc ? argv[optind - 1] : "?";
}

static int unknown_option(cli_parser *p, int argc, char **argv, const struct option *longopts) {
    const char *arg = last_word(argc, argv);
    if (optopt != 0 && strncmp(arg, "--", 2) == 0 && option_by_val(longopts, optopt))
        return cli_error(p, "%.*s takes no value: got '%s'", (int)strcspn(arg, "="), arg, arg);
    if (optopt != 0 && optopt < 128 && isprint(optopt)) return cli_error(p, "unknown option -%c", optopt);
    char word[96];
    snprintf(word, sizeof word, "%.*s", (int)strcspn(arg, "="), arg);
    const char *names[128];
    char buf[128][40];
    int n = 0;
    for (const struct option *o = longopts; o->name && n < 127; o++, n++) {
        snprintf(buf[n], sizeof buf[n], "--%s", o->name);
        names[n] = buf[n];
    }
    names[n] = NULL;
    const char *dym = moe_did_you_mean(word, names);
    if (dym) return cli_error(p, "unknown or ambiguous option '%s' (did you mean '%s'?)", word, dym);
    return cli_error(p, "unknown or ambiguous option '%s'", word);
}

int cli_next(cli_parser *p, int argc, char **argv, const struct option *longopts) {
    if (!p->shortopts[0]) {
        build_shortopts(p, longopts);
        optind = 0; /* glibc: a full re-initialisation (a second parse in one process starts over) */
        opterr = 0;
    }
    for (;;) {
        int li = -1;
        int c = getopt_long(argc, argv, p->shortopts, longopts, &li);
        if (c == -1) return -1;
        const struct option *o = li >= 0 ? &longopts[li] : option_by_val(longopts, c);
        if (li >= 0 || !o) snprintf(p->opt, sizeof p->opt, "--%s", o ? o->name : "?");
        else snprintf(p->opt, sizeof p->opt, "-%c", c);
        switch (c) {
        case 'o': p->common.out = optarg; continue;
        case 'j':
            if (cli_int_opt(p, optarg, 1, 4096, &p->common.jobs)) return CLI_STOP;
            continue;
        case 'q': p->common.quiet = 1; continue;
        case 'h':
            cli_print_command_help(p->tool, p->cmd);
            p->rc = EXIT_OK;
            return CLI_STOP;
        case CLI_OPT_VERSION:
            print_version(p->tool);
            p->rc = EXIT_OK;
            return CLI_STOP;
        case ':': {
            const struct option *m = option_by_val(longopts, optopt);
            const char *arg = last_word(argc, argv);
            if (arg[0] == '-' && arg[1] == '-') cli_error(p, "%s needs a value", arg);
            else if (m) cli_error(p, "-%c (--%s) needs a value", optopt, m->name);
            else cli_error(p, "-%c needs a value", optopt);
            return CLI_STOP;
        }
        case '?': unknown_option(p, argc, argv, longopts); return CLI_STOP;
        default: return c;
        }
    }
}

int cli_positionals(cli_parser *p, int argc, char **argv, int lo, int hi, const char *what) {
    int n = argc - optind;
    if (n < lo) return cli_error(p, "expected %s", what);
    if (hi >= 0 && n > hi) return cli_error(p, "unexpected argument '%s' (expected %s)", argv[optind + hi], what);
    return 0;
}

int cli_int_opt(cli_parser *p, const char *arg, int lo, int hi, int *out) {
    char *end;
    long v = strtol(arg ? arg : "", &end, 10);
    if (!arg || *end || end == arg || v < lo || v > hi)
        return cli_error(p, "%s: got '%s'; expected an integer in [%d, %d]", p->opt, arg ? arg : "", lo, hi);
    *out = (int)v;
    return 0;
}

int cli_double_opt(cli_parser *p, const char *arg, double lo, double hi, double *out) {
    char *end;
    double v = strtod(arg ? arg : "", &end);
    if (!arg || *end || end == arg || !(v >= lo && v <= hi))
        return cli_error(p, "%s: got '%s'; expected a number in [%g, %g]", p->opt, arg ? arg : "", lo, hi);
    *out = v;
    return 0;
}

int cli_enum_opt(cli_parser *p, const char *arg, const char *const *names, int *out) {
    for (int i = 0; names[i]; i++)
        if (arg && strcmp(arg, names[i]) == 0) { *out = i; return 0; }
    char list[256];
    size_t n = 0;
    list[0] = '\0';
    for (int i = 0; names[i] && n < sizeof list; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? (names[i + 1] ? ", " : " or ") : "", names[i]);
    const char *dym = arg ? moe_did_you_mean(arg, names) : NULL;
    return cli_error(p, "%s: got '%s'; expected %s%s%s%s", p->opt, arg ? arg : "", list,
                     dym ? " (did you mean '" : "", dym ? dym : "", dym ? "'?)" : "");
}
