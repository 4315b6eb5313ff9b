/* failure_classes.h — the component classes a failure is attributed to (reliability.classes.*),
 * their names in scenarios and failure logs, and the default split of the failure rate over them.
 * The run level (sim/run/failures.h) draws and replays failures by these classes. */
#ifndef MOESIM_FAILURE_CLASSES_H
#define MOESIM_FAILURE_CLASSES_H

#include "sim/scenario/scenario_types.h"

/* The class names, NULL-terminated (for did-you-mean). */
extern const char *const FAILURE_CLASS_NAMES[FAIL_NCLASSES + 1];

/* "gpu", "hbm", "nic", "nvlink", "switch", "host", "software". */
const char *failure_class_name(failure_class c);
/* Case-insensitive; 0 on success, -1 if `name` is no class. */
int failure_class_parse(const char *name, failure_class *out);

/* A default split of failures by class, for scenarios that give none. Shares follow the unexpected
 * interruptions Meta reported for a 54-day, 16,384-H100 Llama 3 pre-training run (GPU-side faults
 * ~40%, HBM ~17%, software ~18%, switches/cables ~9%, host ~10%, NIC and NVLink a few % each);
 * the classes that need a node swap are the ones a hot spare can replace (GPU, HBM, NIC, NVLink,
 * host); switch/cable faults and software faults restart the job in place. */
void failures_default_classes(failure_class_cfg classes[FAIL_NCLASSES]);

#endif
