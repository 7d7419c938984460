#!/usr/bin/env bash
# docker/check.sh: the docker set-up built and run for real, once, on a machine with a Docker
# daemon (root, or a member of the docker group). Not part of ./wirelake test.
#
#   docker/check.sh [--base auto|official|standin|IMAGE] [--sources kafka,hercules]
#                   [--keep-data] [--rmi] [--no-build] [--timeout-minutes N]
#
# Steps (each printed with its time; the first that fails ends the check with exit 1):
#   1  tools: the daemon answers; a compose tool (`docker compose` or docker-compose)
#   2  base image: --base official = python:3.11-slim-bookworm (present or pulled);
#      standin = wirelake-base:bookworm, built by docker/base/build-base.sh if absent (root);
#      auto (default) = official when it can be had, else the stand-in
#   3  build docker/Dockerfile with --build-arg BASE_IMAGE=<base> (the build cache is used;
#      --no-build: take the image $WIRELAKE_IMAGE as it is)
#   4  the image: runs as a non-root user, holds no secret (no airflow.cfg, password file,
#      data/secrets, secret-looking variables or build steps); its size
#   5  a sample day (yesterday, UTC) for each source, written by the project's own writers
#      in a container into a fresh data folder, and a copy of dags/sources.yaml whose
#      start_date is that day
#   6  docker compose up: airflow, spark-master, spark-worker with run-time secrets
#      (random admin password and Fernet key) on free loopback ports
#   7  healthy: Airflow's components and one Spark worker registered with the master
#   8  Airflow UI answers; admin logs in with the run-time password; DAGs parsed
#   9  the day through the DAGs (unpaused: the scheduler runs exactly that day) on the
#      cluster: every task of every run succeeds
#  10  the mounted data folder holds each source's partitions, manifest, validation
#      results and Data Docs; rows per table
#  11  the Spark applications ran on the cluster (master's finished applications)
#  12  every process in the three containers runs as a non-root user
# Cleanup, whatever happened: compose down -v (containers, network, volume), the data folder
# (unless --keep-data), the wirelake image (only with --rmi; base images are kept).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BASE=auto SOURCES=kafka,hercules KEEP_DATA=0 RMI=0 BUILD=1 TIMEOUT_MINUTES=30
while [[ $# -gt 0 ]]; do
  case "$1" in
    --base) BASE=$2; shift 2 ;;
    --sources) SOURCES=$2; shift 2 ;;
    --keep-data) KEEP_DATA=1; shift ;;
    --rmi) RMI=1; shift ;;
    --no-build) BUILD=0; shift ;;
    --timeout-minutes) TIMEOUT_MINUTES=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "check.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
IFS=, read -r -a SOURCE_LIST <<<"$SOURCES"

OFFICIAL=python:3.11-slim-bookworm
STANDIN=wirelake-base:bookworm
export WIRELAKE_IMAGE=${WIRELAKE_IMAGE:-wirelake:local}
export WIRELAKE_DB_IMAGE=${WIRELAKE_DB_IMAGE:-wirelake-postgres:local}
export COMPOSE_PROJECT_NAME=wirelake-check-$$
IMAGE_UID=${WIRELAKE_UID:-1000}
mkdir -p "$ROOT/.tmp"
WORK=$(mktemp -d "$ROOT/.tmp/docker-check.XXXXXX")
export WIRELAKE_DATA_DIR="$WORK/data"
DAY=$(date -u -d yesterday +%F)
COMPOSE=()
STARTED=$(date +%s.%N)
STEP=0 STEPS=12 UP=0

say() { printf '%s\n' "$*"; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

cleanup() {
  local code=$?
  trap - EXIT INT TERM
  if (( UP )); then
    if (( code != 0 )); then
      say "--- last lines of the containers' logs ---"
      "${COMPOSE[@]}" -f "$ROOT/docker/compose.yaml" logs --no-color --tail 40 2>&1 | tail -n 120
    fi
    say "cleanup: compose down -v (containers, network, airflow-home volume)"
    "${COMPOSE[@]}" -f "$ROOT/docker/compose.yaml" down -v --remove-orphans >/dev/null 2>&1 ||
      say "cleanup: compose down failed; containers of project $COMPOSE_PROJECT_NAME may remain"
  fi
  if (( KEEP_DATA )); then
    say "cleanup: data folder kept: $WIRELAKE_DATA_DIR"
    rm -f "$WORK/secrets.env"
  else
    # the containers' user owns what they wrote: remove it from a container when not root
    rm -rf "$WORK" 2>/dev/null || docker run --rm -v "$WORK:/w" --user 0 "$WIRELAKE_IMAGE" \
      rm -rf /w/data >/dev/null 2>&1; rm -rf "$WORK" 2>/dev/null
  fi
  if (( RMI )); then docker image rm "$WIRELAKE_IMAGE" >/dev/null 2>&1 && say "cleanup: removed $WIRELAKE_IMAGE"; fi
  say "docker check $([[ $code == 0 ]] && echo PASSED || echo FAILED) in $(elapsed "$STARTED") s"
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() {  # step TITLE FUNCTION: run it, print its time; the first failure ends the check
  local title=$1 began; shift
  STEP=$((STEP + 1))
  say "[$STEP/$STEPS] $title"
  began=$(date +%s.%N)
  if "$@"; then
    say "[$STEP/$STEPS] ok ($(elapsed "$began") s)"
  else
    say "[$STEP/$STEPS] FAILED after $(elapsed "$began") s: $title"
    exit 1
  fi
}

compose() { "${COMPOSE[@]}" -f "$ROOT/docker/compose.yaml" "$@"; }
pyhost() { python3 "$ROOT/docker/check_stack.py" "$@"; }
in_image() {  # a one-off container of the image with the data folder and docker/ mounted
  docker run --rm -v "$WIRELAKE_DATA_DIR:/data" -v "$ROOT/docker:/check:ro" "$WIRELAKE_IMAGE" "$@"
}

check_tools() {
  docker info --format '    daemon {{.ServerVersion}}, storage {{.Driver}}, cgroup v{{.CgroupVersion}}' || return 1
  if docker compose version >/dev/null 2>&1; then
    COMPOSE=(docker compose)
  elif command -v docker-compose >/dev/null 2>&1; then
    COMPOSE=(docker-compose)
  else
    say "    no compose tool: install the compose plugin, or Debian's docker-compose"; return 1
  fi
  say "    compose: ${COMPOSE[*]} ($("${COMPOSE[@]}" version 2>/dev/null | head -n 1))"
  command -v python3 >/dev/null || { say "    python3 is needed on the host"; return 1; }
  say "    python3: $(python3 --version); data folder $WIRELAKE_DATA_DIR; day $DAY"
}

choose_base() {
  case "$BASE" in
    official|auto)
      if docker image inspect "$OFFICIAL" >/dev/null 2>&1 ||
         timeout 180 docker pull -q "$OFFICIAL" >/dev/null 2>&1; then
        BASE=$OFFICIAL
      elif [[ $BASE == official ]]; then
        say "    $OFFICIAL can neither be found nor pulled"; return 1
      else
        say "    $OFFICIAL cannot be pulled here: using the stand-in $STANDIN"
        BASE=standin
      fi ;;
  esac
  if [[ $BASE == standin ]]; then
    BASE=$STANDIN
    if ! docker image inspect "$STANDIN" >/dev/null 2>&1; then
      "$ROOT/docker/base/build-base.sh" "$STANDIN" || return 1
    fi
  fi
  docker image inspect "$BASE" >/dev/null 2>&1 || { say "    no image $BASE"; return 1; }
  say "    base image $BASE ($(docker image inspect -f '{{.Id}}' "$BASE" | cut -c8-19)," \
      "$(docker image inspect -f '{{.Size}}' "$BASE" | awk '{ printf "%.0f MB", $1 / 1e6 }'))"
}

build_image() {
  local log="$WORK/build.log"
  if (( ! BUILD )); then
    docker image inspect "$WIRELAKE_IMAGE" >/dev/null 2>&1 || { say "    no image $WIRELAKE_IMAGE"; return 1; }
    say "    --no-build: $WIRELAKE_IMAGE as it is"; return 0
  fi
  say "    docker build -f docker/Dockerfile --build-arg BASE_IMAGE=$BASE -t $WIRELAKE_IMAGE . (log $log)"
  if ! docker build -f "$ROOT/docker/Dockerfile" --build-arg "BASE_IMAGE=$BASE" \
       --build-arg "WIRELAKE_UID=$IMAGE_UID" -t "$WIRELAKE_IMAGE" "$ROOT" >"$log" 2>&1; then
    tail -n 30 "$log"; return 1
  fi
  say "    $(grep -c -- '---> Using cache' "$log") step(s) from the build cache," \
      "$(grep -c '^Step ' "$log") step(s) in all"
  say "    docker build -f docker/postgres/Dockerfile -t $WIRELAKE_DB_IMAGE . (the metadata database)"
  if ! docker build -f "$ROOT/docker/postgres/Dockerfile" --build-arg "BASE_IMAGE=$BASE" \
       -t "$WIRELAKE_DB_IMAGE" "$ROOT" >>"$log" 2>&1; then
    tail -n 30 "$log"; return 1
  fi
}

check_image() {
  local user size env secrets
  user=$(docker image inspect -f '{{.Config.User}}' "$WIRELAKE_IMAGE")
  [[ -n $user && $user != root && $user != 0 ]] || { say "    image user is '${user:-root}'"; return 1; }
  env=$(docker image inspect -f '{{range .Config.Env}}{{println .}}{{end}}' "$WIRELAKE_IMAGE")
  secrets=$(grep -iE '^[^=]*(PASSWORD|FERNET|SECRET|TOKEN|JWT)[^=]*=' <<<"$env")
  [[ -z $secrets ]] || { say "    secret-looking variables in the image: $secrets"; return 1; }
  if docker history --no-trunc --format '{{.CreatedBy}}' "$WIRELAKE_IMAGE" |
     grep -iE 'PASSWORD=|FERNET_KEY=|SECRET_KEY=|JWT_SECRET='; then
    say "    a build step sets a secret"; return 1
  fi
  docker run --rm "$WIRELAKE_IMAGE" bash -c '
    found=0
    for path in /opt/airflow/airflow.cfg /opt/airflow/passwords.json \
        /opt/airflow/simple_auth_manager_passwords.json.generated /data/secrets /opt/wirelake/data; do
      [[ -e $path ]] && { echo "    in the image: $path"; found=1; }
    done
    echo "    runs as $(id -un) (uid $(id -u)); /opt/airflow holds $(ls -A /opt/airflow | wc -l) file(s)"
    test -s /opt/wirelake/.venv/spark-classes.jsa && echo "    Spark class archive recorded" || echo "    no Spark class archive"
    exit $found' || return 1
  # (the JSON: a Go template's {{.Size}} overflows at 2 GiB with some client/daemon pairs)
  size=$(docker image inspect "$WIRELAKE_IMAGE" | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["Size"])')
  IMAGE_SIZE=$(awk -v s="$size" 'BEGIN { printf "%.2f GB (%.0f bytes)", s / 1e9, s }')
  say "    image $WIRELAKE_IMAGE: $IMAGE_SIZE, user $user"
}

land_day() {
  mkdir -p "$WIRELAKE_DATA_DIR"
  if [[ $(id -u) == 0 ]]; then
    chown "$IMAGE_UID:$IMAGE_UID" "$WIRELAKE_DATA_DIR"
  elif [[ $(id -u) != "$IMAGE_UID" ]]; then
    say "    the image's uid $IMAGE_UID cannot write $WIRELAKE_DATA_DIR: run as root or set WIRELAKE_UID=$(id -u)"
    return 1
  fi
  in_image python /check/check_lake.py land "$DAY" "${SOURCE_LIST[@]}"
}

compose_up() {
  local python_secret='import base64, os; print(base64.urlsafe_b64encode(os.urandom(32)).decode())'
  AIRFLOW_ADMIN_PASSWORD=$(python3 -c "$python_secret")
  AIRFLOW_FERNET_KEY=$(python3 -c "$python_secret")
  WIRELAKE_DB_PASSWORD=$(python3 -c "$python_secret")
  export AIRFLOW_ADMIN_PASSWORD AIRFLOW_FERNET_KEY WIRELAKE_DB_PASSWORD
  export WIRELAKE_AIRFLOW_PORT WIRELAKE_SPARK_UI_PORT WIRELAKE_BIND=127.0.0.1
  WIRELAKE_AIRFLOW_PORT=$(pyhost free-port) WIRELAKE_SPARK_UI_PORT=$(pyhost free-port)
  export WIRELAKE_CONFIG=/data/_check/sources.yaml WIRELAKE_RETRIES=0
  AIRFLOW_URL=http://127.0.0.1:$WIRELAKE_AIRFLOW_PORT
  SPARK_URL=http://127.0.0.1:$WIRELAKE_SPARK_UI_PORT
  UP=1
  compose up -d --no-build 2>&1 | sed 's/^/    /'
  (( PIPESTATUS[0] == 0 )) || return 1
  say "    project $COMPOSE_PROJECT_NAME: Airflow $AIRFLOW_URL, Spark master UI $SPARK_URL"
}

wait_healthy() { pyhost healthy "$AIRFLOW_URL" "$SPARK_URL" 300; }
check_ui() { pyhost ui "$AIRFLOW_URL" 180; }
run_day() { pyhost run-day "$AIRFLOW_URL" "$DAY" $((TIMEOUT_MINUTES * 60)) "${SOURCE_LIST[@]}"; }
check_outputs() { in_image python /check/check_lake.py outputs "$DAY" "${SOURCE_LIST[@]}"; }
check_spark() {
  # a decode and at least one validate application per source
  pyhost spark-apps "$SPARK_URL" $((2 * ${#SOURCE_LIST[@]}))
}

check_users() {
  local service container bad=0
  for service in airflow spark-master spark-worker; do
    container=$(compose ps -q "$service")
    [[ -n $container ]] || { say "    $service: no container"; bad=1; continue; }
    local uids count
    uids=$(docker top "$container" -eo pid,uid | awk 'NR > 1 { print $2 }' | sort -u | tr '\n' ' ')
    count=$(docker top "$container" -eo pid,uid | tail -n +2 | wc -l)
    say "    $service: $count process(es), uid(s) $uids"
    [[ -n $uids && " $uids " != *" 0 "* ]] || { say "    $service: a process runs as root (or none seen)"; bad=1; }
  done
  return $bad
}

say "wirelake docker check: sources ${SOURCE_LIST[*]}, day $DAY"
step "tools: Docker daemon and compose" check_tools
step "base image ($BASE)" choose_base
step "build the image from docker/Dockerfile" build_image
step "the image: non-root user, no secret, size" check_image
step "sample day $DAY for ${SOURCE_LIST[*]} into the data folder" land_day
step "compose up: airflow, spark-master, spark-worker" compose_up
step "Airflow healthy and a Spark worker registered" wait_healthy
step "Airflow UI answers and admin logs in" check_ui
step "the day through the DAGs on the Spark cluster" run_day
step "partitions, manifests and reports in the mounted data folder" check_outputs
step "the Spark applications ran on the cluster" check_spark
step "every container process runs as a non-root user" check_users
say "image $WIRELAKE_IMAGE: $IMAGE_SIZE"
