/* test_base.c — the base layer's contracts: strict JSON (RFC 8259 grammar, duplicate keys, range),
 * typed getters' messages, the bounded file reader (FIFOs, devices, folders, size cap), the atomic
 * writer, the allocation policy, the seed mixer and the text buffer's decimal digits.
 *
 * Truths: RFC 8259 section 6 (number grammar) and 4 (names SHOULD be unique; we refuse repeats);
 * the splitmix64 outputs published with Vigna's reference implementation (seed 0: e220a8397b1dcdaf,
 * 6e789e6aa1b965f4, 06c45d188009454f; seed 1234567: 6457827717110365317); POSIX file types; C's
 * printf ("%lld", "%llu") for the digits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/base/alloc.h"
#include "sim/base/errors.h"
#include "sim/base/fileio.h"
#include "sim/base/json_read.h"
#include "sim/base/rng_seed.h"
#include "sim/base/text_buf.h"

static char DIR_[64];

static int setup(void **state) {
    (void)state;
    snprintf(DIR_, sizeof DIR_, "/tmp/moesim_base_XXXXXX");
    return mkdtemp(DIR_) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", DIR_);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- strict JSON -------------------------------------------------------------------------------- */

static void expect_refused(const char *text, size_t len, const char *needle1, const char *needle2) {
    moe_error err = {0};
    cJSON *j = json_parse_strict("t.json", text, len, &err);
    if (j) {
        cJSON_Delete(j);
        fail_msg("accepted: %s", text);
    }
    assert_int_equal(err.code, EXIT_BADINPUT);
    if (!strstr(err.msg, "t.json") || !strstr(err.msg, needle1) || (needle2 && !strstr(err.msg, needle2)))
        fail_msg("for %s: message lacks [%s]/[%s]: %s", text, needle1, needle2 ? needle2 : "", err.msg);
    assert_null(strchr(err.msg, '\n'));
}

static void refused(const char *text, const char *needle1, const char *needle2) {
    expect_refused(text, strlen(text), needle1, needle2);
}

static void accepted(const char *text) {
    moe_error err = {0};
    cJSON *j = json_parse_strict("t.json", text, strlen(text), &err);
    if (!j) fail_msg("refused %s: %s", text, err.msg);
    cJSON_Delete(j);
}

static void test_json_number_grammar(void **state) {
    (void)state;
    /* RFC 8259 section 6: int = zero / (digit1-9 *DIGIT); frac = "." 1*DIGIT; exp = e [sign] 1*DIGIT */
    const char *bad[] = {"01", "00", "1.", "-.5", "1.e5", "-01.5", "0001", "-00"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[64];
        snprintf(text, sizeof text, "{\"a\": {\"b\": [1, %s]}}", bad[i]);
        refused(text, "a.b[1]", bad[i]);
    }
    refused("{\"seed\": 00}", "seed: got 00", "JSON number");
    refused("{\"x\": 25.}", "x: got 25.", NULL);
    refused("{\"x\": +1}", "valid JSON", NULL);          /* cJSON refuses these as syntax */
    refused("{\"x\": .5}", "line 1, column 7", "valid JSON");
    refused("{\"x\": 1e999}", "x: got 1e999", "finite");
    refused("{\"x\": -1e400}", "x: got -1e400", "finite");
    const char *good[] = {"0", "-0", "10", "1.5", "0.5", "-0.25", "1e5", "1E+5", "2.5e-3", "1.7976931348623157e308"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        char text[64];
        snprintf(text, sizeof text, "[%s]", good[i]);
        accepted(text);
    }
    accepted("{\"s\": \"01 and 1. inside strings are text\", \"e\": \"\\\"01\"}");
}

static void test_json_structure(void **state) {
    (void)state;
    refused("{\"a\": 1} verdict: healthy", "line 1, column 10", "trailing");
    refused("{\"a\": 1}\n{}", "line 2, column 1", "trailing");
    refused("{\"a\": 1,}", "line 1", "valid JSON");
    refused("", "an empty file", NULL);
    refused(" \n\t", "an empty file", NULL);
    expect_refused("{\"a\": 1}\0{}", 11, "NUL byte at offset 8", NULL);
    refused("{\"a\": \"tab\there\"}", "control character", NULL);
    refused("{\"a\":\x01 1}", "control character (byte 0x01)", NULL);
    refused("{\"a\": \"\xff\"}", "UTF-8", NULL);
    accepted("\xEF\xBB\xBF{\"byte-order mark\": true}");
    accepted("{\"\xc3\xa9t\xc3\xa9\": \"\xe2\x82\xac\"}");
}

static void test_json_duplicate_keys(void **state) {
    (void)state;
    refused("{\"gemm\": {\"eff_max\": 0.01}, \"gemm\": {\"eff_max\": 0.8}}", "gemm: got \"gemm\" a second time",
            "at most once");
    refused("{\"layout\": {\"pp\": 8, \"pp\": 16}}", "layout.pp", "a second time");
    refused("{\"a\": [{\"x\": 1}, {\"y\": 1, \"y\": 2}]}", "a[1].y", "a second time");
    /* a large object is checked too (sorted, not pairwise) */
    char big[8192];
    size_t n = (size_t)snprintf(big, sizeof big, "{");
    for (int i = 0; i < 200; i++) n += (size_t)snprintf(big + n, sizeof big - n, "\"k%d\": %d, ", i, i);
    snprintf(big + n, sizeof big - n, "\"k117\": 0}");
    refused(big, "k117", "a second time");
    big[n - 2] = '}';
    big[n - 1] = '\0';
    accepted(big);
}

static void test_json_getters(void **state) {
    (void)state;
    moe_error err = {0};
    const char *text = "{\"n\": 1.5, \"i\": 16.5, \"s\": \"abc\", \"b\": \"yes\", \"o\": [], \"z\": null}";
    cJSON *j = json_parse_strict("g.json", text, strlen(text), &err);
    assert_non_null(j);
    json_reader r = {"g.json", &err};
    double d = -1;
    int i = -1;
    char s[4];
    assert_int_equal(json_get_number(&r, j, "", "n", JSON_REQUIRED, 0, 2, &d), 0);
    assert_true(d == 1.5);
    assert_int_equal(json_get_number(&r, j, "", "n", 0, 0, 1, &d), EXIT_BADINPUT);
    assert_string_equal(err.msg, "g.json: n: got 1.5; expected a number in [0, 1]");
    assert_int_equal(json_get_number(&r, j, "sec", "missing", JSON_REQUIRED | JSON_LO_OPEN, 0, INFINITY, &d),
                     EXIT_BADINPUT);
    assert_string_equal(err.msg, "g.json: sec.missing: got nothing (missing); expected a number > 0 (required)");
    d = 7;
    assert_int_equal(json_get_number(&r, j, "", "missing", 0, 0, 1, &d), 0);
    assert_true(d == 7); /* untouched */
    assert_int_equal(json_get_int(&r, j, "", "i", JSON_REQUIRED, 1, 64, &i), EXIT_BADINPUT);
    assert_string_equal(err.msg, "g.json: i: got 16.5; expected an integer in [1, 64]");
    assert_int_equal(json_get_string(&r, j, "", "s", JSON_REQUIRED, s, sizeof s), 0);
    assert_string_equal(s, "abc");
    assert_int_equal(json_get_string(&r, j, "", "s", JSON_REQUIRED, s, 3), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "at most 2 characters"));
    assert_int_equal(json_get_bool(&r, j, "", "b", JSON_REQUIRED, &i), EXIT_BADINPUT);
    assert_string_equal(err.msg, "g.json: b: got \"yes\"; expected true or false");
    const cJSON *o = NULL;
    assert_int_equal(json_get_object(&r, j, "", "o", JSON_REQUIRED, &o), EXIT_BADINPUT);
    assert_string_equal(err.msg, "g.json: o: got []; expected an object");
    assert_int_equal(json_get_number(&r, j, "", "z", JSON_NULL_OK, 0, 1, &d), 0);
    assert_int_equal(json_get_number(&r, j, "", "z", JSON_NULL_OK | JSON_REQUIRED, 0, 1, &d), EXIT_BADINPUT);
    static const char *const keys[] = {"n", "i", "s", "b", "o", NULL};
    assert_int_equal(json_check_keys(&r, j, "", keys), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "g.json: z: got unknown key \"z\"; expected one of n, i, s, b, o"));
    cJSON_Delete(j);
}

/* ---- bounded reader ----------------------------------------------------------------------------- */

static void expect_read_refused(const char *path, size_t cap, const char *needle) {
    moe_error err = {0};
    size_t len = 0;
    char *t = read_file_bounded(path, cap, &len, &err);
    if (t) {
        free(t);
        fail_msg("read %s", path);
    }
    assert_int_equal(err.code, EXIT_BADINPUT);
    if (!strstr(err.msg, path) || !strstr(err.msg, needle)) fail_msg("message lacks [%s]: %s", needle, err.msg);
}

static void test_bounded_reader(void **state) {
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/small.txt", DIR_);
    moe_error err = {0};
    assert_int_equal(write_file_atomic(path, "0123456789", &err), 0);
    size_t len = 0;
    char *t = read_file_bounded(path, 10, &len, &err);
    assert_non_null(t);
    assert_int_equal(len, 10);
    assert_string_equal(t, "0123456789");
    free(t);
    /* one byte over the cap: refused with its size and the cap */
    expect_read_refused(path, 9, "a file of 10 bytes; expected a file of at most 9 bytes");
    expect_read_refused("/dev/zero", 0, "a character device");
    expect_read_refused(DIR_, 0, "a folder");
    char fifo[128];
    snprintf(fifo, sizeof fifo, "%s/fifo", DIR_);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    expect_read_refused(fifo, 0, "FIFO"); /* returns at once: nobody writes to it */
    char missing[128];
    snprintf(missing, sizeof missing, "%s/none.json", DIR_);
    expect_read_refused(missing, 0, "No such file");
    /* a sparse file above the default cap: refused by its size, without reading it */
    char big[128];
    snprintf(big, sizeof big, "%s/big.json", DIR_);
    int fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)MOE_FILE_MAX_BYTES + 1), 0);
    close(fd);
    expect_read_refused(big, 0, "expected a file of at most 256 MiB");
    cJSON *j = json_load(big, 0, &err);
    assert_null(j);
    assert_int_equal(err.code, EXIT_BADINPUT);
}

/* ---- atomic writer ------------------------------------------------------------------------------ */

static int count_entries(const char *dir) {
    char cmd[160];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p && fscanf(p, "%d", &n) != 1) n = -1;
    if (p) pclose(p);
    return n;
}

/* An output path that exists and is not a regular file: a pipe is written straight through and stays
 * a pipe (renaming over it would replace the node: as root that turned /dev/null into a plain file),
 * a pipe nobody reads is refused at once instead of blocking, and file_publish refuses it. */
static void test_output_not_regular(void **state) {
    (void)state;
    char fifo[160], tmp[200];
    snprintf(fifo, sizeof fifo, "%s/out.fifo", DIR_);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    moe_error err = {0};
    assert_int_equal(write_file_atomic(fifo, "x", &err), EXIT_BADINPUT); /* no reader */
    assert_non_null(strstr(err.msg, fifo));
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) { /* the reader: copy what arrives through the FIFO to the pipe */
        alarm(10);
        close(pipefd[0]);
        int fd = open(fifo, O_RDONLY);
        char buf[64];
        ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf);
        _exit(n > 0 && write(pipefd[1], buf, (size_t)n) == n ? 0 : 1);
    }
    close(pipefd[1]);
    int rc = 1;
    for (int tries = 0; tries < 1000 && rc; tries++) { /* until the reader has opened its end */
        rc = write_file_atomic(fifo, "through\n", &err);
        if (rc) usleep(10000);
    }
    assert_int_equal(rc, 0);
    char got[64] = {0};
    assert_true(read(pipefd[0], got, sizeof got - 1) > 0);
    close(pipefd[0]);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_string_equal(got, "through\n");
    struct stat st;
    assert_int_equal(lstat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    snprintf(tmp, sizeof tmp, "%s.tmp", fifo);
    assert_int_equal(write_file_atomic(tmp, "plot", &err), 0);
    assert_int_equal(file_publish(tmp, fifo, &err), EXIT_BADINPUT);
    assert_int_not_equal(access(tmp, F_OK), 0); /* the temporary is removed */
    assert_int_equal(lstat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    unlink(fifo);
}

static void test_atomic_writer(void **state) {
    (void)state;
    char sub[128], path[160];
    snprintf(sub, sizeof sub, "%s/out/a/b", DIR_);
    moe_error err = {0};
    assert_int_equal(make_dirs(sub, &err), 0);
    snprintf(path, sizeof path, "%s/x.json", sub);
    assert_int_equal(write_file_atomic(path, "first\n", &err), 0);
    assert_int_equal(write_file_atomic(path, "second\n", &err), 0);
    char *t = read_file_text(path, NULL, &err);
    assert_string_equal(t, "second\n");
    free(t);
    assert_int_equal(count_entries(sub), 1); /* no temporary left behind */
    /* a folder that does not exist / an empty name: the user's path, exit 2 */
    char bad[200];
    snprintf(bad, sizeof bad, "%s/no/such/dir/x.json", DIR_);
    assert_int_equal(write_file_atomic(bad, "x", &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, bad));
    assert_int_equal(write_file_atomic("", "x", &err), EXIT_BADINPUT);
    assert_int_equal(make_dirs("", &err), EXIT_BADINPUT);
    /* a folder path through a regular file */
    snprintf(bad, sizeof bad, "%s/x.json/sub", sub);
    assert_int_equal(make_dirs(bad, &err), EXIT_BADINPUT);
    /* the output is a folder: rename refuses, the folder stays */
    assert_int_equal(write_file_atomic(sub, "x", &err), EXIT_BADINPUT);
    struct stat st;
    assert_int_equal(stat(sub, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    /* the stream form */
    atomic_file af;
    snprintf(path, sizeof path, "%s/y.txt", sub);
    assert_int_equal(atomic_file_open(&af, path, &err), 0);
    fprintf(af.f, "%d\n", 42);
    assert_int_not_equal(access(path, F_OK), 0); /* not there before commit */
    assert_int_equal(atomic_file_commit(&af, &err), 0);
    t = read_file_text(path, NULL, &err);
    assert_string_equal(t, "42\n");
    free(t);
    assert_int_equal(atomic_file_open(&af, path, &err), 0);
    fprintf(af.f, "half");
    atomic_file_abort(&af);
    t = read_file_text(path, NULL, &err);
    assert_string_equal(t, "42\n"); /* the old content stays */
    free(t);
    assert_int_equal(count_entries(sub), 2);
}

/* The temporaries a killed writer left: atomic_file_open's own name for them (checked by opening one
 * and reading the folder while it is open), removed only when the writer's pid is gone, only for the
 * name asked, only regular files named exactly so. */
static void test_dead_writer_temps(void **state) {
    (void)state;
    char dir[128], path[200], p[8][240];
    snprintf(dir, sizeof dir, "%s/temps", DIR_);
    moe_error err = {0};
    assert_int_equal(make_dirs(dir, &err), 0);
    /* our own temporary, while the write is open: alive, kept; its name is the pattern */
    atomic_file af;
    snprintf(path, sizeof path, "%s/results.json", dir);
    assert_int_equal(atomic_file_open(&af, path, &err), 0);
    char own[64];
    snprintf(own, sizeof own, "results.json.tmp.%ld.", (long)getpid());
    assert_non_null(strstr(af.tmp, own));
    assert_int_equal(atomic_file_remove_dead_temps(dir, "results.json"), 0);
    assert_int_equal(access(af.tmp, F_OK), 0);
    atomic_file_abort(&af);
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    waitpid(dead, NULL, 0);
    snprintf(p[0], sizeof p[0], "%s/results.json.tmp.%d.0", dir, (int)dead);     /* removed */
    snprintf(p[1], sizeof p[1], "%s/results.json.tmp.%d.17", dir, (int)dead);    /* removed */
    snprintf(p[2], sizeof p[2], "%s/results.csv.tmp.%d.0", dir, (int)dead);      /* another name */
    snprintf(p[3], sizeof p[3], "%s/results.json.tmp.%d.0.bak", dir, (int)dead); /* not the pattern */
    snprintf(p[4], sizeof p[4], "%s/results.json.tmp.%d", dir, (int)dead);       /* no serial */
    snprintf(p[5], sizeof p[5], "%s/xresults.json.tmp.%d.0", dir, (int)dead);    /* another name */
    snprintf(p[6], sizeof p[6], "%s/results.json.tmp.%d.1", dir, (int)getpid()); /* alive */
    for (int i = 0; i < 7; i++) {
        FILE *f = fopen(p[i], "w");
        assert_non_null(f);
        fclose(f);
    }
    snprintf(p[7], sizeof p[7], "%s/results.json.tmp.%d.2", dir, (int)dead);     /* a folder */
    assert_int_equal(mkdir(p[7], 0755), 0);
    assert_int_equal(atomic_file_remove_dead_temps(dir, "results.json"), 2);
    for (int i = 0; i < 8; i++) assert_int_equal(access(p[i], F_OK) == 0, i >= 2);
    assert_int_equal(atomic_file_remove_dead_temps(dir, "results.csv"), 1);
    assert_int_not_equal(access(p[2], F_OK), 0);
    assert_int_equal(atomic_file_remove_dead_temps("/no/such/folder", "results.json"), 0);
}

/* "did you mean": close names only, closeness relative to the word's length. */
static void test_did_you_mean(void **state) {
    (void)state;
    static const char *const layout[] = {"tp", "pp", "ep", "dp", "etp", "zero", "micro_batch", "global_batch",
                                         "schedule", "recompute", "placement", NULL};
    /* typos: an edit in a short word, two in a longer one, a prefix */
    assert_string_equal(moe_did_you_mean("ppp", layout), "pp");
    assert_string_equal(moe_did_you_mean("zer0", layout), "zero");
    assert_string_equal(moe_did_you_mean("shedule", layout), "schedule");
    assert_string_equal(moe_did_you_mean("micro_bacth", layout), "micro_batch");
    assert_string_equal(moe_did_you_mean("recomp", layout), "recompute");
    assert_string_equal(moe_did_you_mean("placemnet", layout), "placement");
    /* far names: 2 edits in a 3-letter word is most of the word; 3 in a 5-letter one */
    assert_null(moe_did_you_mean("moe", layout));       /* "ep" was 2 edits away */
    assert_null(moe_did_you_mean("stage", layout));     /* "zero", "tp": 3+ edits */
    assert_null(moe_did_you_mean("batch", layout));     /* not a prefix; 6 edits from micro_batch */
    assert_null(moe_did_you_mean("xyz", layout));
    static const char *const top[] = {"format", "name", "seed", "model", "cluster", "layout", NULL};
    assert_string_equal(moe_did_you_mean("layuot", top), "layout");
    assert_string_equal(moe_did_you_mean("sed", top), "seed");
    assert_null(moe_did_you_mean("routing", top));      /* 5+ edits from any */
    assert_null(moe_did_you_mean("run", top));          /* "name": 3 edits */
}

/* ---- allocation policy -------------------------------------------------------------------------- */

static void test_alloc_policy(void **state) {
    (void)state;
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pfd[1], 2);
        void *p = moe_xcalloc(SIZE_MAX / 2, 4); /* overflows size_t */
        (void)p;
        _exit(0);
    }
    close(pfd[1]);
    char msg[256] = "";
    ssize_t n = read(pfd[0], msg, sizeof msg - 1);
    msg[n > 0 ? n : 0] = '\0';
    close(pfd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), EXIT_RUNTIME);
    assert_non_null(strstr(msg, "out of memory: "));
    void *z = moe_xmalloc(0);
    assert_non_null(z);
    free(z);
    char *d = moe_xstrdup("abc");
    assert_string_equal(d, "abc");
    free(d);
}

/* ---- seeds -------------------------------------------------------------------------------------- */

static void test_seed_mix(void **state) {
    (void)state;
    uint64_t st = 0;
    assert_true(moe_seed_next(&st) == 0xe220a8397b1dcdafull);
    assert_true(moe_seed_next(&st) == 0x6e789e6aa1b965f4ull);
    assert_true(moe_seed_next(&st) == 0x06c45d188009454full);
    st = 1234567;
    assert_true(moe_seed_next(&st) == 6457827717110365317ull);
    assert_true(moe_seed_mix(1234567) == 6457827717110365317ull);
    assert_true(moe_seed_fold32(0x0123456789abcdefull) == (0x01234567u ^ 0x89abcdefu));
}

/* ---- text buffer ----------------------------------------------------------------------------- */

/* text_put_ll / text_put_ull against printf on the extremes, every power of ten and its neighbours,
 * and a pseudo-random sample; growth past the first 64 KiB keeps what was put. */
static void test_text_digits(void **state) {
    (void)state;
    text_buf t = {0}, ref = {0};
    char buf[32];
    long long v[64];
    int n = 0;
    v[n++] = 0; v[n++] = LLONG_MIN; v[n++] = LLONG_MAX; v[n++] = LLONG_MIN + 1;
    for (long long p = 1; p <= LLONG_MAX / 10; p *= 10) { v[n++] = p; v[n++] = p - 1; v[n++] = -p; }
    for (int i = 0; i < n; i++) {
        text_put_ll(&t, v[i]);
        text_put(&t, ",", 1);
        text_puts(&ref, (snprintf(buf, sizeof buf, "%lld,", v[i]), buf));
    }
    text_put_ull(&t, ULLONG_MAX);
    text_puts(&ref, (snprintf(buf, sizeof buf, "%llu", ULLONG_MAX), buf));
    uint64_t st = 42;
    for (int i = 0; i < 20000; i++) {   /* about 400 KB: the buffer grows several times */
        uint64_t x = moe_seed_next(&st) >> (i % 64);
        text_put(&t, ";", 1);
        text_put_ull(&t, x);
        text_puts(&ref, (snprintf(buf, sizeof buf, ";%llu", (unsigned long long)x), buf));
    }
    assert_int_equal(t.n, ref.n);
    assert_int_equal(strlen(t.s), t.n);   /* NUL-terminated */
    assert_string_equal(t.s, ref.s);
    text_free(&t);
    text_free(&ref);
    assert_null(t.s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_number_grammar), cmocka_unit_test(test_json_structure),
        cmocka_unit_test(test_json_duplicate_keys), cmocka_unit_test(test_json_getters),
        cmocka_unit_test(test_bounded_reader),      cmocka_unit_test(test_atomic_writer),
        cmocka_unit_test(test_output_not_regular),
        cmocka_unit_test(test_alloc_policy),        cmocka_unit_test(test_seed_mix),
        cmocka_unit_test(test_text_digits),       cmocka_unit_test(test_dead_writer_temps),
        cmocka_unit_test(test_did_you_mean),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
