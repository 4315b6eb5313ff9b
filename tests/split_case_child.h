/* split_case_child.h — the step of a scenario built on tests/step_split_case.h run in a child
 * process, since SimGrid holds one platform per process: the fast executor with SimGrid's patterns
 * (with or without the replica shortcut) or the full-fidelity one. The step time and the four ranks'
 * splits come back through a pipe and are checked in the parent (a cmocka check must not fail in the
 * child). Include after <cmocka.h>; links SimGrid (not for the live tests). */
#ifndef MOESIM_TESTS_SPLIT_CASE_CHILD_H
#define MOESIM_TESTS_SPLIT_CASE_CHILD_H

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/exec/step_exec.h"
#include "sim/simgrid/comm_simgrid.h"
#include "sim/simgrid/exec_full.h"
#include "tests/step_split_case.h"

typedef struct {
    double step_s;
    step_split split[4];
} child_step;

enum { CHILD_FAST = 0, CHILD_FAST_PER_REPLICA = 1, CHILD_FULL = 2 };

static inline child_step split_case_step_in_child(scenario *s, int mode) {
    int fd[2];
    if (pipe(fd)) fail_msg("pipe");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        moe_error err = {0};
        program *p = NULL;
        child_step c = {.step_s = -1};
        comm_model sg = {0};
        step_exec_result r;
        if (program_build(s, &p, &err) == 0 && (sg = sg_comm_create(s, &err)).a2a_s) {
            step_exec_opts o = {.comm = &sg, .price = split_case_price, .shortcut = mode == CHILD_FAST};
            int rc = mode == CHILD_FULL ? sg_exec_full_run(p, &o, &r, &err) : step_exec_run(p, &o, &r, &err);
            if (rc == 0) {
                c.step_s = r.step_time_s;
                memcpy(c.split, r.split, sizeof c.split);
                step_exec_result_free(&r);
            }
        }
        if (c.step_s < 0) fprintf(stderr, "child: %s\n", err.msg);
        _exit(write(fd[1], &c, sizeof c) == (ssize_t)sizeof c ? 0 : 1);
    }
    close(fd[1]);
    child_step c = {.step_s = -1};
    ssize_t n = read(fd[0], &c, sizeof c);
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    assert_int_equal(n, (ssize_t)sizeof c);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_true(c.step_s > 0);
    return c;
}

#endif
