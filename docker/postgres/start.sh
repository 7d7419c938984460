#!/usr/bin/env bash
# Start the metadata database: on the first start, a cluster with user and database
# "airflow" whose password is $WIRELAKE_DB_PASSWORD (read from the environment, then
# forgotten); clients on the compose network log in with it (scram-sha-256).
set -euo pipefail
: "${WIRELAKE_DB_PASSWORD:?set WIRELAKE_DB_PASSWORD (docs/docker.md)}"
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)  # the newest installed
data=${WIRELAKE_DB_DATA:-/var/lib/wirelake-db/data}  # the named volume's cluster
port=${WIRELAKE_DB_PORT:-5432}
if [[ ! -s "$data/PG_VERSION" ]]; then
  umask 077
  password_file=$(mktemp)
  printf '%s\n' "$WIRELAKE_DB_PASSWORD" >"$password_file"
  "$bin/initdb" -D "$data" -U airflow --auth=scram-sha-256 --pwfile="$password_file" -E UTF8 >/dev/null
  rm -f "$password_file"
  echo "host all all 0.0.0.0/0 scram-sha-256" >>"$data/pg_hba.conf"
  sockets=$(mktemp -d)
  "$bin/pg_ctl" -D "$data" -o "-c listen_addresses='' -k $sockets -p $port" -w start >/dev/null
  PGPASSWORD="$WIRELAKE_DB_PASSWORD" "$bin/createdb" -h "$sockets" -p "$port" -U airflow airflow
  "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null
  rmdir "$sockets"
fi
unset WIRELAKE_DB_PASSWORD
exec "$bin/postgres" -D "$data" -c listen_addresses="${WIRELAKE_DB_LISTEN:-*}" -p "$port" \
  -c unix_socket_directories=/tmp
