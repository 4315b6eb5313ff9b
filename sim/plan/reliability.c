/* reliability.c — Young and Daly checkpoint intervals and Daly's expected wall time. */
#include "sim/plan/reliability.h"

#include <math.h>

#include "sim/scenario/components.h"

double mtbf_system(double component_mtbf, int n) { return component_mtbf / (double)n; }

double reliability_job_mtbf_h(const scenario *s) {
    const reliability_cfg *r = &s->reliability;
    if (r->failure_model == FMODEL_COMPONENTS) {
        double rate = components_failures_per_h(s);
        return rate > 0 ? 1.0 / rate : INFINITY;
    }
    if (!(r->gpu_mtbf_h > 0) || !isfinite(r->gpu_mtbf_h)) return INFINITY;
    return mtbf_system(r->gpu_mtbf_h, scn_gpus(s));
}

double young_interval(double delta, double mtbf) { return sqrt(2.0 * delta * mtbf); }

double daly_first_order(double delta, double mtbf) { return sqrt(2.0 * delta * mtbf) - delta; }

double daly_interval(double delta, double mtbf) {
    if (delta >= 2.0 * mtbf) return mtbf;
    double x = delta / (2.0 * mtbf);
    return sqrt(2.0 * delta * mtbf) * (1.0 + sqrt(x) / 3.0 + x / 9.0) - delta;
}

double daly_wall_time(double solve_time, double tau, double delta, double restart, double mtbf) {
    return mtbf * exp(restart / mtbf) * expm1((tau + delta) / mtbf) * solve_time / tau;
}
