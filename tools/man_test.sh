#!/bin/sh
# Checks the man page built from the tool: a section for every subcommand
# that `hq help` lists, holding that subcommand's usage line.
# Usage: man_test.sh HQ HQ_1
hq=$1
man=$2
fail=0
for sub in $("$hq" help | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p'); do
  [ "$sub" = help ] && continue
  upper=$(printf '%s' "$sub" | tr a-z A-Z)
  if ! grep -q "^\.SH \"\{0,1\}HQ $upper\"\{0,1\}\$" "$man"; then
    echo "$man: no section HQ $upper"
    fail=1
  elif ! grep -q "^\.B hq \[--db=DIR\] \[--json\] $sub" "$man" &&
       ! grep -q "^\.B hq \[\\\\-\\\\-db=DIR\] \[\\\\-\\\\-json\] $sub" "$man"; then
    echo "$man: no usage line of hq $sub"
    fail=1
  fi
done
exit $fail
