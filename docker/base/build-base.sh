#!/usr/bin/env bash
# Stand-in for the official python:3.11-slim-bookworm base image, built from Debian
# packages only, for machines that reach Debian's package mirror but no container registry:
#
#   sudo docker/base/build-base.sh [TAG]          (default TAG: wirelake-base:bookworm)
#   docker build --build-arg BASE_IMAGE=wirelake-base:bookworm -f docker/Dockerfile .
#
# debootstrap writes a minimal Debian bookworm root filesystem with Debian's python3.11 and
# python3.11-venv, which `docker import` turns into an image. Debian installs Python as
# /usr/bin/python3.11; the official image has it at /usr/local/bin, so python, python3 and
# python3.11 are linked there, and PATH, LANG and CMD are those of the official image.
# The host's CA bundle replaces the image's (with pip told to use it) so that a machine
# behind a TLS-inspecting proxy reaches the package index from a build; on a machine
# without one it is the same Mozilla bundle that ca-certificates installs.
# Needs root, debootstrap and a running Docker daemon; takes 2-4 minutes; about 150 MB.
set -euo pipefail

TAG=${1:-wirelake-base:bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
CA_BUNDLE=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}

[[ $(id -u) == 0 ]] || { echo "build-base: run as root (debootstrap)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "build-base: apt-get install debootstrap" >&2; exit 2; }
docker info >/dev/null 2>&1 || { echo "build-base: no Docker daemon answers" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/var/tmp}/wirelake-base.XXXXXX")
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"

echo "build-base: debootstrap bookworm from $MIRROR into $rootfs"
debootstrap --variant=minbase --include=ca-certificates \
  bookworm "$rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 ||
  { tail -n 20 "$work/debootstrap.log" "$rootfs/debootstrap/debootstrap.log" >&2; exit 1; }

# The official image's apt sources (deb822), and its "no cache, no recommends" habits.
rm -f "$rootfs/etc/apt/sources.list"
cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY_MIRROR
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";
EOF
echo 'APT::Install-Recommends "false";' >"$rootfs/etc/apt/apt.conf.d/docker-no-recommends"

# Debian's Python 3.11, installed with apt inside the new root (debootstrap's own
# dependency walk fails to configure python3.11-venv).
cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
mount -t proc proc "$rootfs/proc"
trap 'umount "$rootfs/proc" 2>/dev/null || true; rm -rf "$work"' EXIT
echo "build-base: apt-get install python3.11 python3.11-venv"
chroot "$rootfs" /bin/sh -c 'export DEBIAN_FRONTEND=noninteractive;
  apt-get update -qq && apt-get upgrade -y -qq &&
  apt-get install -y -qq --no-install-recommends python3.11 python3.11-venv' \
  >"$work/apt.log" 2>&1 || { tail -n 30 "$work/apt.log" >&2; exit 1; }
umount "$rootfs/proc"
: >"$rootfs/etc/resolv.conf"  # docker provides its own at run time

# Python where the official image has it.
for name in python python3 python3.11; do
  ln -sf /usr/bin/python3.11 "$rootfs/usr/local/bin/$name"
done

# The host's CA bundle, used by pip too (pip otherwise trusts only its own copy of certifi).
if [[ -s "$CA_BUNDLE" ]]; then
  install -m 0644 "$CA_BUNDLE" "$rootfs/etc/ssl/certs/ca-certificates.crt"
fi
printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$rootfs/etc/pip.conf"

# What an image does not need: package lists and caches, docs, logs of the bootstrap.
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/var/log/* \
  "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
  "$rootfs"/debootstrap "$rootfs"/tmp/* "$rootfs"/root/.cache

echo "build-base: docker import as $TAG"
tar -C "$rootfs" --numeric-owner -c . | docker import \
  --change 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["python3"]' \
  --message "wirelake stand-in for python:3.11-slim-bookworm (debootstrap, Debian python3.11)" \
  - "$TAG" >/dev/null
docker run --rm "$TAG" python3.11 -c \
  'import sys, ssl, venv, ensurepip; print("build-base:", sys.executable, sys.version.split()[0], ssl.OPENSSL_VERSION)'
docker image ls "$TAG" --format 'build-base: {{.Repository}}:{{.Tag}} {{.Size}}'
