#!/usr/bin/env bash
# README.md's header table lists every public header of include/hq/, and
# names no header that is not there. Usage: readme_headers.sh SOURCE_ROOT
set -euo pipefail
root=$1
rc=0
for h in "$root"/include/hq/*.h; do
  name=hq/$(basename "$h")
  grep -q "^| \`$name\` |" "$root/README.md" ||
    { echo "README.md's header table does not list $name"; rc=1; }
done
for name in $(sed -n 's/^| `\(hq\/[a-z_0-9]*\.h\)` |.*/\1/p' "$root/README.md"); do
  [ -f "$root/include/$name" ] ||
    { echo "README.md lists $name, which include/ does not have"; rc=1; }
done
exit $rc
