#!/usr/bin/env bash
# Runs the shardgate demo:
#   1. installs what the demo needs if missing (scripts/install-deps.sh demo:
#      MariaDB server and client, Go modules),
#   2. starts MariaDB servers for the demo under .local/demo/ (created on
#      first run; reused if already running), each with the account
#      shardgate/shardgate-pw:
#        sharded (the default): shards s0 (a primary and a replica) and s1
#        (… s<N-1>), holding the sharded sample database `shop`
#        (examples/sharded-schema.sql and examples/sharded-data.sql, both
#        run through shardgate on every run: its DDL fans out to the
#        sub-tables);
#        SHARDGATE_DEMO_SHARDS=0: one server with examples/sample.sql,
#   3. builds .local/bin/shardgate, runs it in front of them and prints
#      queries to try, until Ctrl-C; then stops the MariaDB servers it
#      started.
# However it is stopped (Ctrl-C, also with its output piped into another
# program that Ctrl-C ends first; SIGTERM; SIGHUP when its terminal goes
# away), it stops shardgate and the servers before it exits. A demo that
# could not (kill -9) leaves pid files under the demo directory: the next
# run stops the shardgate it left and reuses its servers, and stops them
# on exit. While a demo runs, another one with the same directory refuses
# to start.
# Extra arguments are passed to `shardgate serve`.
#
# Environment:
#   SHARDGATE_DEMO_SHARDS    number of shards, 2 or more (default 2); 0: one unsharded server
#   SHARDGATE_DEMO_DB_PORT   first MariaDB TCP port (default 13306); shard s0's replica and
#                            the other shards take the next ports
#   SHARDGATE_DEMO_LISTEN    proxy address (default 127.0.0.1:6033)
#   SHARDGATE_DEMO_ADMIN     admin HTTP address (default 127.0.0.1:6080): status page,
#                            /api, /metrics
#   SHARDGATE_DEMO_ADMIN_SQL admin SQL port of the sharded demo (default 127.0.0.1:6034)
#   SHARDGATE_DEMO_DIR       where the servers live (default .local/demo)
#   SHARDGATE_DEMO_CHECK=1   run the queries to try, print their answers and stop
#                            (scripts/demo.sh as a test)
#   SHARDGATE_SKIP_DEPS=1    do not run scripts/install-deps.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

DB_PORT="${SHARDGATE_DEMO_DB_PORT:-13306}"
LISTEN="${SHARDGATE_DEMO_LISTEN:-127.0.0.1:6033}"
ADMIN="${SHARDGATE_DEMO_ADMIN:-127.0.0.1:6080}"
ADMIN_SQL="${SHARDGATE_DEMO_ADMIN_SQL:-127.0.0.1:6034}"
ADMIN_USER=ops
ADMIN_PASSWORD=ops-pw
SHARDS="${SHARDGATE_DEMO_SHARDS:-2}"
CHECK="${SHARDGATE_DEMO_CHECK:-0}"
DB_USER=shardgate
DB_PASSWORD=shardgate-pw
# Sub-tables of each sharded table per shard (schemas: in the configuration).
SUB_TABLES=4

DEMO_DIR="${SHARDGATE_DEMO_DIR:-$ROOT/.local/demo}"
BIN="$ROOT/.local/bin/shardgate"
# log never fails: after Ctrl-C through a pipe (demo.sh | tee) or the loss
# of its terminal, stderr may be a closed pipe or a hung-up terminal, and
# the cleanup must go on to stop the servers rather than die on a write.
log() { printf 'demo: %s\n' "$*" >&2 2>/dev/null || true; }
die() {
	printf 'demo: ERROR: %s\n' "$*" >&2 2>/dev/null || true
	exit 1
}

export PATH="${PATH}:/usr/local/sbin:/usr/sbin:/sbin"

[[ "$DB_PORT" =~ ^[0-9]+$ ]] || die "SHARDGATE_DEMO_DB_PORT must be a port number, got '$DB_PORT'"
[[ "$SHARDS" =~ ^[0-9]+$ && "$SHARDS" != 1 ]] || die "SHARDGATE_DEMO_SHARDS must be 0 (unsharded) or 2 or more, got '$SHARDS'"

if [[ "${SHARDGATE_SKIP_DEPS:-0}" != 1 ]]; then
	./scripts/install-deps.sh demo
fi

MARIADBD="$(command -v mariadbd)" || die "mariadbd not found: run scripts/install-deps.sh"
INSTALL_DB="$(command -v mariadb-install-db)" || die "mariadb-install-db not found: run scripts/install-deps.sh"
command -v mariadb >/dev/null 2>&1 || die "mariadb client not found: run scripts/install-deps.sh"
command -v mariadb-admin >/dev/null 2>&1 || die "mariadb-admin not found: run scripts/install-deps.sh"

mkdir -p "$DEMO_DIR"

USER_ARGS=()
if [[ "$(id -u)" -eq 0 ]]; then
	USER_ARGS=(--user=root)
fi

# Each demo server NAME lives in its own directory (the one-server demo,
# "main", in $DEMO_DIR itself, as before shards), with its socket, pid,
# port and log.
declare -A DB_PIDS=() DB_PORTS=() STARTED=()
SERVERS=()

server_dir() { if [[ "$1" == main ]]; then printf '%s\n' "$DEMO_DIR"; else printf '%s\n' "$DEMO_DIR/$1"; fi; }

# A unix socket path must fit in 108 bytes; fall back to /tmp for deep
# checkouts.
server_socket() {
	local sock
	sock="$(server_dir "$1")/mysqld.sock"
	if ((${#sock} > 100)); then
		sock="/tmp/shardgate-demo-$(id -u)-$(printf '%s' "$DEMO_DIR" | cksum | cut -d' ' -f1)-$1.sock"
	fi
	printf '%s\n' "$sock"
}

# sql NAME runs its standard input on demo server NAME as root.
sql() { mariadb --no-defaults --socket="$(server_socket "$1")" -uroot "${@:2}"; }

# demo_db_pid NAME prints the pid of the running demo mariadbd NAME, if any.
demo_db_pid() {
	local pid dir
	dir="$(server_dir "$1")"
	[[ -r "$dir/mysqld.pid" ]] || return 1
	pid="$(cat "$dir/mysqld.pid" 2>/dev/null || true)"
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	alive "$pid" || return 1
	# Guard against a recycled pid: it must be a mariadbd on our datadir.
	if [[ -r "/proc/$pid/cmdline" ]]; then
		tr '\0' '\n' <"/proc/$pid/cmdline" | grep -qxF -- "--datadir=$dir/data" || return 1
	fi
	printf '%s\n' "$pid"
}

port_in_use() { (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The demo's own pid and its shardgate's, for a later run to find what a
# demo that could not clean up (kill -9) left running.
DEMO_PIDFILE="$DEMO_DIR/demo.pid"
PROXY_PIDFILE="$DEMO_DIR/shardgate.pid"
PROXY_PID=""

# running_cmd PID WORD… succeeds when PID is a live process whose command
# line has each WORD as an argument of its own (a recycled pid is someone
# else's).
running_cmd() {
	local pid="$1" args word
	shift
	[[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid" || return 1
	args="$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
	for word in "$@"; do
		grep -qxF -- "$word" <<<"$args" || return 1
	done
}

# running_demo PID succeeds when PID is a demo.sh running from this
# checkout (it works in $ROOT).
running_demo() {
	[[ "$1" =~ ^[0-9]+$ ]] && alive "$1" || return 1
	[[ "$(readlink "/proc/$1/cwd" 2>/dev/null)" == "$(cd "$ROOT" && pwd -P)" ]] || return 1
	tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null | grep -q '\(^\|/\)demo\.sh$'
}

# alive PID succeeds while PID runs: a zombie has ended (an orphan's
# zombie stays until whoever adopted it reaps it, if ever).
alive() {
	local stat
	stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
	stat="${stat##*) }"
	[[ "${stat%% *}" != Z ]]
}

# stop_pid PID NAME stops process PID (a child or not) with SIGTERM and
# waits for it to be gone, with SIGKILL after 60 s.
stop_pid() {
	local pid="$1" name="$2" i
	log "stopping $name (pid $pid)"
	kill -TERM "$pid" 2>/dev/null || return 0
	if wait "$pid" 2>/dev/null; then
		return 0 # a child, now reaped
	fi
	# Not a child (left by an earlier demo) or one that ended with a
	# signal: poll until it is gone.
	for ((i = 0; i < 600; i++)); do
		alive "$pid" || return 0
		sleep 0.1
	done
	log "$name (pid $pid) did not stop within 60 s of SIGTERM: killing it"
	kill -KILL "$pid" 2>/dev/null || true
}

stop_db() {
	local name="$1" pid="${DB_PIDS[$1]:-}"
	# Started but killed before its pid was noted: mariadbd's pid file.
	[[ -n "$pid" ]] || pid="$(demo_db_pid "$name")" || return 0
	# mariadbd ignores SIGINT; SIGTERM is a clean shutdown.
	stop_pid "$pid" "the demo MariaDB $name"
	DB_PIDS[$name]=""
}

cleanup() {
	local rc=$? name
	# Nothing may interrupt the cleanup: a second Ctrl-C, the SIGHUP of a
	# closing terminal, or a write to a closed pipe (ignored, the write
	# fails instead, and log ignores that).
	trap '' INT TERM HUP PIPE QUIT
	trap - EXIT
	set +e
	if [[ -n "$PROXY_PID" ]] && kill -0 "$PROXY_PID" 2>/dev/null; then
		stop_pid "$PROXY_PID" shardgate
	fi
	rm -f "$PROXY_PIDFILE"
	for name in "${SERVERS[@]+"${SERVERS[@]}"}"; do
		if [[ -n "${STARTED[$name]:-}" ]]; then
			stop_db "$name"
		fi
	done
	if [[ "$(cat "$DEMO_PIDFILE" 2>/dev/null)" == "$$" ]]; then
		rm -f "$DEMO_PIDFILE"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
trap 'exit 131' QUIT
trap 'exit 141' PIPE

# One demo per directory: a live one owns the servers (and its shardgate
# the ports); one that is gone left them to this run.
if owner="$(cat "$DEMO_PIDFILE" 2>/dev/null)" && [[ "$owner" != "$$" ]] && running_demo "$owner"; then
	# (exit without the cleanup: nothing here is this run's to stop)
	trap - EXIT
	die "a demo is already running with ${DEMO_DIR#"$ROOT"/} (pid $owner): stop it first (Ctrl-C where it runs, or kill $owner)"
fi
printf '%s\n' "$$" >"$DEMO_PIDFILE"
if left="$(cat "$PROXY_PIDFILE" 2>/dev/null)" && running_cmd "$left" "$BIN" serve; then
	stop_pid "$left" "the shardgate an earlier demo left running"
fi
rm -f "$PROXY_PIDFILE"

# --- MariaDB ---------------------------------------------------------------

# start_db NAME PORT [mariadbd args…] starts demo server NAME on PORT, or
# reuses it when it is already running, and gives it the demo account.
start_db() {
	local name="$1" port="$2" dir pid running_port
	shift 2
	dir="$(server_dir "$name")"
	mkdir -p "$dir"
	SERVERS+=("$name")
	if pid="$(demo_db_pid "$name")"; then
		# Left by an earlier demo (a live one would have stopped this
		# run): this run reuses it, and stops it on exit.
		DB_PIDS[$name]="$pid"
		STARTED[$name]=1
		running_port="$(cat "$dir/mysqld.port" 2>/dev/null || true)"
		if [[ "$running_port" =~ ^[0-9]+$ && "$running_port" != "$port" ]]; then
			log "the demo MariaDB $name is already running on port $running_port (not $port); using it"
			port="$running_port"
		fi
		DB_PORTS[$name]="$port"
		log "reusing the demo MariaDB $name an earlier demo left running (pid $pid, port $port); it is stopped on exit"
		return 0
	fi
	if [[ ! -f "$dir/.initialized" ]]; then
		log "creating the demo MariaDB data directory in ${dir#"$ROOT"/}/data"
		rm -rf "$dir/data"
		if ! "$INSTALL_DB" --no-defaults --auth-root-authentication-method=normal \
			--datadir="$dir/data" --skip-test-db "${USER_ARGS[@]+"${USER_ARGS[@]}"}" \
			>"$dir/install-db.log" 2>&1; then
			tail -n 30 "$dir/install-db.log" >&2 || true
			die "mariadb-install-db failed (full log: $dir/install-db.log)"
		fi
		touch "$dir/.initialized"
	fi
	if port_in_use "$port"; then
		die "port $port is already in use by something else; set SHARDGATE_DEMO_DB_PORT to a free port (the demo uses it and the ports after it)"
	fi
	log "starting the demo MariaDB $name on 127.0.0.1:$port"
	: >"$dir/mysqld.err"
	STARTED[$name]=1 # before its pid is known: stop_db then reads its pid file
	"$MARIADBD" --no-defaults \
		--datadir="$dir/data" \
		--socket="$(server_socket "$name")" \
		--port="$port" \
		--bind-address=127.0.0.1 \
		--pid-file="$dir/mysqld.pid" \
		--log-error="$dir/mysqld.err" \
		--skip-name-resolve \
		--innodb-buffer-pool-size=128M \
		"$@" \
		"${USER_ARGS[@]+"${USER_ARGS[@]}"}" \
		</dev/null >>"$dir/mysqld.err" 2>&1 &
	pid=$!
	DB_PIDS[$name]="$pid"
	DB_PORTS[$name]="$port"
	printf '%s\n' "$port" >"$dir/mysqld.port"

	local ready=0
	for _ in $(seq 1 600); do
		if ! kill -0 "$pid" 2>/dev/null; then
			break
		fi
		if mariadb-admin --no-defaults --socket="$(server_socket "$name")" -uroot --connect-timeout=2 ping >/dev/null 2>&1; then
			ready=1
			break
		fi
		sleep 0.1
	done
	if ((!ready)); then
		tail -n 30 "$dir/mysqld.err" >&2 || true
		die "the demo MariaDB $name did not start (log: $dir/mysqld.err)"
	fi
}

# create_account NAME gives server NAME the demo account, kept out of the
# binary log so that a replica can make its own.
create_account() {
	sql "$1" <<SQL || die "could not create the $DB_USER account on $1"
SET sql_log_bin = 0;
CREATE USER IF NOT EXISTS '$DB_USER'@'%' IDENTIFIED BY '$DB_PASSWORD';
ALTER USER '$DB_USER'@'%' IDENTIFIED BY '$DB_PASSWORD';
GRANT ALL PRIVILEGES ON *.* TO '$DB_USER'@'%' WITH GRANT OPTION;
SQL
}

# replicate REPLICA PRIMARY makes REPLICA follow PRIMARY (GTID), unless it
# already does.
replicate() {
	if [[ -n "$(sql "$1" -N -e 'SHOW SLAVE STATUS')" ]]; then
		return 0
	fi
	local pos
	pos="$(sql "$2" -N -e 'SELECT @@gtid_binlog_pos')"
	log "making $1 a replica of $2"
	sql "$1" <<SQL || die "could not make $1 a replica of $2"
SET GLOBAL gtid_slave_pos = '$pos';
CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=${DB_PORTS[$2]}, MASTER_USER='$DB_USER',
  MASTER_PASSWORD='$DB_PASSWORD', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1;
START SLAVE;
SQL
}

# wait_replica REPLICA PRIMARY waits until REPLICA has what PRIMARY wrote.
wait_replica() {
	local pos
	pos="$(sql "$2" -N -e 'SELECT @@gtid_binlog_pos')"
	[[ "$(sql "$1" -N -e "SELECT MASTER_GTID_WAIT('$pos', 30)")" == 0 ]] || die "replica $1 did not catch up with $2"
}

REPLICATION_ARGS=(--log-bin=mysql-bin --binlog-format=ROW --log-slave-updates=ON --gtid-strict-mode=ON --relay-log=relay-bin)

# start_shards starts the shards: s0 with a replica (s0r), s1 … s<N-1>.
start_shards() {
	local i
	start_db s0 "$DB_PORT" --server-id=1 "${REPLICATION_ARGS[@]}"
	start_db s0r "$((DB_PORT + 1))" --server-id=2 --read-only=ON "${REPLICATION_ARGS[@]}"
	for ((i = 1; i < SHARDS; i++)); do
		start_db "s$i" "$((DB_PORT + 1 + i))" --server-id="$((2 + i))" --skip-log-bin
	done
	for name in "${SERVERS[@]}"; do
		create_account "$name"
	done
	replicate s0r s0
}

# --- the sharded sample schema -------------------------------------------------

SHARDED_TABLES=(customers orders) # sharded: customers by id, orders like it by customer_id
REFERENCE_TABLES=(products)

shard_list() {
	local i out="s0"
	for ((i = 1; i < SHARDS; i++)); do out+=", s$i"; done
	printf '%s\n' "$out"
}

# write_config writes shardgate's configuration for the shards.
write_config() {
	local i cfg="$DEMO_DIR/shardgate.yaml"
	{
		cat <<EOF
# Written by scripts/demo.sh on every run.
listeners: [{address: "$LISTEN"}]
admin:
  http: "$ADMIN"
  sql: "$ADMIN_SQL"
  users:
    - {name: $ADMIN_USER, password_hash: '$("$BIN" hash-password "$ADMIN_PASSWORD")'}
users:
  - {name: $DB_USER, password_hash: '$("$BIN" hash-password "$DB_PASSWORD")', default_database: shop}
clusters:
  - name: s0
    user: $DB_USER
    password: $DB_PASSWORD
    primary: {address: "127.0.0.1:${DB_PORTS[s0]}"}
    replicas: [{address: "127.0.0.1:${DB_PORTS[s0r]}"}]
EOF
		for ((i = 1; i < SHARDS; i++)); do
			printf '  - {name: s%d, user: %s, password: %s, primary: {address: "127.0.0.1:%s"}}\n' \
				"$i" "$DB_USER" "$DB_PASSWORD" "${DB_PORTS[s$i]}"
		done
		cat <<EOF
schemas:
  - name: shop
    default_cluster: s0
    tables:
      - {name: customers, shard_key: id, rule: hash, shards: [$(shard_list)], sub_tables: $SUB_TABLES}
      - {name: orders, shard_key: customer_id, like: customers}
      - {name: products, type: reference}
EOF
	} >"$cfg"
	printf '%s\n' "$cfg"
}

# create_schema creates the sample database through shardgate: CREATE
# DATABASE goes to every shard, and each CREATE TABLE of
# examples/sharded-schema.sql fans out to the sub-tables of a sharded
# table (customers_0000 … on the shard holding each) or to every shard for
# a reference table; shardgate learns the shard keys' types as it answers.
create_schema() {
	log "creating the sharded schema shop through shardgate: ${SHARDED_TABLES[*]} in $SUB_TABLES sub-tables per shard, ${REFERENCE_TABLES[*]} on every shard"
	{
		echo "DROP DATABASE IF EXISTS shop;"
		echo "CREATE DATABASE shop CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci;"
		echo "USE shop;"
		cat "$ROOT/examples/sharded-schema.sql"
	} | proxy_sql_nodb || die "could not create the sharded schema through shardgate"
}

# proxy_sql_nodb runs its standard input through shardgate, without a
# database: the schema's may not exist yet.
proxy_sql_nodb() {
	mariadb --no-defaults --comments -h"${LISTEN%:*}" -P"${LISTEN##*:}" -u"$DB_USER" -p"$DB_PASSWORD" "$@"
}

# proxy_sql runs its standard input through shardgate, in database shop.
proxy_sql() { proxy_sql_nodb "$@" shop; }

# admin_sql runs its arguments' statements on shardgate's admin SQL port.
admin_sql() {
	mariadb --no-defaults -h"${ADMIN_SQL%:*}" -P"${ADMIN_SQL##*:}" -u"$ADMIN_USER" -p"$ADMIN_PASSWORD" "$@"
}

wait_for_proxy() {
	for _ in $(seq 1 300); do
		if ! kill -0 "$PROXY_PID" 2>/dev/null; then
			die "shardgate exited"
		fi
		if proxy_sql_nodb -N -e 'SELECT 1' >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	die "shardgate did not accept connections on $LISTEN"
}

# The queries the demo suggests, each with what it shows.
TRY_QUERIES=(
	"SELECT * FROM customers WHERE id = 7"
	"SELECT c.name, o.id, o.quantity, p.name AS product FROM customers c JOIN orders o ON o.customer_id = c.id JOIN products p ON p.id = o.product_id WHERE c.id = 1"
	"SELECT id, name FROM customers WHERE country = 'GB'"
	"SELECT id, name FROM customers WHERE id IN (2, 5, 11)"
	"SELECT name, price FROM products WHERE id = 3"
	"UPDATE customers SET country = 'SE' WHERE id = 14"
	"/* shardgate:shard=s1 */ SELECT id, name FROM customers_0004"
	"SELECT id, name FROM customers ORDER BY id DESC LIMIT 3"
	"SELECT country, COUNT(*) AS customers FROM customers GROUP BY country ORDER BY customers DESC, country LIMIT 3"
)
TRY_NOTES=(
	"one key: one sub-table on one shard"
	"a join on the shard key, with a reference table: runs on the customer's shard"
	"no key: every sub-table, rows streamed as one result"
	"keys on several shards"
	"a reference table: any one shard"
	"a write routed by its key"
	"a hint sends a statement to one shard as written"
	"a merge across shards: sorted and limited as one server would"
	"grouped and counted across shards, then the top 3"
)

print_queries() {
	local i
	echo "  queries to try:"
	for i in "${!TRY_QUERIES[@]}"; do
		printf '    %-72s -- %s\n' "${TRY_QUERIES[$i]};" "${TRY_NOTES[$i]}"
	done
}

# check_queries runs the queries to try and prints their answers (an
# error is printed, not fatal: the last one is meant to be refused).
check_queries() {
	local q
	for q in "${TRY_QUERIES[@]}"; do
		printf '\n> %s;\n' "$q"
		proxy_sql --table -e "$q" 2>&1 || true
	done
}

# --- shardgate ---------------------------------------------------------------

build_proxy() {
	log "building .local/bin/shardgate"
	mkdir -p "$(dirname "$BIN")"
	go build -o "$BIN" ./cmd/shardgate || die "go build ./cmd/shardgate failed"
}

# wait_proxy waits for shardgate until it exits (Ctrl-C and SIGTERM reach
# the trap at once, which forwards SIGTERM to it).
wait_proxy() {
	local rc=0
	wait "$PROXY_PID" || rc=$?
	PROXY_PID=""
	return "$rc"
}

run_single() {
	local port
	start_db main "$DB_PORT" --skip-log-bin
	port="${DB_PORTS[main]}"
	create_account main
	log "loading examples/sample.sql"
	sql main <"$ROOT/examples/sample.sql" || die "could not load examples/sample.sql"
	build_proxy
	cat >&2 <<EOF

  shardgate demo
  --------------
  proxy:    $LISTEN -> MariaDB 127.0.0.1:$port (database shop)
  connect:  mariadb -h${LISTEN%:*} -P${LISTEN##*:} -u$DB_USER -p$DB_PASSWORD shop
  metrics:  http://$ADMIN/metrics
  ready:    http://$ADMIN/readyz
  MariaDB log: $(server_dir main)/mysqld.err

  Press Ctrl-C to stop.

EOF
	"$BIN" serve \
		--listen "$LISTEN" \
		--backend "$DB_USER:$DB_PASSWORD@127.0.0.1:$port/shop" \
		--admin-http "$ADMIN" \
		"$@" &
	PROXY_PID=$!
	printf '%s\n' "$PROXY_PID" >"$PROXY_PIDFILE"
	if [[ "$CHECK" == 1 ]]; then
		wait_for_proxy
		proxy_sql --table -e "SELECT c.name, p.name, o.quantity FROM orders o JOIN customers c ON c.id = o.customer_id JOIN products p ON p.id = o.product_id WHERE o.id <= 3 ORDER BY o.id"
		return 0
	fi
	wait_proxy
}

run_sharded() {
	local cfg i
	start_shards
	build_proxy
	cfg="$(write_config)"
	"$BIN" serve --config "$cfg" "$@" &
	PROXY_PID=$!
	printf '%s\n' "$PROXY_PID" >"$PROXY_PIDFILE"
	wait_for_proxy
	create_schema
	log "loading examples/sharded-data.sql through shardgate"
	proxy_sql <"$ROOT/examples/sharded-data.sql" || die "could not load examples/sharded-data.sql through shardgate"
	wait_replica s0r s0
	{
		cat <<EOF

  shardgate sharded demo
  ----------------------
  proxy:    $LISTEN, database shop, sharded over $SHARDS shards (configuration: ${cfg#"$ROOT"/})
EOF
		printf '  shard s0: primary 127.0.0.1:%s, replica 127.0.0.1:%s\n' "${DB_PORTS[s0]}" "${DB_PORTS[s0r]}"
		for ((i = 1; i < SHARDS; i++)); do
			printf '  shard s%d: primary 127.0.0.1:%s\n' "$i" "${DB_PORTS[s$i]}"
		done
		cat <<EOF
  layout:
$("$BIN" check-config "$cfg" 2>/dev/null | grep -E '^  shop\.' | sed 's/^/  /')
  connect:  mariadb --comments -h${LISTEN%:*} -P${LISTEN##*:} -u$DB_USER -p$DB_PASSWORD shop
            (--comments keeps the /* shardgate:shard=… */ hint, which the client strips otherwise)
  status:   http://$ADMIN/ (backends, pools, shards, top statements; JSON under /api/)
  admin:    mariadb -h${ADMIN_SQL%:*} -P${ADMIN_SQL##*:} -u$ADMIN_USER -p$ADMIN_PASSWORD
            (SHOW BACKENDS; SHOW QUERY DIGESTS LIMIT 10; SHOW SESSIONS; SHOW SHARDING; ...)
  metrics:  http://$ADMIN/metrics

EOF
		print_queries
		printf '\n  Press Ctrl-C to stop.\n\n'
	} >&2
	if [[ "$CHECK" == 1 ]]; then
		check_queries
		check_sub_tables
		printf '\n> (admin port) SHOW QUERY DIGESTS ORDER BY count DESC LIMIT 3;\n'
		admin_sql --table -e "SHOW QUERY DIGESTS ORDER BY count DESC LIMIT 3" 2>&1 | cut -c1-200 || true
		return 0
	fi
	wait_proxy
}

# check_sub_tables prints the tables each shard holds, read from the shard
# itself: the sub-tables shardgate created.
check_sub_tables() {
	local i
	printf '\n'
	for ((i = 0; i < SHARDS; i++)); do
		printf 'tables on shard s%d: %s\n' "$i" "$(sql "s$i" -N -e "SELECT GROUP_CONCAT(table_name ORDER BY table_name SEPARATOR ' ') FROM information_schema.tables WHERE table_schema = 'shop'")"
	done
}

if [[ "$SHARDS" == 0 ]]; then
	run_single "$@"
else
	run_sharded "$@"
fi
