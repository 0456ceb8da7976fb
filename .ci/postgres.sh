#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for the fence package's tests and prints
#
#   export HOLDFAST_PG_DSN=postgres://postgres@127.0.0.1:54329/postgres?sslmode=disable
#
# on stdout, so that .ci/run can do: eval "$(bash .ci/postgres.sh)".
# Everything else goes to stderr. Idempotent: if a server already accepts
# connections on the port, it is reused. On Debian, as root, Debian's
# postgresql package is installed when no initdb is found. The cluster lives
# in a fresh temporary directory, listens on loopback only, and trusts every
# local and loopback connection: it is for tests, never for data.
#
# Environment: HOLDFAST_PG_PORT (default 54329).
set -euo pipefail

exec 3>&1 1>&2 # fd 3 is the caller's stdout; all chatter goes to stderr.

port="${HOLDFAST_PG_PORT:-54329}"
host=127.0.0.1
dsn="postgres://postgres@${host}:${port}/postgres?sslmode=disable"

log() { echo "postgres.sh: $*"; }

# find_bindir prints the directory holding initdb, pg_ctl and pg_isready.
find_bindir() {
	local d
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
			echo "$d"
			return 0
		fi
	done
	if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
		dirname "$(readlink -f "$(command -v initdb)")"
		return 0
	fi
	return 1
}

bindir="$(find_bindir || true)"
if [ -z "$bindir" ]; then
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
		log "no initdb found and cannot apt-get install postgresql (need root on Debian)"
		exit 1
	fi
	log "installing Debian's postgresql package"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q postgresql
	bindir="$(find_bindir || true)"
	if [ -z "$bindir" ]; then
		log "postgresql installed but no initdb under /usr/lib/postgresql/*/bin"
		exit 1
	fi
fi
log "using $bindir"

ready() { "$bindir/pg_isready" -q -h "$host" -p "$port" -t 2; }

if ready; then
	log "a server already accepts connections on $host:$port; reusing it"
	echo "export HOLDFAST_PG_DSN='$dsn'" >&3
	exit 0
fi

# initdb refuses to run as root: run the server as the postgres user.
as_pg=()
if [ "$(id -u)" = 0 ]; then
	if ! id postgres >/dev/null 2>&1; then
		useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
	fi
	as_pg=(runuser -u postgres --)
fi

root="$(mktemp -d "${TMPDIR:-/tmp}/holdfast-pg.XXXXXX")"
mkdir -p "$root/data" "$root/sock"
if [ "${#as_pg[@]}" -gt 0 ]; then
	chown -R postgres:postgres "$root"
fi
log "creating a cluster in $root/data"
"${as_pg[@]}" "$bindir/initdb" -D "$root/data" -U postgres --auth=trust \
	-E UTF8 --no-sync >"$root/initdb.log" 2>&1 || {
	cat "$root/initdb.log"
	exit 1
}

log "starting on $host:$port (log: $root/server.log)"
# 3>&-: the server must not keep the caller's stdout open, or
# "$(bash .ci/postgres.sh)" would never return.
"${as_pg[@]}" "$bindir/pg_ctl" -D "$root/data" -l "$root/server.log" -w -t 60 \
	-o "-c listen_addresses=$host -p $port -k $root/sock -c fsync=off" \
	start 3>&- </dev/null || {
	cat "$root/server.log"
	exit 1
}

for _ in $(seq 1 60); do
	if ready; then
		log "ready"
		echo "export HOLDFAST_PG_DSN='$dsn'" >&3
		exit 0
	fi
	sleep 1
done
log "server did not accept connections within 60s"
cat "$root/server.log"
exit 1
