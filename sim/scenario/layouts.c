/* layouts.c — enumerate valid layouts by trial validation. */
#include "sim/scenario/layouts.h"
#include "sim/scenario/scenario.h"


int layouts_enumerate(const scenario *base, layout_cfg *out, int cap) {
    const int gpus = scn_gpus(base);
    int n = 0;
    scenario s = *base;
    for (int tp = 1; tp <= base->cluster.gpus_per_node; tp *= 2) {
        if (gpus % tp) continue;
        for (int pp = 1; pp <= gpus / tp; pp++) {
            if ((gpus / tp) % pp) continue;
            for (int ep = 1; ep <= gpus / (tp * pp); ep++) {
                if ((gpus / (tp * pp)) % ep) continue;
                s.layout = base->layout;
                s.layout.tp = tp;
                s.layout.pp = pp;
                s.layout.ep = ep;
                /* the expert side is etp x ep x dp: a base with its own etp keeps it */
                int etp = base->layout.etp > 0 ? base->layout.etp : tp;
                if (gpus % ((long)etp * pp * ep)) continue;
                s.layout.dp = gpus / (etp * pp * ep);
                /* interleaving needs vpp chunks per stage; keep the base's vpp only where it fits */
                moe_error err;
                if (scenario_validate(&s, &err) != 0) continue;
                if (n < cap) out[n] = s.layout;
                n++;
            }
        }
    }
    return n;
}
