#!/bin/sh
# Writes help2man's include text for hq: a section per subcommand, from the
# tool's own `hq help` (the list) and `hq help SUBCOMMAND` (its usage, text
# and flags), then the static sections of hq.h2m.
# Usage: man_sections.sh HQ HQ_H2M OUTPUT
set -eu
hq=$1
static=$2
out=$3
tmp=$out.tmp
: >"$tmp"
for sub in $("$hq" help | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p'); do
  [ "$sub" = help ] && continue
  upper=$(printf '%s' "$sub" | tr a-z A-Z)
  printf '[HQ %s]\n' "$upper" >>"$tmp"
  # Backslashes escaped; a line that roff would read as a request guarded.
  "$hq" help "$sub" | sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/" | awk '
    /^usage: / { sub(/^usage: /, ""); print ".B " $0; next }
    /^Flags:$/ { print "Flags:"; next }
    /^  --/ { sub(/^  /, ""); print ".TP"; print $0; next }
    /^      / { sub(/^ +/, ""); print; next }
    /^$/ { print ".PP"; next }
    { print }
  ' >>"$tmp"
done
cat "$static" >>"$tmp"
mv "$tmp" "$out"
