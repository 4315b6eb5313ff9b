#!/usr/bin/env bash
# e2e_search_exhaustive.sh — `simrun search` cannot miss the step-level best layout: on a small
# cluster its pick (every layout ranked at plan level, the best K simulated at step level) is the
# layout an exhaustive step-level sweep of every layout that fits finds fastest.
#
# Qwen3-30B-A3B on 32 H100 (4 nodes of 8), forced-balance routing, FP8 current scaling, 1024
# sequences of 4096 tokens; 52 layouts (51 fit). Both MoE dispatchers: DeepEP's deduplicated
# all-to-all and the alltoall dispatcher's copy per pair rank the layouts differently.
set -u
BIN=${MOESIM_BIN:?MOESIM_BIN must point at the tools folder of the build}
command -v sqlite3 >/dev/null || { echo "SKIP: the sqlite3 command-line shell is not installed"; exit 77; }
TMP=$(mktemp -d /tmp/moesim-search-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
TOP=5

scenario() {   # $1 dispatcher, $2 "sweep" or "" ; writes the scenario JSON on stdout
    local sweep=""
    [ "$2" = sweep ] && sweep='"sweep": { "layouts": "all" },'
    cat <<EOF
{
  "format": "moesim-scenario/1", "name": "search-exhaustive-$1",
  "model": { "preset": "qwen3-30b-a3b", "seq_len": 4096 },
  "cluster": { "preset": "h100-8rail", "nodes": 4, "gpus_per_node": 8 },
  "layout": { "tp": 1, "pp": 1, "ep": 16, "dp": 2, "micro_batch": 1, "global_batch": 1024,
              "schedule": "1f1b", "recompute": "none", "zero": 1 },
  "routing": { "distribution": "balanced", "node_limit": 0, "capacity_factor": 0, "drop": false, "dispatcher": "$1" },
  "precision": { "compute": "fp8-cs", "dispatch": "bf16", "combine": "bf16", "master": "fp32" },
  $sweep
  "output": { "dir": "$TMP/unused", "trace": false, "plots": false, "levels": ["plan", "step"] }
}
EOF
}

LAYOUT='"sweep.layout.tp" || '"'"'.'"'"' || "sweep.layout.pp" || '"'"'.'"'"' || "sweep.layout.ep" || '"'"'.'"'"' || "sweep.layout.dp"'
for d in deepep alltoall; do
    scenario "$d" "" > "$TMP/$d.json"
    scenario "$d" sweep > "$TMP/$d-all.json"
    "$BIN/simrun" search "$TMP/$d.json" --top "$TOP" --out "$TMP/$d-search" -q -j 2 || { fail "$d: search exited $?"; continue; }
    "$BIN/simrun" run "$TMP/$d-all.json" --out "$TMP/$d-all" -q -j 2 || { fail "$d: sweep exited $?"; continue; }
    pick=$(sqlite3 "$TMP/$d-search/results.db" "SELECT $LAYOUT FROM points WHERE \"step.step_time_s\" IS NOT NULL ORDER BY \"step.step_time_s\", id LIMIT 1")
    best=$(sqlite3 "$TMP/$d-all/results.db" "SELECT $LAYOUT FROM points WHERE status = 'ok' AND \"plan.fits_memory\" = 1 ORDER BY \"step.step_time_s\", id LIMIT 1")
    n=$(sqlite3 "$TMP/$d-all/results.db" "SELECT count(*) FROM points WHERE status = 'ok' AND \"plan.fits_memory\" = 1")
    # where the step-level best stands in the plan's ranking (1 = the plan's first choice)
    rank=$(sqlite3 "$TMP/$d-all/results.db" "SELECT 1 + count(*) FROM points WHERE status = 'ok' AND \"plan.fits_memory\" = 1 AND \"plan.step_time_s\" < (SELECT \"plan.step_time_s\" FROM points WHERE $LAYOUT = '$best' AND status = 'ok')")
    [ -n "$pick" ] || fail "$d: search simulated no layout at step level"
    [ "$n" -ge 40 ] || fail "$d: the exhaustive sweep has $n layouts that fit, expected about 51"
    echo "$d: search picks $pick (tp.pp.ep.dp); the exhaustive step sweep of $n layouts finds $best, the plan's number $rank"
    [ "$pick" = "$best" ] || fail "$d: search picked $pick, the step-level best is $best (number $rank of the plan's ranking, top $TOP simulated)"
done
[ $FAILS -eq 0 ] && echo "search finds the step-level best" && exit 0
exit 1
