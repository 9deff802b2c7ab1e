#!/usr/bin/env bash
# Runs the OffloadAPI suites that build.sh built, on one platform, and checks the result against
# an expected-failure list:
#   bash tests/offload/upstream/run.sh OUTDIR PLATFORM EXPECTED
# PLATFORM is an `ol*` platform name as ordo reports it ("ordo host" for ordo's CPU device,
# "CUDA", "AMDGPU"); upstream's own OFFLOAD_UNITTEST_PLATFORM selects its devices. EXPECTED is
# a file of lines "Fixture.Test<TAB>why it cannot pass on that device" ('#' lines are comments);
# a test's name is gtest's without the device parameter (identical per device). A reason that
# starts with "(machine)" depends on the machine (what its firmware tells), so such a test may
# also pass.
# Writes OUTDIR/results-<platform>.tsv (name, PASS/FAIL/SKIP) and each suite's log; prints the
# counts; exits 1 when a test outside the list fails (or a suite crashes), or a listed one passes.
set -uo pipefail
out=$(cd "$1" && pwd)
platform=$2
expected=$3
tag=$(echo "$platform" | tr -c 'a-zA-Z0-9\n' '_')
results=$out/results-$tag.tsv
: >"$results"
status=0
for suite in device event init kernel memory platform program queue symbol; do
  log=$out/$suite-$tag.log
  OFFLOAD_UNITTEST_PLATFORM=$platform timeout "${ORDO_UPSTREAM_TIMEOUT:-600}" "$out/$suite.unittests" \
    --gtest_color=no >"$log" 2>&1
  rc=$?
  # gtest prints "[       OK ] name (N ms)", "[  FAILED  ] name, where ... (N ms)", "[  SKIPPED ] name (N ms)".
  sed -nE 's/^\[       OK \] ([A-Za-z0-9_]+\.[A-Za-z0-9_]+)(\/[^ ,]*)?[ ,].*/\1\tPASS/p
            s/^\[  FAILED  \] ([A-Za-z0-9_]+\.[A-Za-z0-9_]+)(\/[^ ,]*)?[ ,].*\([0-9]+ ms\)$/\1\tFAIL/p
            s/^\[  SKIPPED \] ([A-Za-z0-9_]+\.[A-Za-z0-9_]+)(\/[^ ,]*)?[ ,].*/\1\tSKIP/p' "$log" >>"$results"
  if ! grep -q '^\[==========\] .* ran\.' "$log"; then
    echo "suite $suite did not finish (exit $rc): see $log"
    echo "$suite.(suite)	CRASH" >>"$results"
    status=1
  fi
done
sort -u -o "$results" "$results"
pass=$(grep -c $'\tPASS$' "$results"); fail=$(grep -c $'\tFAIL$' "$results"); skip=$(grep -c $'\tSKIP$' "$results")
echo "upstream OffloadAPI on '$platform': $pass passed, $fail failed, $skip skipped ($((pass + fail + skip)) tests)"
listed=$(grep -v '^#' "$expected" | grep -v '^[[:space:]]*$' | cut -f1 | sort -u)
failed=$(grep -E $'\t(FAIL|CRASH)$' "$results" | cut -f1 | sort -u)
unexpected=$(comm -13 <(echo "$listed") <(echo "$failed") | grep -v '^$')
either=$(grep -v '^#' "$expected" | grep $'\t(machine)' | cut -f1 | sort -u)
fixed=$(comm -23 <(echo "$listed") <(echo "$failed") | grep -v '^$' | grep -vxF -f <(echo "${either:-#}"))
if [ -n "$unexpected" ]; then
  echo "failed, not in $(basename "$expected"):"; echo "$unexpected" | sed 's/^/  /'; status=1
fi
if [ -n "$fixed" ]; then
  echo "listed in $(basename "$expected") but did not fail (take them off the list):"; echo "$fixed" | sed 's/^/  /'
  status=1
fi
exit $status
