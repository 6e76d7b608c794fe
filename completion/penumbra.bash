# bash completion for penumbra: subcommands, their options, scenario and profile names.
# Installed as share/bash-completion/completions/penumbra; from a source tree:
#   source completion/penumbra.bash
# Everything is asked of the binary itself (penumbra --list-commands, penumbra COMMAND --help,
# penumbra --data-dir), so a new subcommand or option completes without changing this file.

_penumbra_names() { # $1: a folder of the data directory; the *.json in it, without the suffix
  local data
  data=$("${COMP_WORDS[0]}" --data-dir 2>/dev/null) || return
  local f
  for f in "$data/$1"/*.json; do
    [ -e "$f" ] && basename "$f" .json
  done
}

_penumbra() {
  local cur prev cmd
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD - 1]}
  if [ "$COMP_CWORD" -eq 1 ]; then
    mapfile -t COMPREPLY < <(compgen -W "$("${COMP_WORDS[0]}" --list-commands 2>/dev/null) --help --version" -- "$cur")
    return
  fi
  cmd=${COMP_WORDS[1]}
  case "$prev" in
    -o | --output | -t | --trace | --csv | --e2e-dir)
      compopt -o filenames
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      return ;;
    --profile | -p)
      mapfile -t COMPREPLY < <(compgen -W "$(_penumbra_names hwprofiles)" -- "$cur")
      return ;;
    -f | --format)
      mapfile -t COMPREPLY < <(compgen -W "text json csv" -- "$cur")
      return ;;
    -s | --set)
      mapfile -t COMPREPLY < <(compgen -W "hardware.profile= hardware.num_gpus= parallel.tensor_model_parallel_size= \
        parallel.pipeline_model_parallel_size= training.global_batch_size= training.micro_batch_size=" -- "$cur")
      compopt -o nospace
      return ;;
  esac
  if [[ "$cur" == -* ]]; then
    local opts
    opts=$("${COMP_WORDS[0]}" "$cmd" --help 2>/dev/null | grep -o -- '--[a-z][a-z-]*' | sort -u)
    mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
    return
  fi
  case "$cmd" in
    import | export)
      if [ "$COMP_CWORD" -eq 2 ]; then
        mapfile -t COMPREPLY < <(compgen -W "megatron-args" -- "$cur")
        return
      fi ;;
  esac
  # scenario files: the shipped ones by path, and any *.json or log here
  local data
  data=$("${COMP_WORDS[0]}" --data-dir 2>/dev/null)
  compopt -o filenames
  mapfile -t COMPREPLY < <(compgen -f -X '!*.@(json|log|txt)' -- "$cur"; compgen -d -- "$cur")
  if [ -z "$cur" ] && [ -n "$data" ]; then
    COMPREPLY+=($(printf '%s\n' "$data"/scenarios/*.json))
  fi
}
complete -F _penumbra penumbra
