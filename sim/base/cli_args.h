/* cli_args.h — the command-line conventions every moesim tool shares, on getopt_long:
 *
 *  - a tool is a table of subcommands {name, handler, synopsis, summary, options} (the shape of
 *    nccl-tests' table of test functions): `TOOL NAME [args]`, `TOOL --help`, `TOOL NAME --help`,
 *    `TOOL --version` (the git description the build was made from);
 *  - `--opt value` and `--opt=value` (and unique prefixes, as getopt_long allows);
 *  - every subcommand accepts the same --out PATH, --jobs N, --quiet and --help (CLI_COMMON_OPTIONS);
 *  - a usage error names the tool, the subcommand, the option and the value, suggests the closest
 *    option for a misspelt one, points at --help, and exits 2 (EXIT_BADINPUT).
 *
 * A handler looks like
 *
 *     static int cmd_plot(cli_parser *p, int argc, char **argv) {
 *         static const struct option opts[] = {{"top", required_argument, NULL, 't'}, CLI_COMMON_OPTIONS};
 *         for (int c; (c = cli_next(p, argc, argv, opts)) != -1;) {
 *             if (c == CLI_STOP) return p->rc;          // --help printed, or a usage error
 *             if (c == 't' && cli_int_opt(p, optarg, 1, 100, &top)) return p->rc;
 *         }
 *         if (cli_positionals(p, argc, argv, 1, 1, "DIR")) return p->rc;
 *         ... argv[optind] ...
 *     }
 *
 * A helper that parses for a command returns non-zero when the command must stop (help printed,
 * or a usage error reported); the command then returns p->rc.
 */
#ifndef MOESIM_CLI_ARGS_H
#define MOESIM_CLI_ARGS_H

#include <getopt.h>

/* The options every subcommand accepts. `out` and `jobs` keep 0/NULL when not given (the
 * subcommand's default applies). */
typedef struct {
    const char *out;   /* --out PATH */
    int jobs;          /* --jobs N, 1..4096 */
    int quiet;         /* --quiet */
} cli_common;

/* Option values of the common options (short forms -o, -j, -q, -h). Command options use other
 * letters or values >= 256. */
enum { CLI_OPT_VERSION = 0x7f00, CLI_STOP = 0x7f01 };
#define CLI_COMMON_OPTIONS                                                                         \
    {"out", required_argument, NULL, 'o'}, {"jobs", required_argument, NULL, 'j'},                 \
        {"quiet", no_argument, NULL, 'q'}, {"help", no_argument, NULL, 'h'},                       \
        {"version", no_argument, NULL, CLI_OPT_VERSION}, {NULL, 0, NULL, 0}

typedef struct cli_parser cli_parser;
typedef struct cli_tool cli_tool;

typedef struct cli_command {
    const char *name;     /* "merge"; NULL for a tool's only, unnamed command (simlive) */
    int (*run)(cli_parser *p, int argc, char **argv); /* argv[0] = the command's name */
    const char *synopsis; /* "DIR... --out DIR" */
    const char *summary;  /* one line for `TOOL --help` */
    const char *options;  /* the command's option lines (--out/--jobs/--quiet in its own words) */
} cli_command;

struct cli_tool {
    const char *name;               /* "simrun" */
    const char *about;              /* a paragraph for `TOOL --help` */
    const cli_command *commands;    /* ends with {NULL} (a run of NULL) */
    const char *epilog;             /* examples, exit codes */
    /* The command an argv whose first word names no command stands for (`simrun X.json`,
     * `simrun --search X.json`), or NULL for "none: a usage error". */
    const cli_command *(*implicit)(const cli_tool *t, int argc, char **argv);
};

struct cli_parser {
    const cli_tool *tool;
    const cli_command *cmd;
    cli_common common;
    int rc;             /* after CLI_STOP: the exit code (0 after --help/--version, 2 after an error) */
    int silent;         /* print no usage errors (every MPI rank but one) */
    int implicit;       /* the command was not named (`simrun X.json`): messages say only "simrun" */
    char shortopts[96]; /* built from the option table on the first cli_next */
    char opt[64];       /* the option cli_next returned last, as written: "--top" or "-t" */
};

/* Run the command argv[1] names (or the implicit one) of `t`; handles `--help`, `help [CMD]` and
 * `--version` at the top level. Returns the exit code. */
int cli_main(const cli_tool *t, int argc, char **argv);

/* A parser for command `cmd` of `t` (for a tool without a command table, like simlive). */
void cli_parser_init(cli_parser *p, const cli_tool *t, const cli_command *cmd);

/* The next option of argv (getopt_long over `longopts`, a table ending in CLI_COMMON_OPTIONS).
 * Common options are stored in p->common and not returned. Returns a command option's `val` (its
 * value in optarg), -1 when the options are exhausted (the positional arguments are then
 * argv[optind..argc-1]), or CLI_STOP: return p->rc. */
int cli_next(cli_parser *p, int argc, char **argv, const struct option *longopts);

/* After the options: between lo and hi positional arguments (hi < 0: no limit), else a usage error
 * naming `what` ("SCENARIO.json"). 0 when fine; else p->rc is set. */
int cli_positionals(cli_parser *p, int argc, char **argv, int lo, int hi, const char *what);

/* "TOOL CMD: <message>\n(see TOOL CMD --help)" on stderr; sets p->rc = EXIT_BADINPUT and returns it. */
int cli_error(cli_parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The current option's value (optarg) as an integer / a number in [lo, hi] / one of `names`
 * (NULL-terminated; *out = its index); else a usage error naming the option, the value and what
 * is allowed. 0 on success. */
int cli_int_opt(cli_parser *p, const char *arg, int lo, int hi, int *out);
int cli_double_opt(cli_parser *p, const char *arg, double lo, double hi, double *out);
int cli_enum_opt(cli_parser *p, const char *arg, const char *const *names, int *out);

/* Print `TOOL --help` / `TOOL CMD --help` on stdout. */
void cli_print_tool_help(const cli_tool *t);
void cli_print_command_help(const cli_tool *t, const cli_command *cmd);

/* "TOOL: <fmt with arg>\n(see TOOL --help)" on stderr; returns EXIT_BADINPUT (for checks outside a
 * parser). */
int cli_usage_error(const char *tool, const char *fmt, const char *arg);

#endif
