#!/usr/bin/env bash
# Runs every corpus statement on a real MariaDB three times — as written,
# as TiDB's parser re-serialises it, as Vitess's does — each on a fresh copy
# of a small schema, and reports where the answer (rows or error, then the
# tables' contents and definitions) differs from the original's.
# Usage: check-mariadb.sh [mariadb client args, e.g. --socket=/tmp/x.sock -uroot]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sqls=$(mktemp)
trap 'rm -f "$sqls"' EXIT
(cd "$here" && go test -run TestMatrix -count=1 -sqlout "$sqls" . >/dev/null)
db() { mariadb "$@" --batch --skip-column-names </dev/null; }

fixture="DROP DATABASE IF EXISTS parsers_check; CREATE DATABASE parsers_check; USE parsers_check;
CREATE TABLE users (id INT PRIMARY KEY, name VARCHAR(50), email VARCHAR(50), last_order DATETIME, d DATE);
INSERT INTO users VALUES (1,'Abc','a@x',NULL,'2024-01-31'),(42,'it''s','b@x',NULL,'2024-01-31'),(7,'dq','c@x',NULL,NULL),(5,'ab','d@x',NULL,NULL);
CREATE TABLE orders (id BIGINT PRIMARY KEY, user_id BIGINT, qty INT, total DECIMAL(12,2), note VARCHAR(255),
  state VARCHAR(10) DEFAULT 'new', a INT, b INT, c INT, created DATETIME(6), legacy INT, KEY uq_note (note));
INSERT INTO orders (id,user_id,qty,total,note,a,b,c) VALUES (1,42,1,10,'n',1,2,5),(2,42,2,20,'m',1,7,3),(3,1,1,5,'o',2,1,1);
CREATE TABLE items (order_id BIGINT, sku VARCHAR(10)); INSERT INTO items VALUES (1,'s1'),(2,'s2');
CREATE TABLE skus (sku VARCHAR(10), active INT); INSERT INTO skus VALUES ('s1',1),('s2',0);
CREATE TABLE orders_archive (id BIGINT, user_id BIGINT); INSERT INTO orders_archive VALUES (100,42);
CREATE SEQUENCE order_seq;"

state() { # what a statement left behind
	db "$@" parsers_check -e "CHECKSUM TABLE users, orders, items, skus, orders_archive EXTENDED;
		SELECT table_name, column_name, column_type, column_default FROM information_schema.columns
		WHERE table_schema = 'parsers_check' ORDER BY table_name, ordinal_position;
		SELECT table_name, index_name, column_name FROM information_schema.statistics
		WHERE table_schema = 'parsers_check' ORDER BY 1, 2, seq_in_index;
		SELECT table_name, create_options FROM information_schema.tables WHERE table_schema = 'parsers_check' ORDER BY 1" 2>&1
}
answer() { # name -> rows or error, then state
	db "$@" -e "$fixture" >/dev/null
	# The client echoes a failed statement between dashes: keep the error.
	db "$@" parsers_check -e "$sql" 2>&1 | awk '/^-+$/ {skip = !skip; next} !skip' | sed 's/ at line [0-9]*//'
	echo ---
	state "$@"
}

declare -A want
same=0
while IFS=$'\t' read -r name parser sql; do
	if [[ $name == placeholders ]]; then continue; fi # PREPARE-only text
	got=$(answer "$@")
	if [[ $parser == original ]]; then
		want[$name]=$got
		continue
	fi
	if [[ $got == "${want[$name]}" ]]; then
		same=$((same + 1))
	else
		echo "DIFFERS  $name/$parser"
		diff <(echo "${want[$name]}") <(echo "$got") | sed 's/^/    /' | cut -c1-200 | head -8 || true
	fi
done <"$sqls"
echo "$same re-serialised statements answered as the original"
