/* cli_args.h — the command-line conventions every moesim tool shares: a usage error names the tool
 * and points at --help, numeric options are range-checked, and both return EXIT_BADINPUT (2). */
#ifndef MOESIM_CLI_ARGS_H
#define MOESIM_CLI_ARGS_H

/* "TOOL: <fmt with arg>\n(see TOOL --help)" on stderr; returns EXIT_BADINPUT. */
int cli_usage_error(const char *tool, const char *fmt, const char *arg);
/* Parse the value `s` of option `flag` as an integer / a number in [lo, hi]; on failure a usage error
 * naming the flag, the value and the range. 0 on success. */
int cli_int(const char *tool, const char *flag, const char *s, int lo, int hi, int *out);
int cli_double(const char *tool, const char *flag, const char *s, double lo, double hi, double *out);

#endif
