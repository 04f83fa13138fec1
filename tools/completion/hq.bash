# bash completion for hq (installed as share/bash-completion/completions/hq).
# Subcommands, their own words (fleet status) and flags come from the tool
# itself (`hq help`, `hq SUBCOMMAND --help`), so they never drift from it.

_hq() {
  local cur=${COMP_WORDS[COMP_CWORD]} sub="" word i
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    if [[ $word != -* ]]; then
      sub=$word
      break
    fi
  done
  if [[ $cur == -* ]]; then
    local flags
    if [[ -n $sub ]]; then
      # "  --name (default: VALUE)": booleans without "=".
      flags=$("${COMP_WORDS[0]}" "$sub" --help 2>/dev/null | awk '/^  --/ {
        d = $3; sub(/\)$/, "", d)
        print (d == "true" || d == "false") ? $1 : $1 "="
      }')
    else
      flags="--db= --json --lock_wait= --width= --version --help"
    fi
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
    if [[ ${COMPREPLY[0]-} == *= ]]; then
      compopt -o nospace 2>/dev/null || true
    fi
    return 0
  fi
  if [[ -z $sub ]]; then
    COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" help 2>/dev/null |
      sed -n 's/^  \([a-z]\+\) .*/\1/p')" -- "$cur"))
    return 0
  fi
  # Right after the subcommand, its own words (hq fleet status): the
  # lower-case words after its name in its usage line.
  if ((i == COMP_CWORD - 1)); then
    local words
    words=$("${COMP_WORDS[0]}" "$sub" --help 2>/dev/null | awk -v name="$sub" '
      NR == 1 {
        for (i = 1; i <= NF && $i != name; i++) {}
        for (i++; i <= NF && $i ~ /^[a-z]+$/; i++) print $i
      }')
    if [[ -n $words ]]; then
      COMPREPLY=($(compgen -W "$words" -- "$cur"))
      return 0
    fi
  fi
  COMPREPLY=($(compgen -f -- "$cur"))  # put QUEUE FILE...
}
complete -F _hq hq
