/* compute_budget.c — seed 003's compute-budget chain (see compute_budget.h). */
#include "sim/plan/compute_budget.h"

double budget_flops_per_token_6n(double params_active) { return 6.0 * params_active; }
double budget_total_flops(double tokens, double flops_per_token) { return tokens * flops_per_token; }
double budget_cluster_flops_per_s(int gpus, double peak_tflops, double mfu) {
    return (double)gpus * peak_tflops * 1e12 * mfu;
}
double budget_seconds(double total_flops, double cluster_flops_per_s) {
    return total_flops / cluster_flops_per_s;
}
double budget_days(double total_flops, double cluster_flops_per_s) {
    return budget_seconds(total_flops, cluster_flops_per_s) / 86400.0;
}
