# Progress for the long steps of the binaries scripts (sourced, not run). A Go build of Kubernetes
# prints nothing for minutes; without a word now and then, a person cannot tell it from a hang.
#
#   step WHAT EXPECTED    logs "WHAT (EXPECTED)", then, until the next step or the end of the
#                         script, "still WHAT: <time> so far, <time> in all (EXPECTED)" every
#                         ${IMPERSYNC_PROGRESS_INTERVAL:-30} seconds, on stderr.
#   elapsed SECONDS       "4 min 05 s"
#
# The script defines log() (its name, then the message, on stderr) before it sources this file:
#   case "${BASH_SOURCE[0]}" in */*) here="${BASH_SOURCE[0]%/*}" ;; *) here=. ;; esac
#   . "$here/lib/progress.sh"
# The ticker is a background subshell, stopped by the next step and by an EXIT trap; it also ends
# by itself once the script is gone (a SIGKILL runs no trap). It writes to stderr only and closes
# the lock descriptor 9, so that neither the caller's stdout (the folder it reads) nor a build lock
# outlives the script.

# Builtins only until a step runs: the scripts' tests run them with a PATH of bash and cat alone.
printf -v progress_started '%(%s)T' -1
progress_pid=""

elapsed() {
  local s="$1"
  if [ "$s" -lt 60 ]; then echo "$s s"; else printf '%d min %02d s\n' $((s / 60)) $((s % 60)); fi
}

progress_stop() {
  [ -n "$progress_pid" ] || return 0
  kill "$progress_pid" 2>/dev/null || true
  wait "$progress_pid" 2>/dev/null || true
  progress_pid=""
}

step() {
  local what="$1" expected="$2"
  local interval="${IMPERSYNC_PROGRESS_INTERVAL:-30}" script_pid=$$ step_started
  progress_stop
  printf -v step_started '%(%s)T' -1
  log "$what ($expected)"
  (
    set +e
    exec 9>&- </dev/null
    sleeper=""
    trap '[ -n "$sleeper" ] && kill "$sleeper" 2>/dev/null; exit 0' TERM
    while kill -0 "$script_pid" 2>/dev/null; do
      sleep "$interval" </dev/null >/dev/null 2>&1 &
      sleeper=$!
      wait "$sleeper"
      kill -0 "$script_pid" 2>/dev/null || exit 0
      printf -v now '%(%s)T' -1
      log "still $what: $(elapsed $((now - step_started))) so far, $(elapsed $((now - progress_started))) in all ($expected)"
    done
  ) >&2 &
  progress_pid=$!
}

trap progress_stop EXIT
