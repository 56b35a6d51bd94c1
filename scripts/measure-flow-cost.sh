#!/usr/bin/env bash
# Measures what a collective's flow simulation costs per flow it lists, for the time bound of
# strategies/collectives/flow_estimate.cpp (seconds_per_listed_flow): each case's footprint
# from `collective --estimate` (rounds, flows listed over all rounds, the largest round), then
# the run itself under /usr/bin/time (user CPU seconds, peak RSS), the CPU per listed flow, and
# the peak RSS less the graph (graph_size.h's 125 bytes per vertex and 120 per directed edge)
# per flow of the largest round (kBytesPerRoundFlow; it includes the communicator's plan and
# the network's per-resource tables, so it is the most a round flow costs). The time bound takes
# the least per algorithm, so that it refuses only what would not have finished.
#
#   scripts/measure-flow-cost.sh [BUILD_DIR]     (default build/bench, a Release build; minutes)
set -euo pipefail
build=${1:-build/bench}
bin="$build/app/clustersim"
[[ -x "$bin" ]] || { echo "no $bin: build it first" >&2; exit 2; }
printf '%-10s %7s %-11s %-5s %-18s %12s %9s %9s %8s %9s %9s\n' preset gpus op algo chosen \
    flows_listed cpu_s rss_mib us_flow peak_round b_per_pf
# preset:gpus:op:algo
for case in dgx-a100:1024:all_reduce:ring dgx-a100:4096:all_reduce:ring \
            dgx-a100:16384:all_reduce:ring dgx-a100:65536:all_reduce:ring \
            dgx-a100:1024:all_reduce:tree dgx-a100:4096:all_reduce:tree \
            dgx-a100:16384:all_reduce:tree dgx-a100:32768:all_reduce:tree \
            dgx-h100:4096:all_reduce:auto dgx-h100:16384:all_reduce:auto \
            dgx-a100:4096:all_gather:ring dgx-a100:16384:reduce_scatter:ring \
            dgx-a100:1024:broadcast:ring dgx-a100:4096:broadcast:ring \
            dgx-a100:1024:all_to_all:auto dgx-a100:2048:all_to_all:auto \
            dgx-a100:4096:all_to_all:auto aws-p4d:1024:all_to_all:auto \
            aws-p4d:4096:all_reduce:auto; do
    IFS=: read -r preset gpus op algo <<<"$case"
    args=(collective -H "$preset" --gpus "$gpus" --op "$op" --bytes 1GiB --algo "$algo"
          --fidelity flow --max-seconds 0)
    est=$("$bin" "${args[@]}" --estimate | grep -v '^#')
    chosen=$(awk '{ print $2 }' <<<"$est")
    flows=$(awk '{ print $4 }' <<<"$est")
    peak=$(awk '{ print $5 }' <<<"$est")
    show=$("$bin" hardware show "$preset" --gpus "$gpus")
    vertices=$(awk '$1 == "vertices" { print $2 }' <<<"$show")
    links=$(awk '$1 == "links" { f = 1; next } f && NF == 0 { f = 0 } f { s += $2 } END { print s }' <<<"$show")
    usage=$( { /usr/bin/time -f '%U %M' "$bin" "${args[@]}" >/dev/null; } 2>&1 | tail -1)
    cpu=${usage% *}
    rss=${usage#* }
    awk -v p="$preset" -v g="$gpus" -v o="$op" -v a="$algo" -v c="$chosen" -v f="$flows" \
        -v t="$cpu" -v m="$rss" -v k="$peak" -v v="$vertices" -v l="$links" \
        'BEGIN { printf "%-10s %7s %-11s %-5s %-18s %12s %9s %9.0f %8.3f %9s %9.0f\n",
        p, g, o, a, c, f, t, m / 1024, t * 1e6 / f, k, (m * 1024 - 125 * v - 240 * l) / k }'
done

# The communicator's plan (rings, the tree's sample and its loads), built before any flow: an
# analytic all-reduce of 1 GiB (which plans rings and the tree to choose between them) less the
# graph (hardware/graph_size.h: 125 bytes per vertex, 120 per directed edge, from `hardware
# show`) and less the process on one node, per GPU.
echo
printf '%-10s %7s %9s %9s %9s %10s %10s\n' preset gpus cpu_s rss_mib graph_mib plan_b_gpu \
    plan_us_gpu
for preset in dgx-a100 dgx-h100; do
    base=$( { /usr/bin/time -f '%U %M' "$bin" collective -H "$preset" --op all_reduce \
        --bytes 1GiB >/dev/null; } 2>&1 | tail -1)
    for gpus in 16384 65536 262144; do
        show=$("$bin" hardware show "$preset" --gpus "$gpus")
        vertices=$(awk '$1 == "vertices" { print $2 }' <<<"$show")
        links=$(awk '$1 == "links" { f = 1; next } f && NF == 0 { f = 0 } f { s += $2 } END { print s }' <<<"$show")
        usage=$( { /usr/bin/time -f '%U %M' "$bin" collective -H "$preset" --gpus "$gpus" \
            --op all_reduce --bytes 1GiB >/dev/null; } 2>&1 | tail -1)
        awk -v p="$preset" -v g="$gpus" -v u="$usage" -v b="$base" -v v="$vertices" -v l="$links" \
            'BEGIN { split(u, x, " "); split(b, y, " "); graph = 125 * v + 120 * 2 * l;
            plan = x[2] * 1024 - y[2] * 1024 - graph;
            printf "%-10s %7s %9.2f %9.0f %9.0f %10.0f %10.1f\n", p, g, x[1], x[2] / 1024,
            graph / 1048576, plan / g, (x[1] - y[1]) * 1e6 / g }'
    done
done
