#!/usr/bin/env bash
# e2e_simlive.sh — live mode for real in CI: `mpirun -np 4 --oversubscribe simlive` on tiny MoE
# scenarios (tests/data/live/), CPU reference kernels + Open MPI.
#
# What it checks, against what truth:
#   1. pp2 x ep2 (1F1B), pp1 x ep4, pp1 x ep2 x dp2 (ZeRO-1 reduce-scatter/all-gather) and pp2 x ep2
#      DualPipe run to completion (exit 0) and the MoE layer output of every (layer, micro-batch) on
#      every rank is BITWISE equal to the kernels' dense single-process reference moe_layer_ref_cpu,
#      and the hidden state the pipeline delivers at the head equals a single-process forward through
#      every layer (the truth: kernels/moe_layer_ref_cpu.c, an independent dot-product
#      implementation; simlive exits 1 on any mismatch). trace.json has the simulator's format
#      (otherData.source "live", simulator event names) and results.json the step keys.
#   2. An injected stall (faults.stalls: GPU 2 stops before layer 2, micro-batch 1) makes the run exit 1
#      within the watchdog timeout (--watchdog-s 3), every rank prints where it is, and the report and
#      watchdog.json name rank 2 / GPU 2 as the culprit (the truth: the scenario's stall). The same
#      with a rank that does not even answer (MOESIM_LIVE_HARD_STALL=1).
#   3. A slow GPU (faults.slow_gpus x4) makes its rank's measured busy time more than twice its EP
#      peer's (the truth: the same stage's work, 4x as long).
#   4. Bad input exits 2: an invalid scenario, a live-only restriction (tp 2), a stall at a layer the
#      GPU never runs, a degraded link (faults.links cannot be made live), a world size that differs
#      from the scenario's GPU count, bad options.
set -u
BIN=${MOESIM_BIN:?MOESIM_BIN must point at the tools folder of the build}
SIMLIVE="$BIN/simlive"
if [ ! -x "$SIMLIVE" ]; then
    echo "e2e_simlive: $SIMLIVE not built (MPI not found at configure time): nothing to test"
    exit 0
fi
command -v mpirun >/dev/null || { echo "FAIL: mpirun not found"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# In the sanitized build: Open MPI's own start-up allocations (libmpi and its dlopen'ed MCA
# components, which LeakSanitizer cannot even name) are reported as leaks at exit. Leak checking of
# moesim's code is done by the cmocka tests; here ASan still checks every memory access.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# containers: shared memory without cross-memory attach, no network transports
MPIRUN=(mpirun --oversubscribe --mca btl self,vader --mca btl_vader_single_copy_mechanism none)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
ok() { echo "ok: $*"; }

# run NAME NP TIMEOUT ARGS... -> sets RC, output in $TMP/NAME.log. The limits only end a hang: they
# are several times what a sanitized build takes on a loaded 2-core machine (a healthy run: ~5 s).
run() {
    local name=$1 np=$2 limit=$3
    shift 3
    timeout "$limit" "${MPIRUN[@]}" -np "$np" "$SIMLIVE" "$@" >"$TMP/$name.log" 2>&1
    RC=$?
}
expect_rc() {   # NAME WANT
    if [ "$RC" -ne "$2" ]; then
        fail "$1: exit $RC, expected $2"; sed 's/^/    /' "$TMP/$1.log" | head -40
        return 1
    fi
    return 0
}

# ---- 1. healthy runs: bitwise MoE output, outputs in the simulator's formats ----------------------
for sc in tiny-4 tiny-4-ep4 tiny-4-dp2 tiny-4-dualpipe; do
    run "$sc" 4 240 "tests/data/live/$sc.json" --out "$TMP/$sc" --watchdog-s 20
    expect_rc "$sc" 0 || continue
    grep -q "MoE output check: bitwise equal" "$TMP/$sc.log" || fail "$sc: MoE output not reported bitwise equal"
    grep -q "model forward check: bitwise equal" "$TMP/$sc.log" || fail "$sc: model forward not reported bitwise equal"
    for f in trace.json results.json results.csv; do
        [ -s "$TMP/$sc/$f" ] || fail "$sc: $f missing"
    done
    tr=$TMP/$sc/trace.json
    grep -q '"source":"live"' "$tr" || fail "$sc: trace otherData.source is not \"live\""
    grep -q '"format":"moesim-step-trace/1"' "$tr" || fail "$sc: trace format tag missing"
    for ev in a2a_dispatch a2a_combine expert_fwd router_fwd attn_fwd optimizer; do
        grep -q "\"name\":\"$ev\"" "$tr" || fail "$sc: no '$ev' event in the trace"
    done
    grep -q '"live_bytes"' "$tr" || fail "$sc: all-to-all events lack live_bytes"
    for k in step_time_s tokens_per_s_per_gpu compute_s exposed_comm_s bubble_s optimizer_s moe_check; do
        grep -q "\"$k\"" "$TMP/$sc/results.json" || fail "$sc: results.json lacks $k"
    done
    grep -q '"result":[[:space:]]*"bitwise equal"' "$TMP/$sc/results.json" || fail "$sc: results.json moe_check is not bitwise equal"
    ok "$sc"
done
# the pipeline scenarios really moved activations between stages
grep -q '"name":"send"' "$TMP/tiny-4/trace.json" || fail "tiny-4: no pipeline send in the trace"
grep -q '"name":"reduce_scatter"' "$TMP/tiny-4-dp2/trace.json" || fail "tiny-4-dp2: no reduce_scatter in the trace"

# ---- 2. watchdog: the injected stall is found and named --------------------------------------------
run stall 4 120 tests/data/live/tiny-4-stall.json --out "$TMP/stall" --watchdog-s 3
if expect_rc stall 1; then
    grep -q "culprit rank 2 (GPU 2" "$TMP/stall.log" || fail "stall: report does not name rank 2 / GPU 2"
    n=$(grep -c "^simlive\[[0-3]\]: watchdog: rank" "$TMP/stall.log")
    [ "$n" -eq 4 ] || fail "stall: $n of 4 ranks printed where they are"
    grep -q "STALLED before op [0-9]* attn_fwd (F, layer 2, mb 1)" "$TMP/stall.log" || fail "stall: the stalled rank does not say where it stopped"
    grep -q "waiting .* in op [0-9]* a2a_dispatch (F, layer 2, mb 1)" "$TMP/stall.log" || fail "stall: no rank waits in the layer-2 dispatch"
    grep -q '"culprit":[[:space:]]*2' "$TMP/stall/watchdog.json" 2>/dev/null || fail "stall: watchdog.json does not name rank 2"
    # the live hang as a step trace: simdiag reads it like a simulated one (exit 3: problem found)
    "$BIN/simdiag" check "$TMP/stall" >"$TMP/stall-diag.log" 2>&1
    drc=$?
    [ "$drc" -eq 3 ] || { fail "stall: simdiag check exited $drc on the live hang trace (expected 3)"; sed 's/^/    /' "$TMP/stall-diag.log" | head -20; }
    grep -qi "rank 2" "$TMP/stall-diag.log" || fail "stall: simdiag does not name rank 2"
    ok "stall found (rank 2)"
fi
# a silent culprit: the stalled rank sleeps without answering (mpirun -x forwards the variable)
MOESIM_LIVE_HARD_STALL=1 timeout 120 "${MPIRUN[@]}" -x MOESIM_LIVE_HARD_STALL -np 4 "$SIMLIVE" \
    tests/data/live/tiny-4-stall.json --out "$TMP/hard" --watchdog-s 2 >"$TMP/hard.log" 2>&1
RC=$?
if expect_rc hard 1; then
    grep -q "rank 2 (stage 1, ep 0, replica 0, GPU 2): did not answer" "$TMP/hard.log" || fail "hard stall: rank 2 not reported as silent"
    grep -q "culprit rank 2 (GPU 2" "$TMP/hard.log" || fail "hard stall: report does not name rank 2"
    ok "silent rank found (rank 2)"
fi

# ---- 2b. a slow GPU (faults.slow_gpus: GPU 1 at x4) holds its compute stream 4x as long as its
# kernels took: its measured compute time is well above its EP peer's (rank 0, the same stage's work)
run slow 4 240 tests/data/live/tiny-4-slow.json --out "$TMP/slow" --watchdog-s 20
if expect_rc slow 0; then
    # compute_s of ranks 0 and 1: the first two after "ranks_breakdown" in results.json
    read -r b0 b1 < <(awk '/"ranks_breakdown"/ {on = 1} on && /"compute_s"/ {gsub(/[^0-9.eE+-]/, "", $2); v[n++] = $2}
                           END {print v[0], v[1]}' "$TMP/slow/results.json")
    echo "    compute rank 0 ${b0:-?} s, rank 1 ${b1:-?} s"
    awk -v a="${b0:-0}" -v b="${b1:-0}" 'BEGIN {exit !(a > 0 && b > 2 * a)}' \
        && ok "slow GPU x4: rank 1 computes > 2x as long as rank 0" || fail "slow GPU: rank 1 not slower (see results.json)"
fi

# ---- 3. bad input: exit 2 ----------------------------------------------------------------------------
run badscn 1 120 tests/data/bad/layout_product.json --out "$TMP/x"
expect_rc badscn 2 && grep -q "layout" "$TMP/badscn.log" && ok "bad scenario -> 2"
run tp2 4 120 tests/data/live/bad-tp2.json --out "$TMP/x"
expect_rc tp2 2 && { grep -q "layout.tp" "$TMP/tp2.log" || fail "tp2: message lacks layout.tp"; } && ok "tp 2 -> 2"
run mtp 4 120 tests/data/live/bad-mtp.json --out "$TMP/x"
expect_rc mtp 2 && { grep -q "model.mtp_layers" "$TMP/mtp.log" || fail "mtp: message lacks model.mtp_layers"; } && ok "MTP -> 2"
run cp 4 120 tests/data/live/bad-cp.json --out "$TMP/x"
expect_rc cp 2 && { grep -q "layout.cp" "$TMP/cp.log" || fail "cp: message lacks layout.cp"; } && ok "CP -> 2"
run stalllayer 4 120 tests/data/live/bad-stall-layer.json --out "$TMP/x"
expect_rc stalllayer 2 && { grep -q "faults.stalls\[0\].layer" "$TMP/stalllayer.log" || fail "stall layer: message lacks the JSON path"; } && ok "stall at a foreign layer -> 2"
run badlink 4 120 tests/data/live/bad-link.json --out "$TMP/x"
expect_rc badlink 2 && { grep -q "faults.links: not supported by simlive" "$TMP/badlink.log" || fail "bad link: message lacks faults.links"; } && ok "degraded link (cannot be made live) -> 2"
run np2 2 120 tests/data/live/tiny-4.json --out "$TMP/x"
expect_rc np2 2 && { grep -q "got 4 GPUs.*this run has 2 (mpirun -np 2)" "$TMP/np2.log" || fail "np2: message does not name both numbers"; } && ok "wrong -np -> 2"
run steps0 4 120 tests/data/live/tiny-4.json --steps 0
expect_rc steps0 2 && ok "--steps 0 -> 2"
"$SIMLIVE" --help >"$TMP/help.log" 2>&1 && grep -q "examples:" "$TMP/help.log" && ok "--help" || fail "--help"

if [ "$FAILS" -ne 0 ]; then echo "e2e_simlive: $FAILS failure(s)"; exit 1; fi
echo "e2e_simlive: all passed"
