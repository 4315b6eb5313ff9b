#!/usr/bin/env python3
"""make_traces.py — writes the hand-made step traces the diagnoser's tests read (tests/test_diagnose.c).

Each trace follows the step-trace contract (sim/exec/trace.h, sim/report/diagnose.h: otherData
"moesim-step-trace/1"). The numbers are chosen by hand so that the expected verdicts can be worked
out on paper; the expected values live in the test, next to the hand computation. Rerun after an
edit:  python3 tests/data/traces/make_traces.py
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def events(rows):
    """rows: (name, pid, ts_us, dur_us) -> complete events, plus one metadata event the parser skips."""
    ev = [{"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "rank 0"}}]
    for name, pid, ts, dur in rows:
        ev.append({"name": name, "cat": "F", "ph": "X", "ts": ts, "dur": dur, "pid": pid, "tid": 0,
                   "args": {"mb": 0, "layer": 0}})
    return ev


def write(name, other, rows=()):
    doc = {"traceEvents": events(rows), "displayTimeUnit": "ms", "otherData": other}
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def layout(ranks, gpn, tp, pp, ep, dp, source="simulated"):
    assert tp * pp * ep * dp == ranks
    return {"format": "moesim-step-trace/1", "source": source, "ranks": ranks, "gpus_per_node": gpn,
            "tp": tp, "pp": pp, "ep": ep, "dp": dp}


# Seed 000 §4.2's mock: 4 nodes x 8 GPUs, step times 2200 + (i % 5) * 15 ms, rank 18 (node 2, GPU 2)
# at 3150 ms; expert hits [950, 1020, 890, 3200, 450, 910, 880, 520]. The seed's per-rank "step times"
# are busy times here: in a synchronous job every rank's step ends with the slowest one (3.2 s).
busy = [2.2 + (i % 5) * 0.015 for i in range(32)]
busy[18] = 3.15
o = layout(32, 8, 1, 1, 8, 4)
o.update({"step_time_s": 3.2, "rank_gpu": list(range(32)), "rank_step_s": [3.2] * 32,
          "rank_compute_s": busy, "expert_tokens": [950, 1020, 890, 3200, 450, 910, 880, 520], "hang": None})
write("seed-mock-32.json", o, [("attn_fwd", 18, 0, 1500), ("expert_fwd", 18, 1500, 900)])

# Healthy: 4 nodes x 8, pp 8 x ep 4. Stages 0-6 compute 1.0 s +-0.8% jitter; the last stage holds the
# output head + loss and computes 1.3 s on every rank: legitimate, not a straggler. Pooled over all
# ranks, that stage would be flagged (1.3 / 1.0375 = 1.253 > 1.25); within its stage it is not.
busy = []
for r in range(32):
    stage = r // 4
    base = 1.3 if stage == 7 else 1.0
    busy.append(round(base * (1 + 0.004 * ((r * 7) % 5 - 2)), 6))
o = layout(32, 8, 1, 8, 4, 1)
o.update({"step_time_s": 1.45, "rank_gpu": list(range(32)), "rank_step_s": [1.45] * 32, "rank_compute_s": busy,
          "expert_tokens": [1000, 1080, 950, 1020, 990, 1100, 920, 1010, 1050, 970, 1000, 940, 1060, 985, 1015, 910],
          "hang": None})
write("healthy-pp8.json", o, [("attn_fwd", 0, 0, 400)])

# Hang: 2 nodes x 8, pp 2 x ep 8. Rank 5 stopped in attn_fwd of layer 0, micro-batch 1 and never
# reached the EP all-to-all; the other 7 ranks of EP group 0 wait in a2a_dispatch, stage 1 (8 ranks)
# waits on the pipeline receive. The scheduler placed ranks in reverse (GPU = 15 - rank), so rank 5 is
# GPU 10 = node 1, GPU 2: a tool that assumed GPU = rank would name the wrong machine. Labels as the
# simulator writes them (sim/exec/trace.h: op_kind_label, "COMPUTE <kernel>").
o = layout(16, 8, 1, 2, 8, 1, "live")
o.update({"rank_gpu": [15 - r for r in range(16)], "rank_step_s": [0.9] * 16,
          "rank_compute_s": [0.30 if r != 5 else 0.21 for r in range(16)],
          "expert_tokens": [1000, 990, 1010, 1005, 995, 1000, 1002, 998],
          "hang": {"op": "A2A_DISPATCH", "group_kind": "EP", "group": 0, "layer": 0, "micro_batch": 1,
                   "waiting": [0, 1, 2, 3, 4, 6, 7], "missing": [5],
                   "missing_last_op": [{"rank": 5, "op": "COMPUTE attn_fwd", "layer": 0, "micro_batch": 1}],
                   "blocked_elsewhere": 8}})
write("hang-ep.json", o, [("attn_fwd", 5, 0, 210)])

# Compare: known durations. attn_fwd predicted 100,100,100 (mean 100) vs measured 110,120,130
# (mean 120): -16.67%; a2a_dispatch 50,70 (60) vs 40,40 (40): +50%; expert_fwd only predicted,
# optimizer only measured; step 1.0 s vs 1.25 s: -20%.
o = layout(2, 8, 1, 1, 2, 1, "simulated")
o.update({"step_time_s": 1.0, "rank_gpu": [0, 1], "rank_step_s": [1.0, 1.0], "rank_compute_s": [0.5, 0.5],
          "hang": None})
write("compare-predicted.json", o, [("attn_fwd", 0, 0, 100), ("attn_fwd", 1, 0, 100), ("attn_fwd", 0, 100, 100),
                                    ("a2a_dispatch", 0, 200, 50), ("a2a_dispatch", 1, 200, 70),
                                    ("expert_fwd", 0, 300, 200)])
o = layout(2, 8, 1, 1, 2, 1, "live")
o.update({"step_time_s": 1.25, "rank_gpu": [0, 1], "rank_step_s": [1.25, 1.25], "rank_compute_s": [0.6, 0.6],
          "hang": None})
write("compare-measured.json", o, [("attn_fwd", 0, 0, 110), ("attn_fwd", 1, 0, 120), ("attn_fwd", 0, 110, 130),
                                   ("a2a_dispatch", 0, 240, 40), ("a2a_dispatch", 1, 240, 40),
                                   ("optimizer", 0, 300, 500)])

# Bad: truncated JSON; and a rank_gpu entry that is not a GPU index.
with open(os.path.join(HERE, "bad-truncated.json"), "w") as f:
    f.write('{\n "traceEvents": [],\n "otherData": {"format": "moesim-step-trace/1",\n  "ranks": 4,\n')
o = layout(4, 8, 1, 1, 4, 1)
o.update({"step_time_s": 1.0, "rank_gpu": [0, 1, -2, 3], "rank_compute_s": [1, 1, 1, 1], "hang": None})
write("bad-rank-gpu.json", o)
