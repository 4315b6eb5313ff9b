#!/usr/bin/env bash
# simrun validate against the committed baseline: every published case (scenarios/validation/cases.json)
# is predicted again, and the run fails when a case's error moved by more than 1 percentage point
# (or its status changed) without scenarios/validation/baseline.json being updated with it.
# Refresh the fit and the baseline after an intended model change:
#   build/tools/simrun validate --fit
#   build/tools/simrun validate --out results/validation && cp results/validation/validation.json scenarios/validation/baseline.json
set -euo pipefail
bin=${MOESIM_BIN:-build/tools}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$bin/simrun" validate --baseline scenarios/validation/baseline.json --out "$out" --jobs 2
test -s "$out/validation.json"
test -s "$out/validation.csv"
# the CSV has one row per case plus the header
cases=$(grep -c '"name"' scenarios/validation/cases.json)
rows=$(($(wc -l < "$out/validation.csv") - 1))
[ "$rows" -eq "$cases" ] || { echo "validation.csv: $rows rows for $cases cases" >&2; exit 1; }
# the cases that give a reason instead of a scenario are listed as not expressible, every other one ran
# (ok within the tolerance, miss beyond)
unexpressible=$(grep -c '"not_expressible":' scenarios/validation/cases.json)
listed=$(grep -c ',not expressible,' "$out/validation.csv")
ran=$(grep -cE ',(ok|miss),' "$out/validation.csv")
[ "$listed" -eq "$unexpressible" ] && [ "$ran" -eq $((cases - unexpressible)) ] ||
    { echo "validation.csv: $listed not expressible (cases.json: $unexpressible), $ran ran of $cases" >&2; exit 1; }
# byte-identical on a rerun (deterministic)
"$bin/simrun" validate --out "$out/again" --jobs 1 --quiet
cmp "$out/validation.json" "$out/again/validation.json"
# every step case that ran has its left-out prediction (the global fit without it), and the table
# states each band's coverage on the left-out cases
awk -F, 'NR > 1 && $2 == "step" && ($11 == "ok" || $11 == "miss") && $10 == "" { print "no left-out error: " $1; bad = 1 }
         END { exit bad }' "$out/validation.csv"
grep -q '"summary_left_out"' "$out/validation.json"
"$bin/simrun" validate --quiet --no-loo --out "$out/noloo" --jobs 2
! grep -q '"loo_error_pct"' "$out/noloo/validation.json"
# the committed fit is the optimum of the model as it is (a refit from it moves no value by 1%)
"$bin/simrun" validate --check-fit --quiet --out "$out/check" --jobs 2
# an ablation switch reaches every case: without the host side the host-bound Qwen3-30B-A3B on two
# H100 nodes predicts far more than with it
"$bin/simrun" validate --no-loo --quiet --out "$out/nohost" --jobs 2 --set host.framework=none
with=$(awk -F, '$1 == "qwen3-30b-a3b-h100-16" { print $5 }' "$out/noloo/validation.csv")
without=$(awk -F, '$1 == "qwen3-30b-a3b-h100-16" { print $5 }' "$out/nohost/validation.csv")
awk -v a="$with" -v b="$without" 'BEGIN { exit !(b > 1.2 * a) }' ||
    { echo "host.framework=none: qwen3-30b-a3b-h100-16 $without vs $with tokens/s with the host side" >&2; exit 1; }
# bad options exit 2 and write nothing
for bad in "--set host.framework" "--set no.such.field=1" "--set host.framework=bogus" "--fit --check-fit" "--fit-out x.json"; do
    rc=0
    # shellcheck disable=SC2086
    "$bin/simrun" validate --quiet --out "$out/bad" $bad 2>/dev/null || rc=$?
    [ "$rc" -eq 2 ] || { echo "simrun validate $bad: exit $rc, expected 2" >&2; exit 1; }
    [ ! -e "$out/bad/validation.json" ] || { echo "simrun validate $bad wrote a table" >&2; exit 1; }
done
