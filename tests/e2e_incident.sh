#!/usr/bin/env bash
# e2e_incident.sh — scenarios/incident-cascading-hang.json against seed 000 section 0.2, incident 1:
# "normal step 2.8 s, spiking to 35 s every few dozen steps, then the whole cluster hangs in one
# all_to_all"; one expert (node 12, GPU 3) gets over 60% of the tokens; PFC back-pressure spreads up
# the switch tree. The truths are the document's figures, with the tolerance the README states for
# this scenario (healthy 2.5-4 s, the spike 25-45 s and at least 5x the healthy step), and what the
# mechanism must show: the hang times out at the 600 s watchdog and the run never gets past it,
# simdiag names node 12 GPU 3, its NIC as the incast and the paused links. The run's own table says
# the step hung and where (rank 99 never arrived at layer 10's dispatch, micro-batch 1), prints no step
# time, MFU or tokens/s for it, and points to simdiag.
set -u
BIN=${MOESIM_BIN:?MOESIM_BIN must point at the tools folder of the build}
SRC=${MOESIM_SOURCE_DIR:-$(pwd)}
TMP=$(mktemp -d /tmp/moesim-incident-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

"$BIN/simrun" run "$SRC/scenarios/incident-cascading-hang.json" --out "$TMP/r" -j 2 > "$TMP/log" 2>&1
rc=$?
[ $rc -eq 0 ] || { fail "simrun exited $rc"; cat "$TMP/log"; }
csv="$TMP/r/results.csv"
# column by header name, row by point id (points 0 healthy, 1 hot expert, 2 hot expert + stalled GPU)
. "$SRC/tests/csv_col.sh"
col() { csv_col "$csv" "$1" "$2"; }
within() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'; }
healthy=$(col step.step_time_s 0); spike=$(col step.step_time_s 1); hang=$(col step.step_time_s 2)
echo "healthy $healthy s, spike $spike s, hang fires at $hang s"
within "$healthy" 2.5 4 || fail "healthy step $healthy s, the document says 2.8 s"
within "$spike" 25 45 || fail "hot-expert step $spike s, the document says 35 s"
awk -v a="$spike" -v b="$healthy" 'BEGIN { exit !(a >= 5 * b) }' || fail "the spike is not 5x the healthy step"
[ "$(col step.timed_out 2)" = "true" ] || [ "$(col step.timed_out 2)" = "1" ] || fail "the hung step did not time out"
within "$hang" 600 700 || fail "the watchdog fired at $hang s (timeout 600 s after the waiters arrived)"
[ "$(col run.completed_fraction_pct 2)" = "0" ] || fail "a run that always hangs completed"
within "$(col run.collective_timeouts_mean 2)" 1000 3000 || fail "timeouts over 60 days: $(col run.collective_timeouts_mean 2)"
[ "$(col run.completed_fraction_pct 0)" = "100" ] || fail "the healthy run did not complete"

# what the run prints: the hung point's row says so, with no step time, MFU or tokens/s, and no
# plan-vs-step comparison; the warning and the line under the table name the collective, layer,
# micro-batch and the rank that never arrived, and how to triage it
row=$(grep -E '^ +[0-9]+ +2  ' "$TMP/log")
set -f; set -- $row; set +f   # the sweep values hold brackets: no globbing
# cells: rank, point, the two sweep values, fits, plan_s, step_s, mfu, tok/s/gpu, drop%, band, ...
[ "$7" = "hung" ] && [ "$8" = "-" ] && [ "$9" = "-" ] && [ "${11}" = "-" ] ||
    { fail "the hung point's row is not 'hung' with '-' for MFU, tok/s and band: $row"; }
grep -q "point 2 .* step: the plan's step" "$TMP/log" && fail "a plan-vs-step warning compares the plan with a step that never ended"
for want in "step: the step hung: rank 99 (node 12, GPU 3) never arrived at A2A_DISPATCH of EP group 0 (layer 10, micro-batch 1)" \
            "point 2: the step hung: rank 99 (node 12, GPU 3)" "faults.collective_timeout_s = 600 s" \
            "simdiag check $TMP/r"; do
    grep -qF -- "$want" "$TMP/log" || fail "the run does not say '$want'"
done

"$BIN/simdiag" check "$TMP/r/traces/trace-000002.json" > "$TMP/diag.txt"; rc=$?
[ $rc -eq 3 ] || fail "simdiag exited $rc on the hang (expected 3)"
for want in "the hottest receiver is node 12 GPU 3 (global GPU 99)" "incast at nic-99_DOWN" "links paused" \
            "held forever" "NCCL timeout" "missing: rank 99 (node 12, GPU 3"; do
    grep -qF -- "$want" "$TMP/diag.txt" || fail "simdiag does not say '$want'"
done
"$BIN/simdiag" check "$TMP/r/traces/trace-000001.json" > "$TMP/diag1.txt"
grep -qF "node 12 GPU 3" "$TMP/diag1.txt" || fail "simdiag does not name the hot GPU of the spike"
grep -q "up-r3-l[0-9]*_UP\|up-r3-l[0-9]*_DOWN" "$TMP/diag1.txt" || fail "simdiag names no paused uplink of rail 3"

[ $FAILS -eq 0 ] && echo "incident: all checks passed"
exit $((FAILS > 0))
