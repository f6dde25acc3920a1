#!/usr/bin/env bash
# Runs the README's two commands the way a fresh machine would: each in a new clone of this
# repository's HEAD (no .venv, no build/), with an empty pip cache, an empty Maven local
# repository and an empty ~/.cache, and prints the wall time of every step. Run it whenever
# scripts/bootstrap.sh, pyproject.toml or the cluster's Maven resolution changes: the
# everyday commands reuse caches that hide a missing step.
#
#   main  scripts/main.sh in clone main/ (the pipeline over a cluster it starts)
#   test  scripts/bootstrap.sh, what scripts/test.sh begins with, in clone test/;
#         with --full the whole scripts/test.sh (about 25 minutes more)
#   warm  with --warm: scripts/main.sh, then scripts/bootstrap.sh, again in main/ with the
#         caches the first run filled (what a developer's second run costs)
#
# Usage: scripts/fresh_check.sh [--full] [--warm] [--keep] [-- main.sh arguments]
# Debian packages are the machine's: bootstrap installs what is missing, as in every run.
# Committed files only: uncommitted changes are not in the clones. Takes about 13 minutes
# on two cores (PySpark is downloaded twice). The directory (3 GB) is removed at the end
# unless --keep is given or a step failed. TMPDIR chooses where it goes; PYTHON the
# interpreter the virtualenvs are made from (default: Debian's /usr/bin/python3, the one a
# fresh machine has, not a pyenv or virtualenv python3 earlier on PATH).
set -euo pipefail

full=0 warm=0 keep=0
main_args=()
while (($#)); do
  case "$1" in
    --full) full=1 ;;
    --warm) warm=1 ;;
    --keep) keep=1 ;;
    --) shift; main_args=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option '$1' (--full, --warm, --keep, -- main.sh arguments)" >&2; exit 2 ;;
  esac
  shift
done

source_tree=$(cd "$(dirname "$0")/.." && pwd)
# The object store shared by all work trees; HEAD is this work tree's commit.
origin=$(git -C "$source_tree" rev-parse --path-format=absolute --git-common-dir)
head=$(git -C "$source_tree" rev-parse HEAD)
if [[ -n $(git -C "$source_tree" status --porcelain --untracked-files=no) ]]; then
  echo "[fresh] note: uncommitted changes in $source_tree are not part of this check" >&2
fi

root=$(mktemp -d "${TMPDIR:-/tmp}/tubemq-fresh.XXXXXX")
finished=0
cleanup() {
  if ((finished && !keep)); then
    rm -rf "$root"
  else
    echo "[fresh] kept $root (clones, caches and logs/)" >&2
  fi
}
trap cleanup EXIT
mkdir -p "$root/logs"

log() { printf '[fresh] %s\n' "$*"; }

# A PATH without anything from the source work tree (an activated .venv of it would
# otherwise provide python3 and pip to the clone).
clean_path=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v -F "$source_tree" | paste -sd: -)
if [[ -z ${PYTHON:-} && -x /usr/bin/python3 ]]; then PYTHON=/usr/bin/python3; fi

summary=()

new_clone() {  # <name>: a clone of HEAD with caches of its own, all empty
  local dir="$root/$1"
  git clone --quiet --no-checkout "$origin" "$dir/src"
  git -C "$dir/src" checkout --quiet --detach "$head"
  mkdir -p "$dir/pip-cache" "$dir/m2/repository" "$dir/cache"
}

in_clone() {  # <name> <command...>: runs the command in the clone with its own caches
  local dir="$root/$1"
  shift
  (
    cd "$dir/src"
    # Nothing of this machine's or this session's state: a fresh user has none of it.
    unset VIRTUAL_ENV PYTHONPATH PIP_FIND_LINKS PIP_NO_INDEX PIP_REQUIRE_VIRTUALENV \
      TUBEMQ_MASTER TUBEMQ_TEST_CLUSTER_DIR TUBEMQ_BENCH_CLUSTER_DIR PYSPARK_PYTHON
    export PATH="$clean_path"
    export PIP_CACHE_DIR="$dir/pip-cache"
    export XDG_CACHE_HOME="$dir/cache"
    # The cluster harness (python/tubemq/cluster/maven.py) resolves the server and client
    # jars into this repository and keeps its copy of them inside it.
    export TUBEMQ_MAVEN_REPO="$dir/m2/repository"
    if [[ -n ${PYTHON:-} ]]; then export PYTHON; fi
    "$@"
  )
}

timed() {  # <label> <clone> <command...>: runs, logs and times one step
  local label=$1 clone=$2
  shift 2
  local logfile="$root/logs/${label// /-}.log"
  log "$label: $* (in $root/$clone/src, log $logfile)"
  local began=$SECONDS
  if ! in_clone "$clone" "$@" 2>&1 | tee "$logfile"; then
    log "$label FAILED after $((SECONDS - began)) s; see $logfile"
    exit 1
  fi
  summary+=("$(printf '%-24s %5d s' "$label" $((SECONDS - began)))")
  log "$label: done in $((SECONDS - began)) s"
}

check_repository() {  # <clone>: the cluster's jars came from the clone's own repository
  local dir="$root/$1" repo="$root/$1/m2/repository"
  local in_repo lib
  in_repo=$(find "$repo" -name '*.jar' -not -path '*/.tubemq-python/*' -printf '%f\n' | sort -u)
  lib=$(in_clone "$1" .venv/bin/python -c '
from tubemq.cluster import maven
print(maven.cache_dir())
for jar in maven.server_classpath():
    print(jar)')
  local cache_dir=${lib%%$'\n'*}
  local jars
  jars=$(printf '%s\n' "$lib" | tail -n +2)
  if [[ $cache_dir != "$repo"/* ]]; then
    log "the harness keeps its jars in $cache_dir, outside $repo"
    exit 1
  fi
  if [[ -z $jars ]] || [[ -n $(printf '%s\n' "$jars" | grep -v -F "$cache_dir/lib/") ]]; then
    log "the classpath is not (only) $cache_dir/lib:"$'\n'"$jars"
    exit 1
  fi
  local missing
  missing=$(comm -23 <(printf '%s\n' "$jars" | xargs -n1 basename | sort -u) \
    <(printf '%s\n' "$in_repo"))
  if [[ -n $missing ]]; then
    log "jars of the classpath that are not in $repo:"$'\n'"$missing"
    exit 1
  fi
  log "Maven repository $repo: $(printf '%s\n' "$in_repo" | grep -c .) jars," \
    "$(du -sh "$repo" | cut -f1); the classpath's $(printf '%s\n' "$jars" | grep -c .) jars" \
    "are copies of them in $cache_dir/lib"
  find "$repo" -path '*/org/apache/inlong/*' -name '*.jar' -printf '[fresh]   %P\n'
  log "pip cache $dir/pip-cache: $(du -sh "$dir/pip-cache" | cut -f1)"
}

log "HEAD $head of $source_tree into $root; python: ${PYTHON:-python3 on PATH}"

new_clone main
timed "fresh main" main scripts/main.sh "${main_args[@]}"
grep -E '^  result ' "$root/logs/fresh-main.log" | grep -q 'OK' || {
  log "the main job printed no OK result"
  exit 1
}
check_repository main

new_clone test
if ((full)); then
  timed "fresh test" test scripts/test.sh
  check_repository test
else
  timed "fresh test bootstrap" test scripts/bootstrap.sh
  log "Maven repository of test/ after bootstrap (needs none):" \
    "$(find "$root/test/m2/repository" -type f | wc -l) files"
fi

if ((warm)); then
  timed "warm main" main scripts/main.sh "${main_args[@]}"
  timed "warm bootstrap" main scripts/bootstrap.sh
fi

finished=1
log "summary (HEAD $head):"
printf '[fresh]   %s\n' "${summary[@]}"
