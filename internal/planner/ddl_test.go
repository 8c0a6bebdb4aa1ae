package planner

import (
	"errors"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
)

// describeDDL renders a DDL plan as "step LOGICAL [sum]: shard=query; …",
// one line per step, "default" for a statement run as written on the
// default cluster and "-" for one that is not planned.
func describeDDL(p *DDLPlan, names map[*backend.Cluster]string) string {
	switch {
	case p == nil:
		return "-"
	case p.Run == nil:
		return "default"
	}
	var lines []string
	for _, st := range p.Run.Steps {
		var parts []string
		for _, pt := range st.Parts {
			q := "(as written)"
			if pt.Query != nil {
				q = string(pt.Query[1:])
			}
			parts = append(parts, names[pt.Cluster]+"="+pt.Name+": "+q)
		}
		sum := ""
		if st.Sum {
			sum = " sum"
		}
		lines = append(lines, st.Logical+sum+": "+strings.Join(parts, "; "))
	}
	return strings.Join(lines, "\n")
}

func TestPlanDDL(t *testing.T) {
	s0, s1 := testCluster(t, 1), testCluster(t, 1)
	k, err := NewKeyspace(fixture(t), map[string]*backend.Cluster{"s0": s0, "s1": s1})
	if err != nil {
		t.Fatal(err)
	}
	kss := Keyspaces{"shop": k}
	names := map[*backend.Cluster]string{s0: "s0", s1: "s1"}
	for _, tc := range []struct {
		sql, db, want string
	}{
		{"CREATE TABLE sf_name (name VARCHAR(20) PRIMARY KEY, n INT DEFAULT 5)", "shop",
			"sf_name sum: s0=sf_name_0000: create table sf_name_0000 (\n\t`name` VARCHAR(20) primary key,\n\tn INT default 5\n); " +
				"s0=sf_name_0001: create table sf_name_0001 (\n\t`name` VARCHAR(20) primary key,\n\tn INT default 5\n); " +
				"s1=sf_name_0002: create table sf_name_0002 (\n\t`name` VARCHAR(20) primary key,\n\tn INT default 5\n); " +
				"s1=sf_name_0003: create table sf_name_0003 (\n\t`name` VARCHAR(20) primary key,\n\tn INT default 5\n)"},
		{"create table if not exists shop.`sf_range` like shop.sf_name", "",
			"sf_range sum: s0=sf_range_0000: create table if not exists shop.sf_range_0000 like shop.sf_name_0000; s0=sf_range_0001: create table if not exists shop.sf_range_0001 like shop.sf_name_0001; " +
				"s1=sf_range_0002: create table if not exists shop.sf_range_0002 like shop.sf_name_0002; s1=sf_range_0003: create table if not exists shop.sf_range_0003 like shop.sf_name_0003"},
		{"ALTER TABLE sf_range ADD COLUMN c INT DEFAULT 7, ADD KEY (c)", "shop",
			"sf_range sum: s0=sf_range_0000: alter table sf_range_0000 add column c INT default 7, add key (c); s0=sf_range_0001: alter table sf_range_0001 add column c INT default 7, add key (c); " +
				"s1=sf_range_0002: alter table sf_range_0002 add column c INT default 7, add key (c); s1=sf_range_0003: alter table sf_range_0003 add column c INT default 7, add key (c)"},
		{"CREATE INDEX i ON sf_log (d)", "shop",
			"sf_log sum: s0=sf_log_0000: alter table sf_log_0000 add key i (d); s0=sf_log_0001: alter table sf_log_0001 add key i (d); s1=sf_log_0002: alter table sf_log_0002 add key i (d); s1=sf_log_0003: alter table sf_log_0003 add key i (d)"},
		{"DROP INDEX i ON sf_log", "shop",
			"sf_log sum: s0=sf_log_0000: alter table sf_log_0000 drop key i; s0=sf_log_0001: alter table sf_log_0001 drop key i; s1=sf_log_0002: alter table sf_log_0002 drop key i; s1=sf_log_0003: alter table sf_log_0003 drop key i"},
		{"TRUNCATE sf_log", "shop",
			"sf_log sum: s0=sf_log_0000: truncate table sf_log_0000; s0=sf_log_0001: truncate table sf_log_0001; s1=sf_log_0002: truncate table sf_log_0002; s1=sf_log_0003: truncate table sf_log_0003"},
		// a reference table: the client's statement on every shard
		{"ALTER TABLE sf_city ADD COLUMN zip CHAR(5)", "shop", "sf_city: s0=sf_city: (as written); s1=sf_city: (as written)"},
		// DROP of several tables: one step each, in order
		{"DROP TABLE IF EXISTS plain, sf_city, sf_log", "shop",
			"plain: s0=plain: drop table if exists plain\n" +
				"sf_city: s0=sf_city: drop table if exists sf_city; s1=sf_city: drop table if exists sf_city\n" +
				"sf_log sum: s0=sf_log_0000: drop table if exists sf_log_0000; s0=sf_log_0001: drop table if exists sf_log_0001; s1=sf_log_0002: drop table if exists sf_log_0002; s1=sf_log_0003: drop table if exists sf_log_0003"},
		{"CREATE DATABASE IF NOT EXISTS shop", "", "shop: s0=shop: (as written); s1=shop: (as written)"},
		{"DROP SCHEMA shop", "other", "shop: s0=shop: (as written); s1=shop: (as written)"},
		{"CREATE DATABASE other", "shop", "-"},
		// unlisted tables, other databases: as before
		{"CREATE TABLE plain (id INT)", "shop", "default"},
		{"ALTER TABLE other.sf_log ADD c INT", "shop", "default"},
		{"DROP TABLE plain", "shop", "default"},
		{"RENAME TABLE plain TO plain2", "shop", "default"},
		{"CREATE TABLE sf_log (d DATE)", "other", "-"},
		{"CREATE VIEW v AS SELECT 1", "shop", "-"},
		{"CREATE OR REPLACE TABLE sf_log (d DATE)", "shop", "-"}, // not parsed: planned as before
	} {
		p, err := kss.PlanDDL([]byte(tc.sql), tc.db)
		if err != nil {
			t.Errorf("%s: %v", tc.sql, err)
			continue
		}
		if got := describeDDL(p, names); got != tc.want {
			t.Errorf("%s:\ngot  %s\nwant %s", tc.sql, got, tc.want)
		}
	}
}

func TestPlanDDLLearnsKeyTypes(t *testing.T) {
	k, err := NewKeyspace(fixture(t), map[string]*backend.Cluster{"s0": testCluster(t, 1), "s1": testCluster(t, 1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sql           string
		learn         string
		created, like bool
	}{
		{"CREATE TABLE sf_log (d DATE)", "sf_log", true, false},
		{"CREATE TABLE sf_range LIKE sf_name", "sf_range", true, true},
		{"ALTER TABLE sf_log ADD c INT", "sf_log", false, false},
		{"CREATE TABLE sf_city (id INT)", "", false, false},
		{"TRUNCATE sf_log", "", false, false},
	} {
		p, err := Keyspaces{"shop": k}.PlanDDL([]byte(tc.sql), "shop")
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		var learn []string
		for _, st := range p.Learn {
			learn = append(learn, st.Name)
		}
		if strings.Join(learn, ",") != tc.learn || p.Created != tc.created || p.Like != tc.like {
			t.Errorf("%s: learn %v created %v like %v, want %q %v %v", tc.sql, learn, p.Created, p.Like, tc.learn, tc.created, tc.like)
		}
	}
}

func TestPlanDDLRefuses(t *testing.T) {
	k, err := NewKeyspace(fixture(t), map[string]*backend.Cluster{"s0": testCluster(t, 1), "s1": testCluster(t, 1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sql  string
		code uint16
		say  string
	}{
		{"CREATE TABLE sf_user (uid INT)", 1072, "Key column 'id' doesn't exist in table"},
		{"CREATE TABLE sf_user AS SELECT * FROM plain", mysql.ERNotSupportedYet, "CREATE TABLE … SELECT"},
		{"CREATE TEMPORARY TABLE sf_city (id INT)", mysql.ERNotSupportedYet, "TEMPORARY"},
		{"DROP TEMPORARY TABLE sf_city", mysql.ERNotSupportedYet, "TEMPORARY"},
		{"RENAME TABLE sf_user TO x", mysql.ERNotSupportedYet, "renaming listed table sf_user"},
		{"RENAME TABLE a TO b, x TO shop.sf_city", mysql.ERNotSupportedYet, "renaming listed table sf_city"},
		{"ALTER TABLE sf_user RENAME TO x", mysql.ERNotSupportedYet, "renaming listed table sf_user"},
		{"ALTER TABLE plain RENAME TO sf_user", mysql.ERNotSupportedYet, "renaming listed table sf_user"},
		{"ALTER TABLE sf_user DROP COLUMN ID", mysql.ERNotSupportedYet, "shard key column sf_user.id"},
		{"ALTER TABLE sf_user MODIFY COLUMN id BIGINT", mysql.ERNotSupportedYet, "shard key column sf_user.id"},
		{"ALTER TABLE sf_user CHANGE id id2 INT", mysql.ERNotSupportedYet, "shard key column sf_user.id"},
		{"ALTER TABLE sf_user RENAME COLUMN id TO id2", mysql.ERNotSupportedYet, "shard key column sf_user.id"},
		{"CREATE TABLE sf_user LIKE plain", mysql.ERNotSupportedYet, "plain, which is not on every shard"},
		{"CREATE TABLE sf_user LIKE sf_name", mysql.ERNotSupportedYet, "laid out differently"},
		{"CREATE TABLE sf_city LIKE sf_user", mysql.ERNotSupportedYet, "reference table sf_city naming sharded table sf_user"},
		{"CREATE TABLE plain2 LIKE sf_user", mysql.ERNotSupportedYet, "unlisted table plain2 naming sharded table sf_user"},
		{"ALTER TABLE sf_order ADD FOREIGN KEY (user_id) REFERENCES sf_name (name)", mysql.ERNotSupportedYet, "laid out differently"},
		{"DROP TABLE plain, sf_user, x JOIN", mysql.ERParse, ""},
		{"ALTER TABLE sf_order ADD CONSTRAINT fk_user FOREIGN KEY (user_id) REFERENCES sf_user (id)", mysql.ERNotSupportedYet, "named foreign key (CONSTRAINT fk_user)"},
		{"CREATE TABLE sf_order (user_id INT, CONSTRAINT fk_u FOREIGN KEY (user_id) REFERENCES sf_user (id))", mysql.ERNotSupportedYet, "named foreign key (CONSTRAINT fk_u)"},
	} {
		_, err := Keyspaces{"shop": k}.PlanDDL([]byte(tc.sql), "shop")
		var se *mysql.SQLError
		if tc.code == mysql.ERParse {
			if err != nil {
				t.Errorf("%s: %v, want no plan (planned as before)", tc.sql, err)
			}
			continue
		}
		if !errors.As(err, &se) || se.Code != tc.code || !strings.Contains(se.Message, tc.say) {
			t.Errorf("%s: %v, want %d saying %q", tc.sql, err, tc.code, tc.say)
		}
	}
}
