/* layout_rank.c — rank valid layouts by the plan's step time (layout_rank.h). */
#include "sim/plan/layout_rank.h"
#include "sim/base/alloc.h"

#include <stdlib.h>

#include "sim/plan/plan.h"
#include "sim/scenario/layouts.h"

typedef struct {
    layout_cfg layout;
    double step_time_s;
} ranked_layout;

static int by_step_time(const void *a, const void *b) {
    const ranked_layout *x = a, *y = b;
    if (x->step_time_s != y->step_time_s) return x->step_time_s < y->step_time_s ? -1 : 1;
    return 0;
}

int layouts_rank(const scenario *base, layout_cfg **ranked, int *n_fit, moe_error *err) {
    int n = layouts_enumerate(base, NULL, 0);
    *n_fit = 0;
    *ranked = NULL;
    layout_cfg *all = moe_xmalloc(sizeof *all * (size_t)(n + 1));
    ranked_layout *fit = moe_xmalloc(sizeof *fit * (size_t)(n + 1));
    layout_cfg *out = moe_xmalloc(sizeof *out * (size_t)(n + 1));
    layouts_enumerate(base, all, n);
    scenario s = *base;
    int n_out = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++) {
            s.layout = all[i];
            plan_result p;
            if (plan_evaluate(&s, &p, err)) {
                free(all);
                free(fit);
                free(out);
                return -1;
            }
            if (pass == 0 && p.fits_memory) {
                /* a tiny index term keeps the order deterministic among equal step times */
                fit[*n_fit] = (ranked_layout){all[i], p.step_time_s * (1.0 + 1e-12 * i)};
                ++*n_fit;
            } else if (pass == 1 && !p.fits_memory) {
                out[*n_fit + n_out++] = all[i];
            }
        }
        if (pass == 0) {
            qsort(fit, (size_t)*n_fit, sizeof *fit, by_step_time);
            for (int i = 0; i < *n_fit; i++) out[i] = fit[i].layout;
        }
    }
    free(all);
    free(fit);
    *ranked = out;
    return n;
}
