#!/usr/bin/env python3
"""make_samples.py -- regenerate the sample nccl-tests logs in this folder (not measurements).

The logs are synthetic but shaped like real nccl-tests 2.13 output and built from public figures:
  time(S) = min over NCCL protocols (LL, LL128, Simple) of  alpha_p + busbytes(S) / B_p  (x jitter)
with busbytes = S x busbw factor (allreduce 2(n-1)/n, alltoall (n-1)/n, sendrecv 1) and
  H100 8-GPU all_reduce (ring, NVLS off): Simple ~362 GB/s busbw   (NVLink 450 GB/s/dir x ~0.8)
  H800 8-GPU alltoall / sendrecv:          Simple ~155 / ~150 GB/s  (NVLink 200 GB/s/dir, ~160 achievable)
  H800 2x8 alltoall over 8x400G RoCE:      Simple ~45 GB/s busbw    (400 Gb/s = 50 GB/s x ~0.9)
Deterministic (fixed seed). Usage: python3 make_samples.py  (writes the *.log files next to it).
"""
import os, random

HERE = os.path.dirname(os.path.abspath(__file__))
FACTOR = {"all_reduce": lambda n: 2.0 * (n - 1) / n, "alltoall": lambda n: (n - 1) / n,
          "sendrecv": lambda n: 1.0}
REDOP = {"all_reduce": "sum", "alltoall": "none", "sendrecv": "sum"}

def fmt_time(t):
    return "%8.2f" % t if t < 10000 else "%8.1f" % t if t < 100000 else "%8.0f" % t

def write_log(name, op, hosts, gpus_per_node, device, busids, nccl, protos, sizes, seed,
              info_lines=()):
    rnd = random.Random(seed)
    n = len(hosts) * gpus_per_node
    f = FACTOR[op](n)
    out = []
    out.append("# nccl-tests version 2.13.10 nccl-headers=%d nccl-library=%d" % (nccl, nccl))
    out.append("# Collective test starting: %s_perf" % op)
    multi = len(hosts) > 1
    ngpus = 1 if multi else gpus_per_node
    out.append("# nThread 1 nGpus %d minBytes %d maxBytes %d step: 2(factor) warmup iters: 5 "
               "iters: 20 agg iters: 1 validation: 1 graph: 0" % (ngpus, sizes[0], sizes[-1]))
    out.append("#")
    out.append("# Using devices")
    pid0 = 201700 + seed
    for r in range(n):
        h = hosts[r // gpus_per_node]
        l = r % gpus_per_node
        pid = pid0 + (r if multi else 0)
        out.append("#  Rank %2d Group  0 Pid %6d on %10s device %2d [%s] %s" % (r, pid, h, l, busids[l], device))
    out.extend(info_lines)
    out.append("#")
    out.append("#                                                              out-of-place                       in-place          ")
    out.append("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong")
    out.append("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ")
    busbws = []
    for S in sizes:
        cols = []
        for placement in range(2):
            bus = S * f
            t = min(a + bus / (B * 1e3) for a, B in protos)   # us; B in GB/s
            t *= 1.0 + rnd.uniform(-0.015, 0.015) + (0.004 if placement else 0.0)
            ts = fmt_time(t).strip()
            tp = float(ts)
            algbw = S / tp / 1e3
            busbw = algbw * f
            cols.append("%s  %6.2f  %6.2f  %5d" % (fmt_time(tp), algbw, busbw, 0))
            busbws.append(float("%.2f" % busbw))
        count = S // 4
        out.append("%12d  %12d     float  %6s  %6d  %s  %s" % (S, count, REDOP[op], -1, cols[0], cols[1]))
    out.append("# Out of bounds values : 0 OK")
    out.append("# Avg bus bandwidth    : %.4f " % (sum(busbws) / len(busbws)))
    out.append("#")
    out.append("# Collective test concluded: %s_perf" % op)
    out.append("")
    with open(os.path.join(HERE, name), "w") as fh:
        fh.write("\n".join(out))

BUS = ["0x18", "0x2a", "0x3a", "0x5d", "0x9a", "0xab", "0xba", "0xdb"]
pow2 = lambda lo, hi: [1 << i for i in range(lo, hi + 1)]

# (alpha_us, busbw GB/s) per protocol: LL, LL128, Simple
write_log("h100-8gpu-all_reduce_perf.log", "all_reduce", ["dgx-h100-07"], 8, "NVIDIA H100 80GB HBM3",
          BUS, 22105, [(11.0, 30.0), (16.5, 240.0), (29.0, 362.0)], pow2(3, 33), 1)
write_log("h800-8gpu-alltoall_perf.log", "alltoall", ["h800-a031"], 8, "NVIDIA H800",
          BUS, 21805, [(19.0, 14.0), (24.0, 105.0), (36.0, 155.0)], pow2(10, 32), 2)
write_log("h800-8gpu-sendrecv_perf.log", "sendrecv", ["h800-a031"], 8, "NVIDIA H800",
          BUS, 21805, [(7.5, 12.0), (9.5, 100.0), (14.0, 150.0)], pow2(3, 32), 3)
info = ["h800-a031:%d:%d [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [2]mlx5_2:1/RoCE "
        "[3]mlx5_3:1/RoCE [4]mlx5_4:1/RoCE [5]mlx5_5:1/RoCE [6]mlx5_6:1/RoCE [7]mlx5_7:1/RoCE ; OOB bond0:10.20.3.31<0>"
        % (201704, 201704),
        "h800-a031:%d:%d [0] NCCL INFO comm 0x55d1c2a0 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0"
        % (201704, 201704)]
write_log("h800-16gpu-2node-alltoall_perf.log", "alltoall", ["h800-a031", "h800-a032"], 8, "NVIDIA H800",
          BUS, 21805, [(42.0, 4.0), (55.0, 28.0), (80.0, 45.5)], pow2(10, 32), 4, info)
