#!/usr/bin/env bash
# e2e_search_exhaustive.sh — `simrun search` cannot miss the step-level best layout: on a small
# cluster its pick (every layout ranked at plan level, the best K simulated at step level) is the
# layout an exhaustive step-level sweep of every layout that fits finds fastest. `search --top all`
# simulates every layout that fits: each one's step result equals the sweep's for that layout, and
# its pick by step-level tokens/s/GPU is the sweep's best by that measure. The search's workers each
# simulate a run of layouts, sharing SimGrid patterns and routing draws; the sweep runs a process per
# layout: their step results must agree to the last digit.
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

    # --top all: every layout that fits at step level, ranked by step-level tokens/s/GPU (one
    # dispatcher: the sanitized build takes minutes per search)
    [ "$d" = deepep ] || continue
    "$BIN/simrun" search "$TMP/$d.json" --top all --out "$TMP/$d-every" -j 2 > "$TMP/$d-every.txt" 2>&1 || { fail "$d: search --top all exited $?"; continue; }
    TPS='"step.tokens_per_s_per_gpu"'
    n_all=$(sqlite3 "$TMP/$d-every/results.db" "SELECT count(*) FROM points WHERE $TPS IS NOT NULL")
    [ "$n_all" = "$n" ] || fail "$d: search --top all simulated $n_all layouts at step level; $n fit"
    # every digit: the search's workers simulate runs of layouts and reuse each other's SimGrid
    # patterns and routing draws, the sweep gives each layout a fresh process
    FULL="quote($TPS), quote(\"step.step_time_s\"), quote(\"step.exposed_comm_s\")"   # round-trip exact
    sqlite3 "$TMP/$d-every/results.db" "SELECT $LAYOUT, $FULL FROM points WHERE $TPS IS NOT NULL ORDER BY 1" > "$TMP/$d-every.rows"
    sqlite3 "$TMP/$d-all/results.db" "SELECT $LAYOUT, $FULL FROM points WHERE status = 'ok' AND \"plan.fits_memory\" = 1 ORDER BY 1" > "$TMP/$d-all.rows"
    cmp -s "$TMP/$d-every.rows" "$TMP/$d-all.rows" || fail "$d: search --top all's step results differ from the sweep's: $(diff "$TMP/$d-all.rows" "$TMP/$d-every.rows" | head -4 | tr '\n' ' ')"
    pick_all=$(sqlite3 "$TMP/$d-every/results.db" "SELECT $LAYOUT FROM points WHERE $TPS IS NOT NULL ORDER BY $TPS DESC, id LIMIT 1")
    best_tps=$(sqlite3 "$TMP/$d-all/results.db" "SELECT max($TPS) FROM points WHERE status = 'ok' AND \"plan.fits_memory\" = 1")
    pick_tps=$(sqlite3 "$TMP/$d-all/results.db" "SELECT $TPS FROM points WHERE $LAYOUT = '$pick_all' AND status = 'ok'")
    echo "$d: search --top all picks $pick_all ($pick_tps tokens/s/GPU; the sweep's best: $best_tps)"
    [ -n "$pick_tps" ] && [ "$pick_tps" = "$best_tps" ] || fail "$d: search --top all picked $pick_all ($pick_tps tokens/s/GPU), the sweep's best is $best_tps"
    # the table lists the simulated layouts fastest first: its first layout row is the pick
    grep -q "simulating all $n at step level" "$TMP/$d-every.txt" || fail "$d: search --top all did not say it simulates all $n layouts"
    first=$(awk '$1 == 1 && $3 ~ /^tp=/ { print $3 "." $4 "." $5 "." $6; exit }' "$TMP/$d-every.txt" | sed 's/[a-z]*=//g')
    [ "$first" = "$pick_all" ] || fail "$d: the table's first layout is '$first', the pick by tokens/s/GPU $pick_all"
done
# DualPipe on one node of 8 GPUs. At pp = 1 there is no pipeline and the layout runs 1F1B
# (sim/scenario/schedule_rules.h): every layout that fits is simulated, and the pp = 1 layouts' step
# results equal a 1F1B search's to the last digit. (The layouts of too few micro-batches for DualPipe,
# or of an odd pp, are refused when the scenario is read: test_program_check.)
for sched in dualpipe 1f1b; do
    sed -e "s/\"1f1b\"/\"$sched\"/" -e 's/"nodes": 4/"nodes": 1/' -e 's/"global_batch": 1024/"global_batch": 256/' \
        -e 's/"ep": 16, "dp": 2/"ep": 8, "dp": 1/' "$TMP/deepep.json" > "$TMP/$sched.json"
    "$BIN/simrun" search "$TMP/$sched.json" --top all --out "$TMP/$sched" -q -j 2 || fail "$sched: search --top all exited $?"
done
DB="$TMP/dualpipe/results.db"
fit=$(sqlite3 "$DB" "SELECT count(*) FROM points WHERE \"plan.fits_memory\" = 1")
stepped=$(sqlite3 "$DB" "SELECT count(*) FROM points WHERE status = 'ok' AND \"step.step_time_s\" IS NOT NULL")
echo "dualpipe: $fit layouts fit, $stepped simulated"
[ "$fit" -gt 0 ] && [ "$stepped" = "$fit" ] || fail "dualpipe: $stepped layouts simulated; expected all $fit that fit"
Q="SELECT $LAYOUT || ' ' || quote(\"step.step_time_s\") FROM points WHERE \"sweep.layout.pp\" = 1 AND status = 'ok' ORDER BY 1"
one_dual=$(sqlite3 "$DB" "$Q"); one_plain=$(sqlite3 "$TMP/1f1b/results.db" "$Q")
echo "dualpipe at pp = 1: $(echo "$one_dual" | grep -c .) layouts, as 1f1b: $(echo "$one_plain" | grep -c .)"
[ -n "$one_dual" ] && [ "$one_dual" = "$one_plain" ] || fail "dualpipe at pp = 1 differs from 1f1b: '$one_dual' vs '$one_plain'"
[ $FAILS -eq 0 ] && echo "search finds the step-level best" && exit 0
exit 1
