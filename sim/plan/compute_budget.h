/* compute_budget.h — the back-of-the-envelope chain of seed 003 step 1 (REFERENCE.md §1):
 *   FLOPs/token ~ 6 N_active;  total = tokens x FLOPs/token;
 *   cluster effective FLOP/s = gpus x peak x MFU;  pure compute time = total / effective.
 * Kept as separate functions so that the seed's own inputs (N = 37e9 exactly) can be checked against
 * its printed results independently of moesim's exact parameter count. */
#ifndef MOESIM_COMPUTE_BUDGET_H
#define MOESIM_COMPUTE_BUDGET_H

double budget_flops_per_token_6n(double params_active);
double budget_total_flops(double tokens, double flops_per_token);
double budget_cluster_flops_per_s(int gpus, double peak_tflops, double mfu);
double budget_seconds(double total_flops, double cluster_flops_per_s);
double budget_days(double total_flops, double cluster_flops_per_s);

#endif
