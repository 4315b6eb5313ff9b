#!/usr/bin/env bash
# e2e_step_exact.sh — the step level's results are exact functions of scenario and seed, and a faster
# executor must not change them by a bit: every case below is simulated at step level with
# --reproducible and its results.json and trace files are compared byte for byte with the outputs the
# per-rank executor produced (tests/data/exact/expected/, generated before the executor was made
# faster: each op resolved once, the trace recorded in the same pass).
#
# Cases: the shipped step-level scenarios (seed-4096, hot-expert: uniform/hot x drop/dropless,
# slow-gpu: a slow GPU and a degraded NIC, scaling: 1,024 to 8,192 GPUs) and small cases that reach
# the executor's other paths (tests/data/exact/: 1F1B, interleaved, DualPipe, expert TP, context
# parallelism, dp-inner placement, a hot expert dropless; slow GPU with NIC and NVLink faults; 11
# redundant experts placed by the oracle EPLB, routing.eplb_interval_steps 0, whose results.json is
# the one the build before that field gave, the field's echo in the scenario aside (its trace's memory
# counters hold the replica slots, which the ledger counts since); a stalled rank whose step hangs,
# exit 1, with its trace still written).
#
# results.json is compared whole except its "version" line (the build's git description); traces by
# SHA-256 (a few MB each). A change that is meant to change step results regenerates the expected
# outputs with MOESIM_EXACT_REGEN=1 and says in its commit which figures moved and why.
set -u
BIN=${MOESIM_BIN:?MOESIM_BIN must point at the tools folder of the build}
SRC=${MOESIM_SOURCE_DIR:-$(pwd)}
EXP="$SRC/tests/data/exact/expected"
TMP=$(mktemp -d /tmp/moesim-exact-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

# name, scenario, expected exit code of simrun
CASES=(
    "seed-4096 $SRC/scenarios/seed-4096.json 0"
    "hot-expert $SRC/scenarios/hot-expert.json 0"
    "slow-gpu $SRC/scenarios/slow-gpu.json 0"
    "scaling $SRC/scenarios/scaling.json 0"
    "small-variants $SRC/tests/data/exact/small-variants.json 0"
    "small-faults $SRC/tests/data/exact/small-faults.json 0"
    "small-eplb-oracle $SRC/tests/data/exact/small-eplb-oracle.json 0"
    "small-stall $SRC/tests/data/exact/small-stall.json 1"
)

# The files a case compares: results.json without its version line, and every trace's SHA-256.
digest() {
    local out=$1
    sed '/^\t"version":/d' "$out/results.json" > "$out/results.cmp.json"
    (cd "$out" && find . -name 'trace*.json' | LC_ALL=C sort | xargs -r sha256sum) > "$out/traces.sha256"
}

mkdir -p "$EXP"
for c in "${CASES[@]}"; do
    read -r name scn want <<< "$c"
    out="$TMP/$name"
    "$BIN/simrun" run "$scn" --levels step --reproducible --out "$out" -q -j 2 > "$out.log" 2>&1
    rc=$?
    if [ "$rc" != "$want" ]; then fail "$name: simrun exited $rc, expected $want"; cat "$out.log"; continue; fi
    digest "$out"
    if [ "${MOESIM_EXACT_REGEN:-0}" = 1 ]; then
        cp "$out/results.cmp.json" "$EXP/$name.results.json"
        cp "$out/traces.sha256" "$EXP/$name.traces.sha256"
        echo "regenerated: $name"
        continue
    fi
    before=$FAILS
    if ! cmp -s "$out/results.cmp.json" "$EXP/$name.results.json"; then
        fail "$name: results.json differs from $EXP/$name.results.json"
        diff "$EXP/$name.results.json" "$out/results.cmp.json" | head -20
    fi
    if ! cmp -s "$out/traces.sha256" "$EXP/$name.traces.sha256"; then
        fail "$name: traces differ"
        diff "$EXP/$name.traces.sha256" "$out/traces.sha256"
    fi
    [ "$FAILS" = "$before" ] && echo "ok: $name"
done
[ "$FAILS" = 0 ] || { echo "$FAILS failure(s)"; exit 1; }
echo "all step results identical"
