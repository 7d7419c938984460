#!/usr/bin/env bash
# The airflow service of docker/compose.yaml: scheduler, DAG processor, triggerer and API
# server in one container (`airflow standalone`), its metadata on the compose file's
# PostgreSQL service. Secrets come from the environment at run time, never from the image:
#   AIRFLOW_ADMIN_PASSWORD     password of user "admin" (simple auth manager), required
#   AIRFLOW__CORE__FERNET_KEY  encrypts connections and variables in the metadata database
#   WIRELAKE_DB_PASSWORD       the metadata database's password, required
#   AIRFLOW__API_AUTH__JWT_SECRET, AIRFLOW__API__SECRET_KEY   random per start when unset
set -euo pipefail
cd /opt/wirelake

: "${AIRFLOW_ADMIN_PASSWORD:?set AIRFLOW_ADMIN_PASSWORD (docs/docker.md)}"
: "${AIRFLOW__CORE__FERNET_KEY:?set AIRFLOW__CORE__FERNET_KEY (docs/docker.md)}"
: "${WIRELAKE_DB_PASSWORD:?set WIRELAKE_DB_PASSWORD (docs/docker.md)}"
export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="postgresql://airflow:${WIRELAKE_DB_PASSWORD}@${WIRELAKE_DB_HOST:-postgres}/airflow"
unset WIRELAKE_DB_PASSWORD
random_secret() { python -c 'import secrets; print(secrets.token_urlsafe(32))'; }
export AIRFLOW__API_AUTH__JWT_SECRET="${AIRFLOW__API_AUTH__JWT_SECRET:-$(random_secret)}"
export AIRFLOW__API__SECRET_KEY="${AIRFLOW__API__SECRET_KEY:-$(random_secret)}"

# The simple auth manager reads the admin's password from this file (owner-only).
export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS="admin:admin"
export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE="$AIRFLOW_HOME/passwords.json"
umask 077
python -c 'import json, os, sys; json.dump({"admin": os.environ["AIRFLOW_ADMIN_PASSWORD"]}, sys.stdout)' \
  >"$AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"
unset AIRFLOW_ADMIN_PASSWORD
umask 022

for _ in $(seq 60); do  # the database container may still be starting
  airflow db check >/dev/null 2>&1 && break
  sleep 2
done
airflow db migrate >/dev/null
python dags/dag_factory.py pool  # the Spark pool every spark-submit task takes a slot of
exec airflow standalone
