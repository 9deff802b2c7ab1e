#!/usr/bin/env bash
# Each benchmark row's per-round median ratio over several processes of one benchmark: the
# logs of offload_bench runs (some with `raw-first`), given as arguments. Prints, per row, the
# ratios of the processes that made ordo's objects first, of those that made the benchmark's
# first, the median over all of them (of an even count: the mean of the two middle values), and
# for rows with the ≤ 1.02 target how many processes read above it; then how many values above
# it there are over every such row of every process (0: the target met everywhere).
# Rows are the lines `| name | … ns | … ns | ratio [p25, p75]… |` (offload_bench, mlir_bench) and
# `| name | ns/launch | driver | ordo | mean ratio | median ratio [p25, p75] | target |` (c_launch_bench).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: bench_rows.sh LOG..." >&2; exit 2; }
awk '
  FNR == 1 { order = "ordo" }
  /^objects made first: the benchmark/ { order = "raw" }
  /^\| / && (/ ns \| / || /\| ns\/launch \|/) {
    n = split($0, f, "|")
    name = f[2]; gsub(/^ +| +$/, "", name)
    ratio = f[3] ~ /ns\/launch/ ? f[7] : f[5]
    sub(/^ +/, "", ratio); sub(/ .*/, "", ratio); sub(/;$/, "", ratio)
    if (!(name in seen)) { seen[name] = 1; names[++rows] = name }
    values[name, order] = values[name, order] " " ratio
    all[name] = all[name] " " ratio
    count[name]++
    if (/<= 1\.02 \|/) { target[name] = 1; if (ratio + 0 > 1.02) over[name]++ }
  }
  function median(list,   v, k, i, j, t) {
    k = split(list, v, " ")
    for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
  }
  END {
    print "| row | ordo'"'"'s objects first | the benchmark'"'"'s first | median over the processes | processes above 1.02 |"
    print "|---|---|---|---|---|"
    for (r = 1; r <= rows; r++) {
      name = names[r]
      above = name in target ? (over[name] + 0) " of " count[name] : "(no target)"
      printf "| %s |%s |%s | %.3f | %s |\n", name, values[name, "ordo"], values[name, "raw"], median(all[name]), above
      if (name in target) { targets++; misses += over[name] + 0 }
    }
    if (targets) printf "rows with the <= 1.02 target: %d; values above it over all processes: %d\n", targets, misses
  }
' "$@"
