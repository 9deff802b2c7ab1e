#!/usr/bin/env bash
# One program under NVIDIA's compute-sanitizer (tests/gpu/run.sh's `sanitize` part).
#
# Usage: tests/gpu/sanitize.sh LOG TOOL ALLOWED -- COMMAND...
#   LOG      the sanitizer's log file (written)
#   TOOL     memcheck (with the leak check), racecheck, synccheck or initcheck
#   ALLOWED  the API errors the program provokes on purpose, comma-separated
#            `CUDA_ERROR_NAME@cuFunction` pairs ("-" for none), and `leaked=BYTES` for memory a
#            test leaves allocated on purpose (a program that exits without shutting down)
#
# Passes when the program exits 0 and every error the tool reports is an allowed API error:
# no memory error, leak, hazard, uninitialised read, and no API error of ordo's own making.
# Prints each distinct API error with its count, allowed or not, so that a new one is named.
set -uo pipefail
log=$1 tool=$2 allowed=$3
shift 3
[ "${1:-}" = "--" ] && shift
options=(--tool "$tool" --print-limit 100000 --error-exitcode 99 --log-file "$log")
case $tool in
  memcheck) options+=(--leak-check full) ;;
  racecheck) options+=(--racecheck-report all) ;;
esac
compute-sanitizer "${options[@]}" "$@"
rc=$?
if grep -q 'Target application terminated before first instrumented API call' "$log"; then
  # The program made no CUDA call (a host-only example): the sanitizer answers 255 and has
  # nothing to check; the program's own exit status is taken from a plain run.
  "$@" >/dev/null 2>&1
  rc=$?
  echo "  $tool: exit $rc, no CUDA call"
  [ "$rc" -eq 0 ]; exit
fi
if [ "$tool" = racecheck ]; then
  # "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)": errors are hazards here.
  summary=$(grep -o 'RACECHECK SUMMARY: [0-9]* hazards* displayed ([0-9]* errors*, [0-9]* warnings*)' "$log" | tail -n 1)
  hazards=$(echo "$summary" | grep -o '^RACECHECK SUMMARY: [0-9]*' | grep -o '[0-9]*$' || echo missing)
  total=$(echo "$summary" | grep -o '([0-9]* error' | grep -o '[0-9]*' || echo missing)
  [ -n "$summary" ] || total=missing
else
  total=$(grep -o 'ERROR SUMMARY: [0-9]* error' "$log" | tail -n 1 | grep -o '[0-9]*' || echo missing)
  hazards=0
fi
# "Program hit CUDA_ERROR_X (error N) due to "..." on CUDA API call to cuY." (the runtime API's
# errors, as libraries built on it make them, read "cudaErrorX ... to cudaY").
mapfile -t api < <(sed -n 's/.*Program hit \(CUDA_ERROR_[A-Z_]*\|cudaError[A-Za-z]*\) (error [0-9]*) due to .* on CUDA API call to \([A-Za-z0-9_]*\).*/\1@\2/p' "$log")
unexpected=0 expected=0
declare -A seen=()
for e in "${api[@]}"; do seen[$e]=$(( ${seen[$e]:-0} + 1 )); done
for e in "${!seen[@]}"; do
  if [[ ",$allowed," == *",$e,"* ]]; then
    echo "  api error (provoked on purpose): $e x${seen[$e]}"
    expected=$((expected + seen[$e]))
  else
    echo "  API ERROR OF ORDO'S MAKING: $e x${seen[$e]}"
    unexpected=$((unexpected + seen[$e]))
  fi
done
leaks=$(grep -c 'Leaked [0-9]* bytes' "$log")
leaked=$(grep -o 'LEAK SUMMARY: [0-9]* bytes' "$log" | grep -o '[0-9]*' || echo 0)
allowed_leak=$(echo ",$allowed," | grep -o ',leaked=[0-9]*,' | grep -o '[0-9]*' || echo none)
if [ "$leaks" -gt 0 ] && [ "$leaked" = "$allowed_leak" ]; then
  echo "  leaked on purpose: $leaked bytes in $leaks allocations"
  expected=$((expected + leaks))
fi
echo "  $tool: exit $rc, $total errors ($expected provoked on purpose, $unexpected other API errors, $leaks leaks), $hazards hazards"
if [ "$total" = missing ]; then echo "  no summary in $log"; tail -n 20 "$log"; exit 1; fi
if [ "$rc" -ne 0 ] && [ "$rc" -ne 99 ]; then echo "  the program failed (exit $rc)"; exit 1; fi
if [ "$total" -ne "$expected" ] || [ "$hazards" -ne 0 ]; then
  grep -v 'Saved host backtrace\|^=========     [a-z#]' "$log" | grep '=========' | grep -v 'Program hit' | head -n 30
  exit 1
fi
exit 0
