#!/usr/bin/env bash
# Start the metadata database: on the first start, a cluster with user and database
# "airflow" whose password is $WIRELAKE_DB_PASSWORD (read from the environment, then
# forgotten); clients on the compose network log in with it (scram-sha-256).
set -euo pipefail
: "${WIRELAKE_DB_PASSWORD:?set WIRELAKE_DB_PASSWORD (docs/docker.md)}"
bin=$(echo /usr/lib/postgresql/*/bin)
data=/var/lib/wirelake-db/data
if [[ ! -s "$data/PG_VERSION" ]]; then
  umask 077
  printf '%s\n' "$WIRELAKE_DB_PASSWORD" >/tmp/pw
  "$bin/initdb" -D "$data" -U airflow --auth=scram-sha-256 --pwfile=/tmp/pw -E UTF8 >/dev/null
  rm -f /tmp/pw
  echo "host all all 0.0.0.0/0 scram-sha-256" >>"$data/pg_hba.conf"
  "$bin/pg_ctl" -D "$data" -o "-c listen_addresses=''" -w start >/dev/null
  PGPASSWORD="$WIRELAKE_DB_PASSWORD" "$bin/createdb" -U airflow airflow
  "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null
fi
unset WIRELAKE_DB_PASSWORD
exec "$bin/postgres" -D "$data" -c listen_addresses='*' -c unix_socket_directories=/tmp
