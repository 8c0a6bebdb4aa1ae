#!/usr/bin/env bash
# Runs the shardgate demo:
#   1. installs what the demo needs if missing (scripts/install-deps.sh demo:
#      MariaDB server and client, Go modules),
#   2. starts a MariaDB for the demo in .local/demo/ (created on first run;
#      reused if one is already running), with the account
#      shardgate/shardgate-pw and the sample database `shop`
#      (examples/sample.sql, reloaded on every run),
#   3. builds .local/bin/shardgate and runs `shardgate serve` in front of it
#      until Ctrl-C, then stops the MariaDB it started.
# Extra arguments are passed to `shardgate serve`.
#
# Environment:
#   SHARDGATE_DEMO_DB_PORT   MariaDB TCP port (default 13306)
#   SHARDGATE_DEMO_LISTEN    proxy address (default 127.0.0.1:6033)
#   SHARDGATE_DEMO_ADMIN     admin HTTP address (default 127.0.0.1:6080)
#   SHARDGATE_SKIP_DEPS=1    do not run scripts/install-deps.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

DB_PORT="${SHARDGATE_DEMO_DB_PORT:-13306}"
LISTEN="${SHARDGATE_DEMO_LISTEN:-127.0.0.1:6033}"
ADMIN="${SHARDGATE_DEMO_ADMIN:-127.0.0.1:6080}"
DB_USER=shardgate
DB_PASSWORD=shardgate-pw

DEMO_DIR="$ROOT/.local/demo"
DATADIR="$DEMO_DIR/data"
SOCKET="$DEMO_DIR/mysqld.sock"
PIDFILE="$DEMO_DIR/mysqld.pid"
PORTFILE="$DEMO_DIR/mysqld.port"
ERRLOG="$DEMO_DIR/mysqld.err"
INIT_MARKER="$DEMO_DIR/.initialized"
BIN="$ROOT/.local/bin/shardgate"

log() { printf 'demo: %s\n' "$*" >&2; }
die() {
	printf 'demo: ERROR: %s\n' "$*" >&2
	exit 1
}

export PATH="${PATH}:/usr/local/sbin:/usr/sbin:/sbin"

[[ "$DB_PORT" =~ ^[0-9]+$ ]] || die "SHARDGATE_DEMO_DB_PORT must be a port number, got '$DB_PORT'"

if [[ "${SHARDGATE_SKIP_DEPS:-0}" != 1 ]]; then
	./scripts/install-deps.sh demo
fi

MARIADBD="$(command -v mariadbd)" || die "mariadbd not found: run scripts/install-deps.sh"
INSTALL_DB="$(command -v mariadb-install-db)" || die "mariadb-install-db not found: run scripts/install-deps.sh"
command -v mariadb >/dev/null 2>&1 || die "mariadb client not found: run scripts/install-deps.sh"
command -v mariadb-admin >/dev/null 2>&1 || die "mariadb-admin not found: run scripts/install-deps.sh"

mkdir -p "$DEMO_DIR"

# A unix socket path must fit in 108 bytes; fall back to /tmp for deep
# checkouts.
if ((${#SOCKET} > 100)); then
	SOCKET="/tmp/shardgate-demo-$(id -u)-$(printf '%s' "$ROOT" | cksum | cut -d' ' -f1).sock"
fi

USER_ARGS=()
if [[ "$(id -u)" -eq 0 ]]; then
	USER_ARGS=(--user=root)
fi

sql() { mariadb --no-defaults --socket="$SOCKET" -uroot; }

# demo_db_pid prints the pid of the running demo mariadbd, if there is one.
demo_db_pid() {
	local pid
	[[ -r "$PIDFILE" ]] || return 1
	pid="$(cat "$PIDFILE" 2>/dev/null || true)"
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	# Guard against a recycled pid: it must be a mariadbd on our datadir.
	if [[ -r "/proc/$pid/cmdline" ]]; then
		tr '\0' '\n' <"/proc/$pid/cmdline" | grep -qxF -- "--datadir=$DATADIR" || return 1
	fi
	printf '%s\n' "$pid"
}

port_in_use() { (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

DB_PID=""
STARTED_DB=0
PROXY_PID=""

stop_db() {
	[[ -n "$DB_PID" ]] || return 0
	log "stopping the demo MariaDB (pid $DB_PID)"
	# mariadbd ignores SIGINT; SIGTERM is a clean shutdown.
	kill -TERM "$DB_PID" 2>/dev/null || true
	(
		sleep 60
		kill -KILL "$DB_PID" 2>/dev/null
	) &
	local watchdog=$!
	wait "$DB_PID" 2>/dev/null || true
	kill "$watchdog" 2>/dev/null || true
	wait "$watchdog" 2>/dev/null || true
	DB_PID=""
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n "$PROXY_PID" ]] && kill -0 "$PROXY_PID" 2>/dev/null; then
		kill -TERM "$PROXY_PID" 2>/dev/null || true
		wait "$PROXY_PID" 2>/dev/null || true
	fi
	if ((STARTED_DB)); then
		stop_db
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- MariaDB ---------------------------------------------------------------

if pid="$(demo_db_pid)"; then
	DB_PID="$pid"
	running_port="$(cat "$PORTFILE" 2>/dev/null || true)"
	if [[ "$running_port" =~ ^[0-9]+$ && "$running_port" != "$DB_PORT" ]]; then
		log "the demo MariaDB is already running on port $running_port (not $DB_PORT); using it"
		DB_PORT="$running_port"
	fi
	log "reusing the running demo MariaDB (pid $DB_PID, port $DB_PORT); it is left running on exit"
else
	if [[ ! -f "$INIT_MARKER" ]]; then
		log "creating the demo MariaDB data directory in ${DATADIR#"$ROOT"/}"
		rm -rf "$DATADIR"
		if ! "$INSTALL_DB" --no-defaults --auth-root-authentication-method=normal \
			--datadir="$DATADIR" --skip-test-db "${USER_ARGS[@]+"${USER_ARGS[@]}"}" \
			>"$DEMO_DIR/install-db.log" 2>&1; then
			tail -n 30 "$DEMO_DIR/install-db.log" >&2 || true
			die "mariadb-install-db failed (full log: $DEMO_DIR/install-db.log)"
		fi
		touch "$INIT_MARKER"
	fi
	if port_in_use "$DB_PORT"; then
		die "port $DB_PORT is already in use by something else; set SHARDGATE_DEMO_DB_PORT to a free port"
	fi
	log "starting the demo MariaDB on 127.0.0.1:$DB_PORT"
	: >"$ERRLOG"
	"$MARIADBD" --no-defaults \
		--datadir="$DATADIR" \
		--socket="$SOCKET" \
		--port="$DB_PORT" \
		--bind-address=127.0.0.1 \
		--pid-file="$PIDFILE" \
		--log-error="$ERRLOG" \
		--skip-log-bin \
		--skip-name-resolve \
		--innodb-buffer-pool-size=128M \
		"${USER_ARGS[@]+"${USER_ARGS[@]}"}" \
		</dev/null >>"$ERRLOG" 2>&1 &
	DB_PID=$!
	STARTED_DB=1
	printf '%s\n' "$DB_PORT" >"$PORTFILE"

	ready=0
	for _ in $(seq 1 600); do
		if ! kill -0 "$DB_PID" 2>/dev/null; then
			break
		fi
		if mariadb-admin --no-defaults --socket="$SOCKET" -uroot --connect-timeout=2 ping >/dev/null 2>&1; then
			ready=1
			break
		fi
		sleep 0.1
	done
	if ((!ready)); then
		tail -n 30 "$ERRLOG" >&2 || true
		die "the demo MariaDB did not start (log: $ERRLOG)"
	fi
fi

log "creating the account $DB_USER and loading examples/sample.sql"
sql <<SQL || die "could not create the $DB_USER account"
CREATE USER IF NOT EXISTS '$DB_USER'@'%' IDENTIFIED BY '$DB_PASSWORD';
ALTER USER '$DB_USER'@'%' IDENTIFIED BY '$DB_PASSWORD';
GRANT ALL PRIVILEGES ON *.* TO '$DB_USER'@'%' WITH GRANT OPTION;
SQL
sql <"$ROOT/examples/sample.sql" || die "could not load examples/sample.sql"

# --- shardgate ---------------------------------------------------------------

run_proxy() {
	log "building .local/bin/shardgate"
	mkdir -p "$(dirname "$BIN")"
	go build -o "$BIN" ./cmd/shardgate || die "go build ./cmd/shardgate failed"

	cat >&2 <<EOF

  shardgate demo
  --------------
  proxy:    $LISTEN -> MariaDB 127.0.0.1:$DB_PORT (database shop)
  connect:  mariadb -h${LISTEN%:*} -P${LISTEN##*:} -u$DB_USER -p$DB_PASSWORD shop
  metrics:  http://$ADMIN/metrics
  ready:    http://$ADMIN/readyz
  MariaDB log: ${ERRLOG#"$ROOT"/}

  Press Ctrl-C to stop.

EOF
	# Run in the background and wait, so that Ctrl-C and SIGTERM reach the
	# trap at once; the trap forwards SIGTERM to shardgate.
	"$BIN" serve \
		--listen "$LISTEN" \
		--backend "$DB_USER:$DB_PASSWORD@127.0.0.1:$DB_PORT/shop" \
		--admin-http "$ADMIN" \
		"$@" &
	PROXY_PID=$!
	local rc=0
	wait "$PROXY_PID" || rc=$?
	PROXY_PID=""
	return "$rc"
}

run_proxy "$@"
