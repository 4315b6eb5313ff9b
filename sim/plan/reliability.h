/* reliability.h — closed forms of checkpoint/restart theory (REFERENCE.md §7).
 * All times in one unit of the caller's choice (hours or seconds), consistently. */
#ifndef MOESIM_RELIABILITY_H
#define MOESIM_RELIABILITY_H

/* System MTBF of n independent components with the same MTBF (exponential). */
double mtbf_system(double component_mtbf, int n);
/* The job's mean time between failures in hours under the scenario's failure model (the M of
 * Young and Daly, for the plan and the run level alike): "classes": gpu_mtbf_h / GPUs; "components":
 * 1 / (sum over kinds of count / mtbf_h). INFINITY when nothing fails. */
struct scenario;
double reliability_job_mtbf_h(const struct scenario *s);
/* Young (1974): sqrt(2 delta M). */
double young_interval(double delta, double mtbf);
/* Daly (2006) first order: sqrt(2 delta M) - delta. */
double daly_first_order(double delta, double mtbf);
/* Daly (2006) higher order: for delta < 2M, sqrt(2 delta M)[1 + sqrt(delta/2M)/3 + (delta/2M)/9] - delta;
 * else M. */
double daly_interval(double delta, double mtbf);
/* Daly's expected wall time for solve time Ts with interval tau, write time delta, restart R,
 * exponential failures with MTBF M:  M e^(R/M) (e^((tau+delta)/M) - 1) Ts / tau. */
double daly_wall_time(double solve_time, double tau, double delta, double restart, double mtbf);

#endif
