#!/usr/bin/env bash
# run_fuzzers.sh BINDIR SECONDS NAME=REGRESSIONS:SEED:SEED... — run each libFuzzer harness
# BINDIR/fuzz_NAME for SECONDS with its dictionary (tests/fuzz/dict/NAME.dict), a working corpus in
# BINDIR/corpus/NAME and the regression and seed folders as read-only corpora; then one line per
# harness: executions, executions/s, crashes (crash/leak/timeout/oom artifacts), slow inputs (> 1 s).
# With MOESIM_FUZZ_RUNS=N (N > 0) a harness also stops after N executions (-runs), whichever comes
# first. Exit 1 when any harness found a crash. Run from the repository root.
set -uo pipefail
bindir=$(cd "$1" && pwd); secs=$2; shift 2   # absolute: the command-line harnesses chdir into a sandbox
dicts=$(pwd)/tests/fuzz/dict
runs=()
[ "${MOESIM_FUZZ_RUNS:-0}" -gt 0 ] && runs=(-runs="$MOESIM_FUZZ_RUNS")
status=0
summary=()
for spec in "$@"; do
  name=${spec%%=*}
  IFS=: read -r -a dirs <<< "${spec#*=}"
  corpus=$bindir/corpus/$name; art=$bindir/artifacts/$name; log=$bindir/logs/$name.log
  mkdir -p "$corpus" "$art" "$(dirname "$log")"
  existing=()
  for d in "${dirs[@]}"; do [ -d "$d" ] && existing+=("$d"); done
  echo "fuzz: $name for ${secs} s${runs:+ or ${MOESIM_FUZZ_RUNS} executions} (log: $log)"
  "$bindir/fuzz_$name" -max_total_time="$secs" "${runs[@]}" -print_final_stats=1 -close_fd_mask=3 -timeout=20 \
      -rss_limit_mb=2560 -report_slow_units=1 -artifact_prefix="$art/" \
      -dict="$dicts/$name.dict" "$corpus" "${existing[@]}" > "$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
  crashes=$(find "$art" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  slow=$(find "$art" -maxdepth 1 -name 'slow-unit-*' | wc -l)
  reports=$(grep -c -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$log")
  summary+=("$(printf '%-14s %12s execs %8s/s  crashes %s  sanitizer reports %s  slow>1s %s  peak %s MB  rc %s' \
      "$name" "${execs:-?}" "${rate:-?}" "$crashes" "$reports" "$slow" "${rss:-?}" "$rc")")
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ] || [ "$reports" -ne 0 ]; then
    status=1
    echo "fuzz: $name FAILED (rc $rc); the input is in $art/, the report in $log" >&2
    grep -m 20 -E 'ERROR|runtime error|SUMMARY|deadly signal' "$log" >&2
  fi
done
printf '%s\n' "${summary[@]}"
exit $status
