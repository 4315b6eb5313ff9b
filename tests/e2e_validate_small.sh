#!/usr/bin/env bash
# simrun validate on three H100 rows (tests/data/validation-small/cases.json): the joint fit's code
# path end to end (the pass at the committed values, the Jacobian, the left-out refits and their
# simulations, the bands) in seconds, so that it also runs sanitized; tests/e2e_validate.sh runs the
# whole table against the baseline in the normal build.
set -euo pipefail
bin=${MOESIM_BIN:-build/tools}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cases=tests/data/validation-small/cases.json
"$bin/simrun" validate "$cases" --out "$out/a" --jobs 2 > "$out/a.txt"
# two parameters (H100's sustained clock, Megatron-Core's call) over three cases, each case left out
grep -q 'cluster.gpu.sustained  H100' "$out/a.txt"
grep -q 'host.call_us           megatron-core' "$out/a.txt"
[ "$(awk -F, 'NR > 1 && $10 != ""' "$out/a/validation.csv" | wc -l)" -eq 3 ]
# three cases are too few for a family band: the band of all three is stated with its coverage
grep -qE '"family":[[:space:]]*"all"' "$out/a/validation.json"
# the committed fit is the optimum over all 34 step cases, not over these three: a refit here moves
# it, and --check-fit says so (exit 1)
rc=0
"$bin/simrun" validate "$cases" --check-fit --quiet --out "$out/c" --jobs 2 > "$out/c.txt" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || { echo "--check-fit on three cases: exit $rc, expected 1" >&2; cat "$out/c.txt" >&2; exit 1; }
grep -q 'MOVED' "$out/c.txt"
# a fit over them, written elsewhere, reads back as a fit
"$bin/simrun" validate "$cases" --fit --fit-out "$out/fit.json" --quiet --out "$out/f" --jobs 2
grep -qE '"format":[[:space:]]*"moesim-global-fit/1"' "$out/fit.json"
