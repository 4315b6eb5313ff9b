#!/usr/bin/env bash
# simrun validate against the committed baseline: every published case (scenarios/validation/cases.json)
# is predicted again, and the run fails when a case's error moved by more than 1 percentage point
# (or its status changed) without scenarios/validation/baseline.json being updated with it.
# Refresh the baseline after an intended model change:
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
