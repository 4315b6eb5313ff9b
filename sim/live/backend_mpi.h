/* backend_mpi.h — simlive's MPI layer: the "mpi" backend (CPU references from sim/live/backend_cpu.h + Open
 * MPI) and the MPI services every backend uses (the watchdog's state exchange, step barriers,
 * gathering timings). Compiled into simlive only: the core library never links MPI (DESIGN.md).
 *
 * Communicators. One MPI_Comm_split of MPI_COMM_WORLD per group kind (EP, TP, DP-dense, DP-expert):
 * color = the rank's group id of that kind in program.groups, key = the global rank — members are
 * listed in rank order in program.groups, so the communicator rank IS the member index (== EP index
 * for the EP group, as program.h requires). Pipeline SEND/RECV use a duplicate of MPI_COMM_WORLD with
 * the program's tags; the watchdog uses its own duplicate, so its messages never match the
 * step's.
 *
 * Operations (all nonblocking; the executor polls them with MPI_Test):
 *   A2A_DISPATCH (forward)  MPI_Ialltoall of the per-(destination, local expert) row counts that the
 *                           live gating produced, then MPI_Ialltoallv of the token rows (a contiguous
 *                           row datatype, counts and displacements in rows);
 *   A2A_COMBINE, backward   MPI_Ialltoallv with counts known from the forward dispatch;
 *   SEND / RECV             MPI_Isend / MPI_Irecv (RECVs pre-posted: SEND is eager, program.h);
 *   REDUCE_SCATTER          MPI_Ireduce_scatter_block, ALL_GATHER MPI_Iallgather, ALL_REDUCE
 *                           MPI_Iallreduce — BF16 elements (MPI_UINT16_T) summed by a user-defined
 *                           commutative MPI_Op that adds in FP32 and rounds to BF16, as NCCL's bf16
 *                           sum does.
 *
 * Watchdog (live_exec.h): a rank whose executor stops (its own timeout, or another rank's alarm)
 * calls live_mpi_watchdog(): it sends its live_rank_state to every other rank on the watchdog
 * communicator (MPI_Isend, never waits for it to be received) and collects the others' states with
 * MPI_Iprobe until all have answered or `grace_s` has passed; ranks that did not answer are marked
 * LIVE_NO_ANSWER. The backend's idle() probes the same communicator, so a rank waiting in a
 * collective (or sitting at its injected stall) notices the alarm within a millisecond and answers.
 * The caller then prints where it is; the lowest answering rank prints the report, and everyone
 * ends with MPI_Abort(MPI_COMM_WORLD, 1) — the only way to release ranks stuck in the fabric.
 */
#ifndef MOESIM_TOOLS_LIVE_MPI_H
#define MOESIM_TOOLS_LIVE_MPI_H

#include "sim/base/errors.h"
#include "sim/live/live_exec.h"
#include "sim/program/program.h"
#include "sim/live/backend_cpu.h"

typedef struct live_mpi live_mpi;

/* MPI_Init (thread level single) and rank/size; call once before anything else. */
int live_mpi_init(int *argc, char ***argv, int *rank, int *size);
void live_mpi_finalize(void);
/* Every rank calls this with the same code: 0 when every rank passed `ok_local` == 1. */
int live_mpi_all_ok(int ok_local);
/* MPI_Abort(MPI_COMM_WORLD, code): never returns. */
void live_mpi_abort(int code) __attribute__((noreturn));

/* Communicators for program `p` (collective over MPI_COMM_WORLD). `cpu` may be NULL for a backend
 * that brings its own compute (NCCL): then only the watchdog / barrier / gather services work. */
int live_mpi_create(const program *p, int rank, live_cpu *cpu, int n_ops, live_mpi **out, moe_error *err);
void live_mpi_free(live_mpi *m);
/* The backend table of the "mpi" backend (CPU compute + MPI communication). */
void live_mpi_backend(live_mpi *m, live_backend *b);
/* Services for other backends: wall clock, watchdog-aware barrier, idle (probe alarm + yield). */
double live_mpi_now_s(void *m);
int live_mpi_barrier(void *m, moe_error *err);
int live_mpi_idle(void *m);

/* Exchange watchdog states (see above). all: n_ranks entries; returns the number that answered. */
int live_mpi_watchdog(live_mpi *m, const live_rank_state *mine, live_rank_state *all, double grace_s);

/* Gather every rank's op times and measured volumes to rank 0 (times[r], measured[r] allocated there
 * with program_n_ops(p, r) entries; NULL elsewhere) and every rank's breakdown. */
int live_mpi_gather_run(live_mpi *m, const live_rank_run *mine, op_time ***times, double ***measured);
/* MPI_Allreduce helpers on MPI_COMM_WORLD */
double live_mpi_max(double v);
double live_mpi_sum(double v);
long live_mpi_sum_long(long v);
/* MPI_Bcast of `bytes` bytes from `root` on MPI_COMM_WORLD (the NCCL unique id). */
void live_mpi_bcast_bytes(void *buf, int bytes, int root);

#endif
