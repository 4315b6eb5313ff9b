#!/usr/bin/env bash
# e2e_incident_steps.sh — seed 000 section 0.2, incident 1, as a sequence of steps
# (scenarios/incident-hot-expert-steps.json), and simdiag's reading of a run's step series.
#
# 1. simdiag steps on a small multi-step run (tests/data/scenarios/small-moe.json, 10 steps) whose
#    expert 3 turns hot at step 4 (routing.drift.hot_onset_step, no rise): it names step 4, expert 3
#    and EP rank 1 (16 experts over EP 8 in contiguous blocks of 2: expert 3 lives on EP index 1),
#    exits 3, and reads the series from results.db's step_series table (10 rows); the same run
#    without a hot expert exits 0.
# 2. The incident (1,024 GPUs, Qwen3-235B, the hot expert growing linearly from step 8 to 90% of the
#    tokens at step 20): the undefended point times out at or after the onset, its run never
#    completes (it fails at the timed-out step and restarts from its checkpoint), and simdiag names
#    the first step over 25% of the tokens, which the law's rise gives in closed form (the first t
#    with 0.9 (t - 7) / 13 > 0.25: t = 11), expert 99 and EP rank 99 (128 experts on EP 128). The
#    defended points (bias balancing, EPLB, capacity with drop) time out later or never, and complete.
set -u
BIN=${MOESIM_BIN:?MOESIM_BIN must point at the tools folder of the build}
SRC=${MOESIM_SOURCE_DIR:-$(pwd)}
TMP=$(mktemp -d /tmp/moesim-incident-steps-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
. "$SRC/tests/csv_col.sh"

# ---- 1. simdiag steps on a small run with a known onset -----------------------------------------
small() {   # $1: the drift object, $2: folder
    sed "s|\"routing\": { \"node_limit\": 1, \"capacity_factor\": 1.25, \"drop\": true }|\"routing\": { \"node_limit\": 1, \"capacity_factor\": 1.25, \"hot_expert\": 3, \"drop\": false, \"steps\": 10, \"drift\": $1 }|" \
        "$SRC/tests/data/scenarios/small-moe.json" > "$TMP/$2.json"
    grep -q '"steps": 10' "$TMP/$2.json" || fail "could not write $2.json"
    "$BIN/simrun" run "$TMP/$2.json" --levels step --out "$TMP/$2" -q -j 1 > "$TMP/$2.log" 2>&1 ||
        { fail "simrun $2 exited $?"; cat "$TMP/$2.log"; }
}
small '{ "hot_onset_step": 4, "hot_peak_share": 0.6, "hot_decay_steps": 20 }' hot
small '{ "walk_sigma": 0.01 }' quiet
rows=$(sqlite3 "$TMP/hot/results.db" 'SELECT count(*) FROM step_series WHERE point_id = 0' 2>&1)
[ "$rows" = 10 ] || fail "step_series holds $rows rows for the 10-step point"
"$BIN/simdiag" steps "$TMP/hot" --out "$TMP/hot-diag.json" > "$TMP/hot-diag.txt"; rc=$?
[ $rc -eq 3 ] || { fail "simdiag steps exited $rc on a hot expert (expected 3)"; cat "$TMP/hot-diag.txt"; }
grep -qF "hot expert: expert 3 passed 25% of the tokens at step 4 " "$TMP/hot-diag.txt" &&
    grep -qF "busiest EP rank 1)" "$TMP/hot-diag.txt" ||
    { fail "simdiag does not name step 4, expert 3, EP rank 1"; cat "$TMP/hot-diag.txt"; }
python3 - "$TMP/hot-diag.json" <<'PY' || fail "the JSON findings do not name step 4, expert 3, EP rank 1"
import json, sys
o = json.load(open(sys.argv[1]))["points"][0]["hot_expert_onset"]
sys.exit(0 if (o["step"], o["expert"], o["busiest_ep_rank"]) == (4, 3, 1) else 1)
PY
"$BIN/simdiag" steps "$TMP/quiet" > "$TMP/quiet-diag.txt"; rc=$?
[ $rc -eq 0 ] || { fail "simdiag steps exited $rc without a hot expert (expected 0)"; cat "$TMP/quiet-diag.txt"; }
grep -q "no expert passed 25%" "$TMP/quiet-diag.txt" || fail "simdiag does not say that no expert passed 25%"
"$BIN/simdiag" steps "$TMP/hot" --point 7 > /dev/null 2> "$TMP/nopoint.txt"; rc=$?
[ $rc -eq 2 ] && grep -q "point 7 has no step series" "$TMP/nopoint.txt" || fail "--point 7 of a 1-point run: exit $rc"

# ---- 2. the incident as a sequence, with its defences -------------------------------------------
"$BIN/simrun" run "$SRC/scenarios/incident-hot-expert-steps.json" --out "$TMP/r" -j 2 > "$TMP/log" 2>&1 ||
    { fail "simrun exited $?"; cat "$TMP/log"; }
db="$TMP/r/results.db"; csv="$TMP/r/results.csv"
onset=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["routing"]["drift"]["hot_onset_step"])' \
        "$SRC/scenarios/incident-hot-expert-steps.json")
first_to() { sqlite3 "$db" "SELECT coalesce(min(step), -1) FROM step_series WHERE point_id = $1 AND timed_out"; }
t0=$(first_to 0)
echo "undefended: first timed-out step $t0 (onset $onset); defended: $(first_to 1) $(first_to 2) $(first_to 3)"
[ "$t0" -ge "$onset" ] || fail "the undefended point's first timed-out step is $t0, expected one at or after the onset $onset"
[ "$(csv_col "$csv" run.completed_fraction_pct 0)" = 0 ] || fail "the undefended run completed although a step of its cycle times out"
awk -v v="$(csv_col "$csv" run.collective_timeouts_mean 0)" 'BEGIN { exit !(v > 0) }' || fail "the undefended run counts no collective timeouts"
# a timed-out step counts as slow: the spike's longest slow run holds the first timed-out step
f=$(csv_col "$csv" step.steps.slow_run_first_step 0); l=$(csv_col "$csv" step.steps.slow_run_steps 0)
[ "$f" -ge 0 ] && [ "$f" -le "$t0" ] && [ "$t0" -lt $((f + l)) ] ||
    fail "the longest slow run ($l steps from $f) does not hold the first timed-out step $t0"
for p in 1 2 3; do
    t=$(first_to $p)
    [ "$t" -eq -1 ] || [ "$t" -gt "$t0" ] || fail "defended point $p times out at step $t, not later than the undefended $t0"
    [ "$(csv_col "$csv" run.completed_fraction_pct $p)" = 100 ] || fail "defended point $p's run did not complete"
done
grep -qF "simdiag steps $TMP/r --point 0" "$TMP/log" || fail "the run does not point to simdiag steps for point 0"
"$BIN/simdiag" steps "$TMP/r" --point 0 > "$TMP/diag0.txt"; rc=$?
[ $rc -eq 3 ] || fail "simdiag steps exited $rc on the incident (expected 3)"
want=$(awk 'BEGIN { for (t = 8; t < 20; t++) if (0.9 * (t - 7) / 13 > 0.25) { print t; exit } }')
for w in "expert 99 passed 25% of the tokens at step $want " "busiest EP rank 99)" "timed out: first at step $t0 "; do
    grep -qF -- "$w" "$TMP/diag0.txt" || { fail "simdiag does not say '$w'"; cat "$TMP/diag0.txt"; }
done
# the plot marks the timed-out steps: column 5 of the undefended block holds a time exactly there
awk '/^# point 0:/ { b = 1; next } /^# point/ { b = 0 } b && NF == 5 && $5 != "NaN" { print $1 }' "$TMP/r/plots/step_series.dat" |
    head -1 | grep -qx "$t0" || fail "plots/step_series.dat does not mark step $t0 as timed out"

[ $FAILS -eq 0 ] && echo "incident-steps: all checks passed"
exit $((FAILS > 0))
