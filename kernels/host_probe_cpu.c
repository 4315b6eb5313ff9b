/* host_probe_cpu.c — CPU references of the host-overhead probe's two tiny kernels (moe_kernels.h
 * §10): the tick adds one to a counter, the spin writes its flag. They are the truth the GPU
 * versions are tested against (tests/test_gpu_kernels.c), and the probe itself applies the tick's
 * reference to every tick it enqueues, so that the counter read back at the end proves that every
 * timed launch ran exactly once (kernels/host_probe.cu). */
#include "kernels/moe_kernels.h"

void moe_tick_cpu(int32_t *counter) { *counter += 1; }

void moe_spin_cpu(long long cycles, int32_t *flag, int32_t value) {
    (void)cycles; /* the wait is the GPU's; the observable result is the flag */
    *flag = value;
}
