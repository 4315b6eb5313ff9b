/* failure_classes.c — failure class names and the default class mix (failure_classes.h). */
#include "sim/scenario/failure_classes.h"

#include <stddef.h>
#include <strings.h>

const char *const FAILURE_CLASS_NAMES[FAIL_NCLASSES + 1] = {
    "gpu", "hbm", "nic", "nvlink", "switch", "host", "software", NULL};

const char *failure_class_name(failure_class c) {
    return (c >= 0 && c < FAIL_NCLASSES) ? FAILURE_CLASS_NAMES[c] : "?";
}

int failure_class_parse(const char *name, failure_class *out) {
    for (int c = 0; c < FAIL_NCLASSES; c++)
        if (strcasecmp(name, FAILURE_CLASS_NAMES[c]) == 0) { *out = (failure_class)c; return 0; }
    return -1;
}

/* Failure mix: Llama 3 405B pre-training, 54 days on 16,384 H100 GPUs (Dubey et al., "The Llama 3
 * Herd of Models", 2024, section 3.3.4, Table 5): 419 unexpected interruptions by root cause, grouped
 * into moesim's classes. NVLink has no row of its own there (NVLink errors surface as faulty-GPU
 * interruptions), so its default share is 0; a scenario can give it one. Hardware classes take the
 * node out of the job (hot-spare swap or wait for repair); software faults restart in place. */
static const struct {
    failure_class cls;
    int interruptions;
    int needs_node_swap;
} LLAMA3_INTERRUPTIONS[FAIL_NCLASSES] = {
    /* faulty GPU 148, GPU SRAM 19, GPU system processor 17, silent data corruption 6,
     * GPU thermal interface + sensor 6 */
    {FAIL_GPU, 148 + 19 + 17 + 6 + 6, 1},
    {FAIL_HBM, 72, 1},     /* GPU HBM3 memory */
    {FAIL_NIC, 7, 1},
    {FAIL_NVLINK, 0, 1},
    {FAIL_SWITCH, 35, 1},  /* network switch/cable: the job moves off the node behind the bad link */
    /* host maintenance 32, SSD 3, power supply 3, server chassis 2, IO expansion board 2, CPU 2,
     * system memory 2 */
    {FAIL_HOST, 32 + 3 + 3 + 2 + 2 + 2 + 2, 1},
    /* software bugs 54, dependencies 2, NCCL watchdog timeouts (root cause unknown) 7 */
    {FAIL_SOFTWARE, 54 + 2 + 7, 0},
};

void failures_default_classes(failure_class_cfg classes[FAIL_NCLASSES]) {
    int total = 0;
    for (int i = 0; i < FAIL_NCLASSES; i++) total += LLAMA3_INTERRUPTIONS[i].interruptions;
    for (int i = 0; i < FAIL_NCLASSES; i++) {
        failure_class_cfg *c = &classes[LLAMA3_INTERRUPTIONS[i].cls];
        c->share = (double)LLAMA3_INTERRUPTIONS[i].interruptions / total;
        c->needs_node_swap = LLAMA3_INTERRUPTIONS[i].needs_node_swap;
    }
}
