#!/usr/bin/env bash
# Checks tools/completion/hq.bash against the built tool: completes
# subcommands, a subcommand's own words (fleet status), its flags and the
# common flags.
# Usage: test.sh COMPLETION HQ
set -uo pipefail  # Not -e: compgen fails when nothing matches.
source "$1"
hq=$2
fail=0
complete_line() {  # Sets COMPREPLY for the command line "$1".
  read -r -a COMP_WORDS <<<"$1"
  COMP_WORDS[0]=$hq
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _hq
}
expect() {  # expect "WORDS..." WANTED
  complete_line "$1"
  local got=" ${COMPREPLY[*]} "
  if [[ $got != *" $2 "* ]]; then
    echo "completing '$1': wanted '$2', got:$got"
    fail=1
  fi
}
expect "hq st" stat
expect "hq --json sc" scan
expect "hq put q --ded" --dedup_key=
expect "hq stat q --la" --lanes=
expect "hq scan q --fol" --follow
expect "hq scan q --fol" --follow_for=
expect "hq --ver" --version
expect "hq rep" repair
expect "hq backup dest --ver" --verify
expect "hq pen" pending
expect "hq pending q g --aft" --after=
expect "hq pending q g --lim" --limit=
expect "hq pac" pacing
expect "hq pacing q g t --max" --max_in_flight=
expect "hq pacing q g t --inter" --interval=
expect "hq pacing q g t --cle" --clear
expect "hq groups --cons" --consumers
expect "hq groups del" delete
expect "hq groups delete q g --for" --force
expect "hq groups delete q g --keep" --keep_dead_letters
expect "hq fle" fleet
expect "hq fleet st" status
expect "hq --json fleet st" status
expect "hq fleet status --zoo" --zookeeper=
expect "hq fleet status --nat" --nats=
expect "hq fleet status --fle" --fleet=
expect "hq fleet status --part" --partitions=
expect "hq fleet status --time" --timeout=
expect "hq fleet status --js" --json
complete_line "hq ls --lim"  # ls takes no --limit.
if [[ ${#COMPREPLY[@]} -gt 0 ]]; then
  echo "completing 'hq ls --lim': wanted nothing, got: ${COMPREPLY[*]}"
  fail=1
fi
exit $fail
