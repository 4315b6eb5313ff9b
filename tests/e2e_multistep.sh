#!/usr/bin/env bash
# e2e_multistep.sh — routing.steps through the command line: a drifting 8-step run of
# tests/data/scenarios/small-moe.json (a hot expert appearing at step 2, bias balancing, a walk, two
# redundant expert slots) is byte-identical across two runs with --reproducible, its results.json /
# results.csv / results.db carry the step.steps keys and series, the table prints p50_s / p95_s /
# max_s, the p50/p95/max agree with the series (GSL's interpolation, recomputed here with awk), the
# run level replays the series in order and says so (run.step_sequence "mean" takes its mean), the
# table's headline (mean_s, mfu, tok/s/gpu) is over all the steps (step.steps.tflops_per_gpu solved
# from step 0 and the series by hand), output.plots draws the series
# (plots/step_series.dat holds it), and bad drift fields exit 2 naming the file, path and value.
set -u
BIN=${MOESIM_BIN:?MOESIM_BIN must point at the tools folder of the build}
SRC=${MOESIM_SOURCE_DIR:-$(pwd)}
TMP=$(mktemp -d /tmp/moesim-multistep-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

# the small scenario with the drift fields added (sed on its one-line routing object)
sed 's|"routing": { "node_limit": 1, "capacity_factor": 1.25, "drop": true }|"routing": { "node_limit": 1, "capacity_factor": 1.25, "hot_expert": 3, "drop": false, "steps": 8, "redundant_experts": 2, "drift": { "hot_onset_step": 2, "hot_peak_share": 0.5, "hot_decay_steps": 3, "walk_sigma": 0.05, "bias_update_speed": 0.05 } }|' \
    "$SRC/tests/data/scenarios/small-moe.json" > "$TMP/drift.json"
grep -q '"steps": 8' "$TMP/drift.json" || fail "could not write the drifting scenario"

for i in 1 2; do
    "$BIN/simrun" run "$TMP/drift.json" --levels step,run --reproducible --out "$TMP/r$i" -j 1 > "$TMP/log$i" 2>&1
    rc=$?
    [ $rc -eq 0 ] || { fail "run $i: simrun exited $rc"; cat "$TMP/log$i"; }
done
sed '/^\t"version":/d' "$TMP/r1/results.json" > "$TMP/a.json"
sed '/^\t"version":/d' "$TMP/r2/results.json" > "$TMP/b.json"
cmp -s "$TMP/a.json" "$TMP/b.json" || fail "two runs of the same scenario and seed differ"
cmp -s "$TMP/r1/results.csv" "$TMP/r2/results.csv" || fail "the CSVs of two runs differ"
grep -q "p50_s" "$TMP/log1" && grep -q "p95_s" "$TMP/log1" && grep -q "max_s" "$TMP/log1" ||
    { fail "the table lacks p50_s / p95_s / max_s"; cat "$TMP/log1"; }

# the series and its distribution, from results.csv (arrays are ';'-joined)
. "$SRC/tests/csv_col.sh"
col() { csv_col "$TMP/r1/results.csv" "$1" 0; }
series=$(col step.steps.series.step_time_s)
[ -n "$series" ] || fail "results.csv has no step.steps.series.step_time_s"
n=$(echo "$series" | tr ';' '\n' | grep -c .)
[ "$n" = 8 ] || fail "the series has $n steps, expected 8"
# GSL: the quantile f of the sorted series is x[i] + (x[i+1] - x[i]) (h - i), h = (n - 1) f, i = floor(h)
q() { echo "$series" | tr ';' '\n' | sort -g | awk -v f="$1" '{ x[NR - 1] = $1 } END {
        h = (NR - 1) * f; i = int(h); v = (i + 1 < NR) ? x[i] + (x[i + 1] - x[i]) * (h - i) : x[i]; printf "%.12g\n", v }'; }
near() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-9 * (b < 0 ? -b : b)) }'; }
for f in p50:0.5 p95:0.95 max:1; do
    key=${f%%:*}; frac=${f##*:}
    got=$(col "step.steps.step_time_s_$key"); want=$(q "$frac")
    near "$got" "$want" || fail "step.steps.step_time_s_$key = $got, the series gives $want"
done
mean=$(echo "$series" | tr ';' '\n' | awk '{ s += $1 } END { printf "%.12g\n", s / NR }')
near "$(col step.steps.step_time_s_mean)" "$mean" || fail "step_time_s_mean is not the series' mean $mean"
[ "$(col run.steps)" != "" ] || fail "no run level"
# the run replays the series in order (run.step_sequence "cycle", the default) and says so: the rule,
# the series' length and its mean (no step timed out here)
[ "$(col run.step_sequence.rule)" = cycle ] || fail "run.step_sequence.rule is '$(col run.step_sequence.rule)', expected cycle"
[ "$(col run.step_sequence.series_steps)" = 8 ] || fail "run.step_sequence.series_steps is not 8"
[ "$(col step.steps.series.timed_out)" = "false;false;false;false;false;false;false;false" ] ||
    fail "step.steps.series.timed_out is '$(col step.steps.series.timed_out)'"
near "$(col run.step_sequence.series_mean_s)" "$mean" || fail "run.step_sequence.series_mean_s is not the series' mean $mean"
# "mean": the run takes the completed steps' mean instead, and says so
sed 's|"run": { "tokens": 1e10, "trials": 20 }|"run": { "tokens": 1e10, "trials": 20, "step_sequence": "mean" }|' "$TMP/drift.json" > "$TMP/mean.json"
grep -q '"step_sequence": "mean"' "$TMP/mean.json" || fail "could not write the mean-rule scenario"
"$BIN/simrun" run "$TMP/mean.json" --levels step,run --reproducible --out "$TMP/m" -q -j 1 > "$TMP/logm" 2>&1 ||
    { fail "the mean-rule run failed"; cat "$TMP/logm"; }
[ "$(csv_col "$TMP/m/results.csv" run.step_sequence.rule 0)" = mean ] || fail "the mean rule's results do not say mean"
hot=$(col step.steps.series.hot_share)
# 0 before the onset; at it 0.5 moved by the bias the uniform steps before left (+-2 x 0.05 logit)
echo "$hot" | awk -F';' '{ exit !($1 == 0 && $2 == 0 && $3 > 0.45 && $3 < 0.55 && $8 < $3) }' ||
    fail "hot share series $hot: expected 0, 0, about 0.5 at the onset, then decaying"
sqlite3 "$TMP/r1/results.db" 'SELECT "step.steps.count" FROM points' 2>/dev/null | grep -qx 8 ||
    fail "results.db has no step.steps.count of 8"

# the headline figures are over all the steps: dropless and no timeout, every step does the same work,
# so all the steps' model FLOPs over all their time is step 0's rate x step 0's time x N / the series' sum
t0=$(col step.step_time_s); tf0=$(col step.tflops_per_gpu); sum=$(echo "$series" | tr ';' '\n' | awk '{ s += $1 } END { printf "%.17g", s }')
want=$(awk -v a="$tf0" -v t="$t0" -v s="$sum" 'BEGIN { printf "%.12g", a * t * 8 / s }')
near "$(col step.steps.tflops_per_gpu)" "$want" || fail "step.steps.tflops_per_gpu = $(col step.steps.tflops_per_gpu), expected $want"
near "$(col step.steps.mfu)" "$(awk -v a="$(col step.steps.tflops_per_gpu)" 'BEGIN { printf "%.12g", a / 989 }')" ||
    fail "step.steps.mfu is not step.steps.tflops_per_gpu over the H800's 989 TFLOP/s"   # h800-8rail, sim/scenario/presets.c
# ... and the table's headline is theirs: mean_s the mean, mfu and tok/s/gpu over all the steps
row=$(grep -E '^ +0 ' "$TMP/log1")
set -- $row
grep -q "mean_s" "$TMP/log1" || fail "the table does not label its step time mean_s"
# cells: point, layout, fits, plan_s, mean_s, p50_s, p95_s, max_s, mfu, tok/s/gpu, ...
[ "$5" = "$(printf '%.3f' "$(col step.steps.step_time_s_mean)")" ] || fail "table mean_s $5, step.steps.step_time_s_mean $(col step.steps.step_time_s_mean)"
[ "$9" = "$(printf '%.3f' "$(col step.steps.mfu)")" ] || fail "table mfu $9, step.steps.mfu $(col step.steps.mfu)"
[ "${10}" = "$(printf '%.0f' "$(col step.steps.tokens_per_s_per_gpu)")" ] || fail "table tok/s/gpu ${10}, step.steps.tokens_per_s_per_gpu $(col step.steps.tokens_per_s_per_gpu)"
grep -q "over all the simulated steps" "$TMP/log1" || fail "the table does not say its figures are over all the steps"
# output.plots: the step series drawn, its data the series
for f in step_series.dat step_series.gp step_series.png step_series.svg; do
    [ -s "$TMP/r1/plots/$f" ] || fail "no plots/$f"
done
plotted=$(awk '!/^#/ && NF { printf "%s%s", (n++ ? ";" : ""), $2 }' "$TMP/r1/plots/step_series.dat")
[ "$plotted" = "$(echo "$series" | tr ';' '\n' | awk '{ printf "%s%.10g", (n++ ? ";" : ""), $1 }')" ] ||
    fail "plots/step_series.dat holds $plotted, the series is $series"

# bad input: exit 2 naming the file, the path and the value
bad() {
    sed "s|\"routing\": { \"node_limit\": 1, \"capacity_factor\": 1.25, \"drop\": true }|\"routing\": $1|" "$SRC/tests/data/scenarios/small-moe.json" > "$TMP/bad.json"
    "$BIN/simrun" run "$TMP/bad.json" --levels step --out "$TMP/bad" -q > "$TMP/bad.log" 2>&1
    rc=$?
    [ $rc -eq 2 ] || fail "$1: exit $rc, expected 2"
    for w in bad.json "$2" "$3"; do grep -qF -- "$w" "$TMP/bad.log" || { fail "$1: the error does not say '$w'"; cat "$TMP/bad.log"; }; done
}
bad '{ "steps": -2 }' routing.steps -2
bad '{ "drift": { "hot_decay_steps": 0 } }' routing.drift.hot_decay_steps 0
bad '{ "drift": { "hot_rise_steps": -1 } }' routing.drift.hot_rise_steps -1
bad '{ "steps": 3, "distribution": "zipf" }' routing.distribution zipf
sed 's|"run": { "tokens": 1e10, "trials": 20 }|"run": { "tokens": 1e10, "trials": 20, "step_sequence": "cycled" }|' "$TMP/drift.json" > "$TMP/bad.json"
"$BIN/simrun" run "$TMP/bad.json" --levels step,run --out "$TMP/bad" -q > "$TMP/bad.log" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q 'bad.json: run.step_sequence: got "cycled"' "$TMP/bad.log" ||
    { fail "run.step_sequence \"cycled\": exit $rc, expected 2 naming the file, path and value"; cat "$TMP/bad.log"; }

if [ $FAILS -gt 0 ]; then echo "$FAILS failure(s)"; exit 1; fi
echo "ok: multi-step runs byte-identical, series and distribution consistent, bad fields exit 2"
