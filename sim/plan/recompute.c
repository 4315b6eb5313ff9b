/* recompute.c — recompute kinds and Megatron modules as sets of block parts (recompute.h). */
#include "sim/plan/recompute.h"

unsigned recompute_kind_set(recompute_kind rc) {
    return rc == RECOMPUTE_FULL ? RC_FULL : rc == RECOMPUTE_SELECTIVE ? RC_SELECTIVE : 0u;
}

unsigned recompute_set(const layout_cfg *lay) {
    unsigned m = lay->recompute_modules;
    if (!m) return recompute_kind_set(lay->recompute);
    unsigned set = 0;
    if (m & RCM_CORE_ATTN) set |= RC_CORE_ATTN;
    if (m & RCM_MLA_UP_PROJ) set |= RC_MLA_UP;
    if (m & RCM_LAYERNORM) set |= RC_LAYERNORM;
    if (m & RCM_MLP) set |= RC_MLP;
    if (m & RCM_MOE_ACT) set |= RC_MOE_ACT;
    if (m & RCM_MOE) set |= RC_MOE;
    if (m & RCM_SHARED_EXPERTS) set |= RC_SHARED;
    return set;
}
