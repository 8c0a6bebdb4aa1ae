#!/usr/bin/env bash
# Installs what shardgate needs on Debian/Ubuntu, by purpose, and downloads
# the Go modules:
#   install-deps.sh [all|test]  mariadb-server mariadb-client sysbench haproxy
#                               python3-pymysql python3-venv default-jdk-headless maven
#                               prometheus (for promtool, which checks
#                               deploy/prometheus/rules.yml), chromium
#                               chromium-driver (the status page's headless
#                               browser test), etcd-server (the fleet's
#                               configuration tests start their own etcd), and
#                               MySQL Connector/J through maven, SQLAlchemy
#                               (scripts/requirements-orm.txt, from PyPI into the
#                               virtual environment SHARDGATE_PYTHON_VENV): the test suite (which includes
#                               the benchmark harness's smoke test), benchmarks
#                               and demo (the default)
#   install-deps.sh demo        mariadb-server mariadb-client: what
#                               scripts/demo.sh needs
#   install-deps.sh --packages SET   print the set's packages, install nothing
# Safe to run again: it only installs what is missing and runs
# `apt-get update` at most once.
#
# The distro's own MariaDB service is never used (tests and the demo start
# their own mariadbd), so if installing mariadb-server started it, it is
# stopped and disabled again; so is the Prometheus server the prometheus
# package starts (only its promtool is wanted).
#
# Environment:
#   SHARDGATE_SKIP_GO_DOWNLOAD=1   do not run `go mod download`
#   SHARDGATE_PYTHON_VENV=DIR      the ORM test's Python environment
#                                  (default: ${XDG_CACHE_HOME:-$HOME/.cache}/shardgate/python)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

log() { printf 'install-deps: %s\n' "$*" >&2; }
die() {
	printf 'install-deps: ERROR: %s\n' "$*" >&2
	exit 1
}

# Debian puts mariadbd and haproxy into /usr/sbin, which is not in every
# user's PATH.
export PATH="${PATH}:/usr/local/sbin:/usr/sbin:/sbin"

as_root() {
	if [[ "$(id -u)" -eq 0 ]]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "need root to run '$*', but this is not root and sudo is not installed"
	fi
}

dpkg_installed() {
	command -v dpkg-query >/dev/null 2>&1 &&
		dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

# have_pkg PACKAGE: is what we need from PACKAGE available?
have_pkg() {
	case "$1" in
	mariadb-server) command -v mariadbd >/dev/null 2>&1 && command -v mariadb-install-db >/dev/null 2>&1 ;;
	mariadb-client) command -v mariadb >/dev/null 2>&1 && command -v mariadb-admin >/dev/null 2>&1 ;;
	sysbench) command -v sysbench >/dev/null 2>&1 ;;
	haproxy) command -v haproxy >/dev/null 2>&1 ;;
	python3-pymysql) dpkg_installed python3-pymysql || /usr/bin/python3 -c 'import pymysql' >/dev/null 2>&1 ;;
	python3-venv) /usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1 ;;
	default-jdk-headless) command -v javac >/dev/null 2>&1 && command -v java >/dev/null 2>&1 ;;
	maven) command -v mvn >/dev/null 2>&1 ;;
	chromium) command -v chromium >/dev/null 2>&1 ;;
	chromium-driver) command -v chromedriver >/dev/null 2>&1 ;;
	prometheus) command -v promtool >/dev/null 2>&1 ;;
	etcd-server) command -v etcd >/dev/null 2>&1 ;;
	*) dpkg_installed "$1" ;;
	esac
}

LIST_ONLY=0
if [[ "${1:-}" == --packages ]]; then
	LIST_ONLY=1
	shift
fi
SET="${1:-all}"
case "$SET" in
all | test) PACKAGES=(mariadb-server mariadb-client sysbench haproxy python3-pymysql python3-venv default-jdk-headless maven prometheus chromium chromium-driver etcd-server) ;;
demo) PACKAGES=(mariadb-server mariadb-client) ;;
-h | --help)
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
	exit 0
	;;
*) die "unknown set '$SET'; use all, test or demo" ;;
esac
if (($# > 1)); then
	die "one set at a time (got: $*)"
fi
if ((LIST_ONLY)); then
	echo "${PACKAGES[*]}"
	exit 0
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
	if ! have_pkg "$pkg"; then
		missing+=("$pkg")
	fi
done

# The distro service only needs taming if we are the ones installing it.
installing_server=0 installing_prometheus=0 installing_etcd=0
for pkg in "${missing[@]+"${missing[@]}"}"; do
	case "$pkg" in
	mariadb-server) installing_server=1 ;;
	prometheus) installing_prometheus=1 ;;
	etcd-server) installing_etcd=1 ;;
	esac
done

# stop_distro_service NAME WHY: stops and disables a service a package
# started, of which only the binaries are wanted.
stop_distro_service() {
	log "stopping and disabling the distro's $1 service ($2)"
	if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null 2>&1; then
		as_root systemctl disable --now "$1.service" >/dev/null 2>&1 || true
	else
		if command -v service >/dev/null 2>&1; then
			as_root service "$1" stop >/dev/null 2>&1 || true
		fi
		if command -v update-rc.d >/dev/null 2>&1; then
			as_root update-rc.d "$1" disable >/dev/null 2>&1 || true
		fi
	fi
}

stop_distro_mariadb() {
	log "stopping and disabling the distro's mariadb service (shardgate starts its own mariadbd)"
	if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null 2>&1; then
		as_root systemctl disable --now mariadb.service >/dev/null 2>&1 || true
	else
		# No systemd (e.g. a container): the package's init script may still
		# have started it.
		if command -v service >/dev/null 2>&1; then
			as_root service mariadb stop >/dev/null 2>&1 || true
		elif [[ -x /etc/init.d/mariadb ]]; then
			as_root /etc/init.d/mariadb stop >/dev/null 2>&1 || true
		fi
		if command -v update-rc.d >/dev/null 2>&1; then
			as_root update-rc.d mariadb disable >/dev/null 2>&1 || true
		fi
	fi
	# Last resort: the server started by the package writes this pid file.
	local pidfile=/run/mysqld/mysqld.pid pid=""
	if [[ -r "$pidfile" ]]; then
		pid="$(cat "$pidfile" 2>/dev/null || true)"
	fi
	if [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null; then
		as_root kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 1 300); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
	fi
}

if ((${#missing[@]} > 0)); then
	log "missing: ${missing[*]}"
	command -v apt-get >/dev/null 2>&1 ||
		die "apt-get not found: this script supports Debian/Ubuntu only. Install these packages yourself: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	log "running apt-get update"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q ||
		die "apt-get update failed (network or apt sources problem?)"
	log "installing: ${missing[*]}"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}" ||
		die "apt-get install ${missing[*]} failed"
	if ((installing_server)); then
		stop_distro_mariadb
	fi
	if ((installing_prometheus)); then
		stop_distro_service prometheus "only promtool is used"
	fi
	if ((installing_etcd)); then
		stop_distro_service etcd "tests start their own etcd"
	fi
	still=()
	for pkg in "${missing[@]}"; do
		if ! have_pkg "$pkg"; then
			still+=("$pkg")
		fi
	done
	if ((${#still[@]} > 0)); then
		die "still missing after apt-get install: ${still[*]}"
	fi
	log "installed: ${missing[*]}"
else
	log "system packages for '$SET' already installed: ${PACKAGES[*]}"
fi

# MySQL Connector/J, for the JDBC metadata test (internal/proxy).
CONNECTOR_J="${HOME}/.m2/repository/com/mysql/mysql-connector-j/9.7.0/mysql-connector-j-9.7.0.jar"
if [[ "$SET" != demo && ! -f "$CONNECTOR_J" ]]; then
	log "fetching MySQL Connector/J 9.7.0 with maven"
	mvn -q dependency:get -Dartifact=com.mysql:mysql-connector-j:9.7.0 || die "could not fetch MySQL Connector/J"
fi

# SQLAlchemy 2.0 for the ORM test (internal/proxy/orm_sqlalchemy_test.go), from
# PyPI at the versions pinned in scripts/requirements-orm.txt, into a virtual
# environment of the system's python3 that also sees Debian's PyMySQL (the
# driver every Python test uses). Recreated when a pin changes.
PY_VENV="${SHARDGATE_PYTHON_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/shardgate/python}"
PY_REQS="$ROOT/scripts/requirements-orm.txt"
py_venv_ok() {
	[[ -x "$PY_VENV/bin/python" ]] && cmp -s "$PY_REQS" "$PY_VENV/shardgate-requirements.txt" &&
		"$PY_VENV/bin/python" -c 'import sqlalchemy, pymysql, cryptography' >/dev/null 2>&1
}
if [[ "$SET" != demo ]] && ! py_venv_ok; then
	log "installing SQLAlchemy ($(grep -i '^sqlalchemy==' "$PY_REQS")) into $PY_VENV"
	rm -rf "$PY_VENV"
	mkdir -p "$(dirname "$PY_VENV")"
	/usr/bin/python3 -m venv --system-site-packages "$PY_VENV" || die "could not create the Python environment $PY_VENV"
	"$PY_VENV/bin/python" -m pip install -q --disable-pip-version-check --no-input -r "$PY_REQS" ||
		die "pip install -r $PY_REQS into $PY_VENV failed"
	cp "$PY_REQS" "$PY_VENV/shardgate-requirements.txt"
	py_venv_ok || die "$PY_VENV cannot import sqlalchemy, pymysql and cryptography after installing"
fi

if [[ "${SHARDGATE_SKIP_GO_DOWNLOAD:-0}" != 1 ]]; then
	command -v go >/dev/null 2>&1 ||
		die "Go is not installed (or not in PATH): shardgate needs Go 1.24 or newer, see https://go.dev/doc/install"
	log "downloading Go modules"
	(cd "$ROOT" && go mod download) || die "go mod download failed"
fi
log "done"
