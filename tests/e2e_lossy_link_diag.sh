#!/usr/bin/env bash
# simdiag localizes a lossy link from a step trace: tests/data/scenarios/lossy-nic.json (128 GPUs,
# 16 nodes, tp 1 x pp 2 x ep 16 x dp 4, ep-inner: each EP group spans two nodes) runs one step twice,
# healthy and with GPU 99's NIC (node 12 GPU 3) losing 1e-2 of its packets under go-back-N (0.5426 of
# its bandwidth). simdiag check on the lossy point's trace flags exactly one EP group, the one holding
# that NIC (ranks 96..111, nodes 12-13), as slow in its all-to-alls against the other groups of its
# stage; on the healthy point's trace it flags none. The scenario keeps the GEMM tables' own rate for
# its experts (cluster.gpu.grouped_gemm_rate 1): at the fitted Hopper rate their compute triples and the
# uniform routing's load spread alone makes two ranks per stage stragglers by simdiag's rule (+7-8%).
set -euo pipefail
bin=${MOESIM_BIN:-build/tools}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$bin/simrun" run tests/data/scenarios/lossy-nic.json --out "$out/r" -j 2 > "$out/run.txt" 2>&1
# the run itself names the lossy port (sweep point 1; point 0 is the healthy control)
grep -qF 'lossy link: nic-99 (node 12 GPU 3) loses 0.01 of its packets: go-back-n keeps 0.5426' "$out/run.txt"
[ -f "$out/r/traces/trace-000000.json" ] && [ -f "$out/r/traces/trace-000001.json" ]

# the healthy control: exit 0, no slow EP group
rc=0
"$bin/simdiag" check "$out/r/traces/trace-000000.json" > "$out/healthy.txt" || rc=$?
[ $rc -eq 0 ] || { echo "simdiag exited $rc on the healthy trace"; cat "$out/healthy.txt"; exit 1; }
grep -qF "[PASS] no EP group waits > 1.25x the median of its stage's other groups" "$out/healthy.txt"
if grep -q 'ranks 96\.\.111\|nodes 12-13' "$out/healthy.txt"; then
    echo "simdiag flags the lossy NIC's EP group without the loss"; cat "$out/healthy.txt"; exit 1
fi

# the lossy point: exit 3, one slow EP group, the one holding GPU 99's NIC, at least 25% slower
rc=0
"$bin/simdiag" check "$out/r/traces/trace-000001.json" > "$out/lossy.txt" || rc=$?
[ $rc -eq 3 ] || { echo "simdiag exited $rc on the lossy trace (expected 3)"; cat "$out/lossy.txt"; exit 1; }
line=$(grep -F '[FAIL] stage 0, replica 3, tp 0: EP group of ranks 96..111 (nodes 12-13) spends' "$out/lossy.txt") ||
    { echo "simdiag does not name the EP group of nodes 12-13"; cat "$out/lossy.txt"; exit 1; }
[ "$(grep -c 'EP group of ranks' "$out/lossy.txt")" -eq 1 ] ||
    { echo "simdiag flags more than the lossy NIC's EP group"; cat "$out/lossy.txt"; exit 1; }
pct=$(grep -A1 -F "$line" "$out/lossy.txt" | sed -n 's/.*(+\([0-9.]*\)%).*/\1/p')
awk -v p="$pct" 'BEGIN { exit !(p >= 25) }' || { echo "the lossy group is only +$pct% slower"; exit 1; }
grep -qF 'verdict: 1 problem found' "$out/lossy.txt"

# the sweep folder: exit 3 (a point has a problem), the same group named
rc=0
"$bin/simdiag" check "$out/r" > "$out/dir.txt" || rc=$?
[ $rc -eq 3 ] || { echo "simdiag exited $rc on the sweep folder (expected 3)"; exit 1; }
grep -qF 'EP group of ranks 96..111 (nodes 12-13)' "$out/dir.txt"
echo "lossy link diag: the EP group of nodes 12-13 is +$pct% in all-to-alls; healthy control clean"
