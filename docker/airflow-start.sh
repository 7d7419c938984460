#!/usr/bin/env bash
# The airflow service of docker/compose.yaml: scheduler, DAG processor, triggerer and API
# server in one container (`airflow standalone`, SQLite metadata in $AIRFLOW_HOME, a named
# volume). Secrets come from the environment at run time, never from the image:
#   AIRFLOW_ADMIN_PASSWORD     password of user "admin" (simple auth manager), required
#   AIRFLOW__CORE__FERNET_KEY  encrypts connections and variables in the metadata database
#   AIRFLOW__API_AUTH__JWT_SECRET, AIRFLOW__API__SECRET_KEY   random per start when unset
set -euo pipefail
cd /opt/wirelake

: "${AIRFLOW_ADMIN_PASSWORD:?set AIRFLOW_ADMIN_PASSWORD (docs/docker.md)}"
: "${AIRFLOW__CORE__FERNET_KEY:?set AIRFLOW__CORE__FERNET_KEY (docs/docker.md)}"
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

airflow db migrate >/dev/null
python dags/dag_factory.py pool  # the Spark pool every spark-submit task takes a slot of
exec airflow standalone
