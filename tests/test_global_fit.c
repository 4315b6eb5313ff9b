/* test_global_fit.c — the joint fit of the global parameters and its leave-one-out
 * (sim/point/global_fit.h), and the error bands built from left-out residuals
 * (sim/point/validation_doc.h), on problems whose answers are known by construction.
 *
 * The problem: 12 cases on two GPU kinds (A: cases 0-5, B: 6-11), three parameters: a per-kind
 * "sustained" for A and for B (group 0, bounds [0.4, 1.2]) and a shared per-call host cost (group 1,
 * bounds [3, 60] us). A case's log rate is
 *     log_pred_i = c_i + a_i log(s_kind(i)) - b_i log(call_us)
 * (a compute-bound share a_i that speeds up with the clock, a host-bound share b_i that slows with
 * the call cost). Published values made from chosen true parameters must give them back; a model
 * linear in the solver's coordinates must give leave-one-out refits equal to exact refits without
 * the case; one case far off must not drag its kind's parameter under the robust loss. */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "sim/plan/global_params.h"
#include "sim/point/global_fit.h"
#include "sim/point/validation_doc.h"

#define N 12
#define P 3

static const int GROUP[P] = {0, 0, 1};
static const double LO[P] = {0.4, 0.4, 3.0}, HI[P] = {1.2, 1.2, 60.0};
static double A[N], B[N], C[N];
static unsigned char DEP[N * P];

static void setup_cases(void) {
    for (int i = 0; i < N; i++) {
        A[i] = 0.3 + 0.06 * i;         /* compute-bound share */
        B[i] = 0.05 + 0.03 * (i % 5);  /* host-bound share */
        C[i] = 7.0 + 0.1 * i;
        memset(&DEP[i * P], 0, P);
        DEP[i * P + (i < 6 ? 0 : 1)] = 1;
        DEP[i * P + 2] = 1;
    }
}

static double u_of(int j, double th) {
    double f = (th - LO[j]) / (HI[j] - LO[j]);
    return log(f / (1 - f));
}

typedef struct {
    int linear_in_u;   /* log_pred = c + sum J u instead of the log form */
    int calls;
    const int *map;    /* a sub-problem's case -> the case above (NULL: the same) */
} model_ctx;

static double model(const model_ctx *m, int i, const double *th) {
    if (m->map) i = m->map[i];
    int kind = i < 6 ? 0 : 1;
    if (m->linear_in_u) return C[i] + 0.2 * A[i] * u_of(kind, th[kind]) - 0.1 * B[i] * u_of(2, th[2]);
    return C[i] + A[i] * log(th[kind]) - B[i] * log(th[2]);
}

static int eval(void *vctx, int n, const int *cases, const double *theta, int stride, double *log_pred, moe_error *err) {
    (void)err;
    model_ctx *m = vctx;
    for (int k = 0; k < n; k++) log_pred[k] = model(m, cases[k], theta + (size_t)k * stride);
    m->calls += n;
    return 0;
}

static gfit_problem problem(const double *y, const double *start, double c) {
    return (gfit_problem){.n = N, .p = P, .y = y, .dep = DEP, .group = GROUP, .lo = LO, .hi = HI, .start = start,
                          .robust_scale = c};
}

/* published values made from known parameters: the fit returns them, and the Jacobian costs one
 * evaluation of each case per group, not per parameter */
static void test_fit_recovers_known_parameters(void **state) {
    (void)state;
    setup_cases();
    const double truth[P] = {0.83, 0.61, 14.5}, start[P] = {1.0, 1.0, 12.0};
    model_ctx m = {0};
    double y[N];
    for (int i = 0; i < N; i++) y[i] = model(&m, i, truth);
    gfit_problem pr = problem(y, start, 0.1);
    gfit_result r;
    gfit_result_init(&r, N, P);
    moe_error err = {0};
    assert_int_equal(gfit_fit(&pr, eval, &m, 50, &r, &err), 0);
    for (int j = 0; j < P; j++) assert_true(fabs(r.theta[j] - truth[j]) < 1e-3 * truth[j]);
    assert_int_equal(r.cases_of[0], 6);
    assert_int_equal(r.cases_of[2], N);
    /* gfit_at at the optimum: the residuals (N) and two group passes of N cases each */
    m.calls = 0;
    gfit_result r2;
    gfit_result_init(&r2, N, P);
    memcpy(r2.theta, r.theta, sizeof r.theta[0] * P);
    assert_int_equal(gfit_at(&pr, eval, &m, &r2, &err), 0);
    assert_int_equal(m.calls, 3 * N);
    gfit_result_free(&r2);
    gfit_result_free(&r);
}

/* the 95% intervals: over 100 replicates with normal noise of sd 1% on every published value, each
 * parameter's interval holds the truth in about 95 of them. Measured: 92, 87, 91 (a Wald interval
 * over 12 cases of a model nonlinear in the solver's coordinates covers a little less than it
 * states); the test asks for 82-99: an interval without the residual variance (s^2 = 1, a hundred
 * times too wide) holds the truth in all 100. */
static void test_intervals_cover_the_truth(void **state) {
    (void)state;
    setup_cases();
    const double truth[P] = {0.83, 0.61, 14.5}, start[P] = {1.0, 1.0, 12.0};
    model_ctx m = {0};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 7);
    int covered[P] = {0}, reps = 100;
    moe_error err = {0};
    for (int rep = 0; rep < reps; rep++) {
        double y[N];
        for (int i = 0; i < N; i++) y[i] = model(&m, i, truth) + gsl_ran_gaussian(rng, 0.01);
        gfit_problem pr = problem(y, start, 0.1);
        gfit_result r;
        gfit_result_init(&r, N, P);
        assert_int_equal(gfit_fit(&pr, eval, &m, 50, &r, &err), 0);
        for (int j = 0; j < P; j++) covered[j] += r.ci_lo[j] <= truth[j] && truth[j] <= r.ci_hi[j];
        gfit_result_free(&r);
    }
    gsl_rng_free(rng);
    for (int j = 0; j < P; j++) assert_in_range(covered[j], 82, 99);
}

/* residuals linear in the solver's coordinates: the leave-one-out refit of every case equals a full
 * Levenberg-Marquardt fit of the other 11 cases */
static void test_loo_equals_exact_refit_when_linear(void **state) {
    (void)state;
    setup_cases();
    model_ctx m = {.linear_in_u = 1};
    const double truth[P] = {0.9, 0.7, 20.0}, start[P] = {1.0, 1.0, 12.0};
    double y[N];
    for (int i = 0; i < N; i++) y[i] = model(&m, i, truth) + 0.03 * sin(3.0 * i + 1.0);
    gfit_problem pr = problem(y, start, 0.1);
    gfit_result r;
    gfit_result_init(&r, N, P);
    moe_error err = {0};
    assert_int_equal(gfit_fit(&pr, eval, &m, 100, &r, &err), 0);
    assert_int_equal(gfit_loo(&pr, eval, &m, &r, &err), 0);
    int moved = 0;
    for (int k = 0; k < N; k++) {
        /* the exact refit: the same problem without case k */
        double yk[N - 1];
        unsigned char depk[(N - 1) * P];
        int idx[N - 1], n = 0;
        for (int i = 0; i < N; i++)
            if (i != k) {
                yk[n] = y[i];
                memcpy(&depk[n * P], &DEP[i * P], P);
                idx[n++] = i;
            }
        gfit_problem pk = pr;
        pk.n = N - 1, pk.y = yk, pk.dep = depk;
        gfit_result rk;
        gfit_result_init(&rk, N - 1, P);
        model_ctx mk = {.linear_in_u = 1, .map = idx};
        assert_int_equal(gfit_fit(&pk, eval, &mk, 200, &rk, &err), 0);
        for (int j = 0; j < P; j++) {
            double loo = r.loo_theta[(size_t)k * P + j];
            assert_true(fabs(loo - rk.theta[j]) < 2e-3 * rk.theta[j]);
            moved += fabs(loo - r.theta[j]) > 1e-4 * r.theta[j];
        }
        gfit_result_free(&rk);
    }
    assert_true(moved > 0); /* leaving a case out moves the fit: the refit is not the full fit */
    gfit_result_free(&r);
}

/* one case 2x off (a mechanism the model lacks): under the Cauchy loss its kind's parameter stays
 * near the truth the other five cases give; under least squares it is dragged */
static void test_robust_loss_resists_one_far_case(void **state) {
    (void)state;
    setup_cases();
    const double truth[P] = {0.8, 0.7, 15.0}, start[P] = {1.0, 1.0, 12.0};
    model_ctx m = {0};
    double y[N];
    for (int i = 0; i < N; i++) y[i] = model(&m, i, truth);
    y[3] -= log(2.0); /* published at half the model's rate */
    moe_error err = {0};
    double got[2];
    for (int robust = 0; robust < 2; robust++) {
        gfit_problem pr = problem(y, start, robust ? 0.1 : 0.0);
        gfit_result r;
        gfit_result_init(&r, N, P);
        assert_int_equal(gfit_fit(&pr, eval, &m, 100, &r, &err), 0);
        got[robust] = r.theta[0];
        gfit_result_free(&r);
    }
    assert_true(fabs(got[1] - truth[0]) < 0.01 * truth[0]);
    assert_true(fabs(got[0] - truth[0]) > 0.02 * truth[0]);
}

/* bands: an 80% prediction interval of the left-out log residuals, by hand. Five dense cases with
 * log residuals -0.1, -0.05, 0, 0.05, 0.1: mean 0, sd sqrt(0.025 / 4) = 0.0790569, t(0.90, 4) =
 * 1.533206 (Student's t table), half width 1.533206 x 0.0790569 x sqrt(1 + 1/5) = 0.132780; all five
 * inside. Two MoE cases are too few for a band of their own. */
static void test_bands_from_left_out_residuals(void **state) {
    (void)state;
    const double l[5] = {-0.1, -0.05, 0.0, 0.05, 0.1};
    cJSON *cases = cJSON_CreateArray();
    for (int i = 0; i < 7; i++) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "kind", "step");
        cJSON_AddStringToObject(c, "metric", "tokens_per_s_per_gpu");
        cJSON_AddStringToObject(c, "status", "ok");
        cJSON_AddBoolToObject(c, "moe", i >= 5);
        cJSON_AddNumberToObject(c, "loo_error_pct", i < 5 ? 100.0 * expm1(l[i]) : 50.0);
        cJSON_AddItemToArray(cases, c);
    }
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddItemToObject(doc, "bands", validate_bands_json(cases));
    cJSON_AddItemToObject(doc, "cases", cases);
    validate_band b;
    assert_int_equal(validate_band_of(doc, 0, &b), 0);
    assert_int_equal(b.cases, 5);
    assert_true(b.left_out);
    assert_true(fabs(b.max_rel_err - expm1(0.132780)) < 1e-5);
    assert_true(fabs(b.min_rel_err - expm1(-0.132780)) < 1e-5);
    assert_true(fabs(b.coverage - 1.0) < 1e-12);
    assert_int_equal(validate_band_of(doc, 1, &b), -1); /* MoE: 2 cases */
    assert_int_equal(validate_band_of(doc, -1, &b), 0); /* all 7 */
    assert_int_equal(b.cases, 7);
    /* the two cases at +50% widen the band of all seven until it holds them */
    assert_true(fabs(b.coverage - 1.0) < 1e-12);
    assert_true(b.max_rel_err > 0.5 && b.min_rel_err < expm1(-0.132780));
    cJSON_Delete(doc);
}

/* a fit file with a value outside its parameter's bounds, or an unknown key, is refused with the file
 * and the JSON path named */
static void test_fit_file_errors_name_the_path(void **state) {
    (void)state;
    const char *texts[3] = {
        "{\"format\": \"moesim-global-fit/1\", \"params\": [{\"path\": \"cluster.gpu.sustained\", \"scope\": \"H100\", \"value\": 2.5}]}",
        "{\"format\": \"moesim-global-fit/1\", \"params\": [{\"path\": \"cluster.gpu.sustained\", \"scope\": \"H100\", \"valu\": 0.9}]}",
        "{\"format\": \"moesim-global-fit/1\", \"params\": [{\"path\": \"host.launch_us\", \"scope\": \"x\", \"value\": 3}]}"};
    const char *expect[3] = {"params[0].value", "params[0].valu", "params[0].path"};
    for (int i = 0; i < 3; i++) {
        char path[] = "/tmp/moesim-fit-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        FILE *f = fdopen(fd, "w");
        fputs(texts[i], f);
        fclose(f);
        moe_error err = {0};
        cJSON *d = global_fit_load(path, &err);
        unlink(path);
        assert_null(d);
        assert_int_equal(err.code, EXIT_BADINPUT);
        assert_non_null(strstr(err.msg, path));
        assert_non_null(strstr(err.msg, expect[i]));
    }
    /* the committed fit reads */
    moe_error err = {0};
    cJSON *d = global_fit_load("calibration/models/global.json", &err);
    assert_non_null(d);
    cJSON_Delete(d);
}

/* A log-normal prior (global_fit.h "Priors"), by hand: one parameter theta, three cases whose log
 * prediction is log theta + a_i, plain least squares (c = 0, so the prior's residual is
 * (log theta - m) / sd). The loss sum (log theta + a_i - y_i)^2 + ((log theta - m) / sd)^2 is least at
 * log theta = (sum (y_i - a_i) + m / sd^2) / (n + 1 / sd^2); leaving case k out, the same over the
 * other two. */
static const double PA[3] = {0.1, -0.2, 0.05}, PY[3] = {0.0, -0.5, 0.2};
static int eval_prior(void *ctx, int n, const int *cases, const double *theta, int stride, double *log_pred,
                      moe_error *err) {
    (void)ctx, (void)err;
    for (int k = 0; k < n; k++) log_pred[k] = log(theta[(size_t)k * stride]) + PA[cases[k]];
    return 0;
}

static void test_prior_by_hand(void **state) {
    (void)state;
    const unsigned char dep[3] = {1, 1, 1};
    const int group[1] = {0};
    const double lo[1] = {0.2}, hi[1] = {2.0}, start[1] = {1.0}, m[1] = {log(0.84)}, sd[1] = {0.5};
    gfit_problem pr = {.n = 3, .p = 1, .y = PY, .dep = dep, .group = group, .lo = lo, .hi = hi, .start = start,
                       .robust_scale = 0, .prior_log_mean = m, .prior_log_sd = sd};
    gfit_result r;
    gfit_result_init(&r, 3, 1);
    moe_error err = {0};
    assert_int_equal(gfit_fit(&pr, eval_prior, NULL, 100, &r, &err), 0);
    double sum = 0;
    for (int i = 0; i < 3; i++) sum += PY[i] - PA[i];
    double want = (sum + m[0] / (sd[0] * sd[0])) / (3 + 1 / (sd[0] * sd[0]));
    /* to the solver's stopping rule (steps under 1e-3 in u, forward-difference Jacobian): 1e-4 in log */
    assert_true(fabs(log(r.theta[0]) - want) < 1e-4);
    /* the prior's pull: without it the fit is the plain mean of the cases */
    assert_true(fabs(log(r.theta[0]) - sum / 3) > 0.05);
    /* leave-one-out: residuals linear in log theta, not in the solver's u, so the linearized refit is
     * first-order; within 1e-3 of the exact refit over the other two */
    assert_int_equal(gfit_loo(&pr, eval_prior, NULL, &r, &err), 0);
    for (int k = 0; k < 3; k++) {
        double sk = sum - (PY[k] - PA[k]), wk = (sk + m[0] / (sd[0] * sd[0])) / (2 + 1 / (sd[0] * sd[0]));
        assert_true(fabs(log(r.loo_theta[k]) - wk) < 1e-3);
    }
    gfit_result_free(&r);
}

/* Each registry row's scope: the GPU kind (an H800 is an H100), the framework, and the architecture for
 * the grouped GEMM rate (TransformerEngine's grouped GEMMs), which does not apply to DeepSeek's blockwise
 * FP8 on Hopper (DeepGEMM's grouped kernels) but does on Blackwell. */
static void test_scopes(void **state) {
    (void)state;
    int n;
    const global_param *g = global_params(&n);
    const global_param *grouped = NULL, *sustained = NULL;
    for (int i = 0; i < n; i++) {
        if (!strcmp(g[i].path, "cluster.gpu.grouped_gemm_rate")) grouped = &g[i];
        if (!strcmp(g[i].path, "cluster.gpu.sustained")) sustained = &g[i];
    }
    assert_non_null(grouped);
    assert_non_null(sustained);
    scenario s;
    memset(&s, 0, sizeof s);
    char out[64];
    snprintf(s.cluster.gpu.name, sizeof s.cluster.gpu.name, "H800");
    s.precision.compute = DT_FP8;
    assert_int_equal(global_param_scope(grouped, &s, out, sizeof out), -1);
    s.precision.compute = DT_BF16;
    assert_int_equal(global_param_scope(grouped, &s, out, sizeof out), 0);
    assert_string_equal(out, "Hopper");
    assert_int_equal(global_param_scope(sustained, &s, out, sizeof out), 0);
    assert_string_equal(out, "H100");
    snprintf(s.cluster.gpu.name, sizeof s.cluster.gpu.name, "GB300");
    s.cluster.gpu.fp4_tflops = 15000;
    s.precision.compute = DT_FP8;
    assert_int_equal(global_param_scope(grouped, &s, out, sizeof out), 0);
    assert_string_equal(out, "Blackwell");
    assert_int_equal(global_param_scope(sustained, &s, out, sizeof out), 0);
    assert_string_equal(out, "GB300");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scopes),
        cmocka_unit_test(test_prior_by_hand),
        cmocka_unit_test(test_fit_recovers_known_parameters),
        cmocka_unit_test(test_intervals_cover_the_truth),
        cmocka_unit_test(test_loo_equals_exact_refit_when_linear),
        cmocka_unit_test(test_robust_loss_resists_one_far_case),
        cmocka_unit_test(test_bands_from_left_out_residuals),
        cmocka_unit_test(test_fit_file_errors_name_the_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
