package planner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
)

// mergeOf plans sql in the fixture's schema and describes its merge:
// the pushed SELECT (the template) and the spec, or the refusal.
func mergeOf(t *testing.T, k *Keyspace, sql string) string {
	t.Helper()
	var sh router.Shape
	router.ScanShape([]byte(sql), &sh)
	p := k.Plan([]byte(sql), &sh, "shop")
	if p.Err != nil {
		return "plan error: " + p.Err.Error()
	}
	if p.MergeErr != nil {
		return "refused: " + p.MergeErr.(*mysql.SQLError).Message
	}
	if p.Merge == nil {
		return "no merge"
	}
	return p.Merge.Tmpl.String() + " |" + p.Merge.ShardOrder + " | " + specString(p.Merge.Spec, p.Merge.Limit)
}

func specString(s *engine.MergeSpec, l LimitPlan) string {
	var parts []string
	add := func(f string, a ...any) { parts = append(parts, fmt.Sprintf(f, a...)) }
	add("hidden %d", s.Hidden)
	if len(s.Order) > 0 {
		add("order %s", keys(s.Order))
	}
	if s.Groups != 0 {
		add("groups %d", s.Groups)
	}
	for _, a := range s.Aggregates {
		add("agg %d@%d/%d", a.Kind, a.Col, a.Arg)
	}
	for _, c := range s.Computed {
		add("computed %d", c.Col)
	}
	if s.Having != nil {
		add("having")
	}
	if len(s.Final) > 0 {
		add("final %s", keys(s.Final))
	}
	if l.Has {
		add("limit push=%v", l.Push)
	}
	return strings.Join(parts, ", ")
}

func keys(ks []engine.SortKey) string {
	var s []string
	for _, k := range ks {
		d := ""
		if k.Desc {
			d = " desc"
		}
		s = append(s, fmt.Sprintf("%d%s", k.Col, d))
	}
	return strings.Join(s, ",")
}

func TestMergePlans(t *testing.T) {
	schema := fixture(t)
	schema.Table("sf_order").SetColumns([]string{"user_id", "order_no", "amount"})
	k, err := NewKeyspace(schema, map[string]*backend.Cluster{"s0": testCluster(t, 1), "s1": testCluster(t, 1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ sql, want string }{
		{"select user_id, amount from sf_order order by amount desc, user_id limit 5, 10",
			"select user_id, amount, weight_string(if(collation(amount) = 'binary' or collation(amount) like '%nopad%' or collation(amount) like '%0900%', amount, trim(trailing ' ' from amount))), if(collation(amount) = 'binary' or collation(amount) like '%nopad%' or collation(amount) like '%0900%', '', weight_string(concat(left(amount, 0), ' '))), weight_string(if(collation(user_id) = 'binary' or collation(user_id) like '%nopad%' or collation(user_id) like '%0900%', user_id, trim(trailing ' ' from user_id))), if(collation(user_id) = 'binary' or collation(user_id) like '%nopad%' or collation(user_id) like '%0900%', '', weight_string(concat(left(user_id, 0), ' '))) from {table 0: sf_order} order by 2 desc, 1 asc{limit} | order by 2 desc, 1 asc | hidden 4, order 1 desc,0, limit push=true"},
		{"select user_id from sf_order order by amount + 1",
			"select user_id, amount + {lit 0} from {table 0: sf_order} order by 2 asc{limit} | order by 2 asc | hidden 1, order 1"},
		{"select * from sf_order order by order_no",
			"select user_id, order_no, amount, weight_string(if(collation(order_no) = 'binary' or collation(order_no) like '%nopad%' or collation(order_no) like '%0900%', order_no, trim(trailing ' ' from order_no))), if(collation(order_no) = 'binary' or collation(order_no) like '%nopad%' or collation(order_no) like '%0900%', '', weight_string(concat(left(order_no, 0), ' '))) from {table 0: sf_order} order by 2 asc{limit} | order by 2 asc | hidden 2, order 1"},
		{"select o.amount a from sf_order o order by a limit ?",
			"select o.amount as a, weight_string(if(collation(o.amount) = 'binary' or collation(o.amount) like '%nopad%' or collation(o.amount) like '%0900%', o.amount, trim(trailing ' ' from o.amount))), if(collation(o.amount) = 'binary' or collation(o.amount) like '%nopad%' or collation(o.amount) like '%0900%', '', weight_string(concat(left(o.amount, 0), ' '))) from {table 0: sf_order} as o order by 1 asc{limit} | order by 1 asc | hidden 2, order 0, limit push=false"},
		{"select count(*), sum(amount) from sf_order",
			"select count(*){as item 0}, sum(amount){as item 1} from {table 0: sf_order}{limit} | | hidden 0, groups -1, agg 1@0/0, agg 2@1/0"},
		{"select order_no, avg(amount) from sf_order group by order_no having count(*) > 1 order by 2 desc limit 3",
			"select order_no, avg(amount){as item 1}, sum(amount), count(amount), count(*), 1, weight_string(if(collation(order_no) = 'binary' or collation(order_no) like '%nopad%' or collation(order_no) like '%0900%', order_no, trim(trailing ' ' from order_no))), if(collation(order_no) = 'binary' or collation(order_no) like '%nopad%' or collation(order_no) like '%0900%', '', weight_string(concat(left(order_no, 0), ' '))) from {table 0: sf_order} group by order_no order by 1 asc{limit} | order by 1 asc | hidden 6, order 0, groups 1, agg 2@2/0, agg 1@3/0, agg 1@4/0, computed 1, having, final 1 desc, limit push=false"},
		{"select order_no, count(distinct amount) from sf_order group by order_no",
			"select order_no, count(distinct amount){as item 1}, amount, weight_string(if(collation(order_no) = 'binary' or collation(order_no) like '%nopad%' or collation(order_no) like '%0900%', order_no, trim(trailing ' ' from order_no))), if(collation(order_no) = 'binary' or collation(order_no) like '%nopad%' or collation(order_no) like '%0900%', '', weight_string(concat(left(order_no, 0), ' '))), weight_string(if(collation(amount) = 'binary' or collation(amount) like '%nopad%' or collation(amount) like '%0900%', amount, trim(trailing ' ' from amount))), if(collation(amount) = 'binary' or collation(amount) like '%nopad%' or collation(amount) like '%0900%', '', weight_string(concat(left(amount, 0), ' '))) from {table 0: sf_order} group by order_no, amount order by 1 asc, 3 asc{limit} | order by 1 asc, 3 asc | hidden 5, order 0,2, groups 1, agg 8@1/2"},
		{"select user_id, count(*) from sf_order group by user_id order by 2 desc limit 2",
			"select user_id, count(*){as item 1} from {table 0: sf_order} group by user_id order by 2 desc{limit} | order by 2 desc | hidden 0, order 1 desc, limit push=true"},
		{"select distinct order_no from sf_order order by order_no desc limit 2",
			"select distinct order_no, weight_string(if(collation(order_no) = 'binary' or collation(order_no) like '%nopad%' or collation(order_no) like '%0900%', order_no, trim(trailing ' ' from order_no))), if(collation(order_no) = 'binary' or collation(order_no) like '%nopad%' or collation(order_no) like '%0900%', '', weight_string(concat(left(order_no, 0), ' '))) from {table 0: sf_order} order by 1 desc{limit} | order by 1 desc | hidden 2, order 0 desc, groups 1, limit push=true"},
		{"select sum(amount) - sum(order_no), count(*) * 2 from sf_order",
			"select sum(amount) - sum(order_no){as item 0}, count(*) * {lit 0}{as item 1}, sum(amount), sum(order_no), count(*), {lit 0} from {table 0: sf_order}{limit} | | hidden 4, groups -1, agg 2@2/0, agg 2@3/0, agg 1@4/0, computed 0, computed 1"},
		{"select order_no, group_concat(amount) from sf_order group by order_no",
			"select order_no, group_concat(amount){as item 1}, concat(amount), count(*), @@group_concat_max_len, weight_string(if(collation(order_no) = 'binary' or collation(order_no) like '%nopad%' or collation(order_no) like '%0900%', order_no, trim(trailing ' ' from order_no))), if(collation(order_no) = 'binary' or collation(order_no) like '%nopad%' or collation(order_no) like '%0900%', '', weight_string(concat(left(order_no, 0), ' '))), weight_string(if(collation(concat(amount)) = 'binary' or collation(concat(amount)) like '%nopad%' or collation(concat(amount)) like '%0900%', concat(amount), trim(trailing ' ' from concat(amount)))), if(collation(concat(amount)) = 'binary' or collation(concat(amount)) like '%nopad%' or collation(concat(amount)) like '%0900%', '', weight_string(concat(left(concat(amount), 0), ' '))) from {table 0: sf_order} group by order_no, concat(amount) order by 1 asc, 3 asc{limit} | order by 1 asc, 3 asc | hidden 7, order 0,2, groups 1, agg 10@1/2"},
		{"select user_id, amount from sf_order where user_id > 5 union all select id, x from sf_user order by amount desc limit 3",
			"select user_id, amount, weight_string(if(collation(amount) = 'binary' or collation(amount) like '%nopad%' or collation(amount) like '%0900%', amount, trim(trailing ' ' from amount))), if(collation(amount) = 'binary' or collation(amount) like '%nopad%' or collation(amount) like '%0900%', '', weight_string(concat(left(amount, 0), ' '))) from {table 0: sf_order} where user_id > {lit 0} union all select id, x, weight_string(if(collation(x) = 'binary' or collation(x) like '%nopad%' or collation(x) like '%0900%', x, trim(trailing ' ' from x))), if(collation(x) = 'binary' or collation(x) like '%nopad%' or collation(x) like '%0900%', '', weight_string(concat(left(x, 0), ' '))) from {table 0: sf_user} order by 2 desc{limit} | order by 2 desc | hidden 2, order 1 desc, limit push=true"},
		{"select user_id from sf_order union select id from sf_user order by 1 desc",
			"select user_id, weight_string(if(collation(user_id) = 'binary' or collation(user_id) like '%nopad%' or collation(user_id) like '%0900%', user_id, trim(trailing ' ' from user_id))), if(collation(user_id) = 'binary' or collation(user_id) like '%nopad%' or collation(user_id) like '%0900%', '', weight_string(concat(left(user_id, 0), ' '))) from {table 0: sf_order} union select id, weight_string(if(collation(id) = 'binary' or collation(id) like '%nopad%' or collation(id) like '%0900%', id, trim(trailing ' ' from id))), if(collation(id) = 'binary' or collation(id) like '%nopad%' or collation(id) like '%0900%', '', weight_string(concat(left(id, 0), ' '))) from {table 0: sf_user} order by 1 desc{limit} | order by 1 desc | hidden 2, order 0 desc, groups 1"},
		{"select user_id from sf_order union select id from sf_user union all select id from sf_user",
			"refused: This version of shardgate doesn't yet support 'UNION DISTINCT followed by UNION ALL across shards'"},
		{"select order_no, std(amount) from sf_order group by order_no",
			"refused: This version of shardgate doesn't yet support 'STD() across shards'"},
		{"select order_no, group_concat(amount order by amount limit 2) from sf_order group by order_no",
			"refused: This version of shardgate doesn't yet support 'GROUP_CONCAT() … LIMIT across shards'"},
		{"select order_no, count(*) from sf_order group by order_no order by group_concat(amount) limit 2",
			"refused: This version of shardgate doesn't yet support 'ORDER BY GROUP_CONCAT() across shards'"},
		{"select order_no from sf_order group by order_no with rollup",
			"refused: This version of shardgate doesn't yet support 'GROUP BY … WITH ROLLUP across shards'"},
	} {
		if got := mergeOf(t, k, c.sql); got != c.want {
			t.Errorf("%s\n got: %s\nwant: %s", c.sql, got, c.want)
		}
	}
}

// Columns known to hold no character strings (learnt from the shards)
// are compared as they are: the shards send no weights for them.
func TestMergePlansWeighOnlyStrings(t *testing.T) {
	schema := fixture(t)
	schema.Table("sf_order").SetColumns([]string{"user_id", "order_no", "amount", "status"})
	schema.Table("sf_order").SetCollations(map[string]string{"status": "utf8mb4_general_ci"})
	k, err := NewKeyspace(schema, map[string]*backend.Cluster{"s0": testCluster(t, 1), "s1": testCluster(t, 1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ sql, want string }{
		{"select user_id, amount from sf_order order by amount desc, user_id limit 5",
			"select user_id, amount from {table 0: sf_order} order by 2 desc, 1 asc{limit} | order by 2 desc, 1 asc | hidden 0, order 1 desc,0, limit push=true"},
		{"select o.status, count(*) from sf_order o group by o.status",
			"select o.`status`, count(*){as item 1}, weight_string(trim(trailing ' ' from o.`status`)), weight_string(concat(left(o.`status`, 0), ' ')) from {table 0: sf_order} as o group by o.`status` order by 1 asc{limit} | order by 1 asc | hidden 2, order 0, groups 1, agg 1@1/0"},
	} {
		if got := mergeOf(t, k, c.sql); got != c.want {
			t.Errorf("%s\n got: %s\nwant: %s", c.sql, got, c.want)
		}
	}
}

// A string column's collation learnt from the shards is tested once, by
// the planner: its weights are computed for PAD SPACE (above) or NO PAD,
// and only a column whose collation is not known has the shards test it
// per row.
func TestMergeWeightsByLearntCollation(t *testing.T) {
	schema := fixture(t)
	schema.Table("sf_order").SetColumns([]string{"user_id", "order_no", "amount", "status"})
	k, err := NewKeyspace(schema, map[string]*backend.Cluster{"s0": testCluster(t, 1), "s1": testCluster(t, 1)})
	if err != nil {
		t.Fatal(err)
	}
	const sql = "select status from sf_order order by status limit 3"
	for coll, want := range map[string]string{
		"utf8mb4_nopad_bin":  "select `status`, weight_string(`status`), '' from {table 0: sf_order} order by 1 asc{limit}",
		"utf8mb4_0900_as_cs": "select `status`, weight_string(`status`), '' from {table 0: sf_order} order by 1 asc{limit}",
		"latin1_swedish_ci":  "select `status`, weight_string(trim(trailing ' ' from `status`)), weight_string(concat(left(`status`, 0), ' ')) from {table 0: sf_order} order by 1 asc{limit}",
		"": "select `status`, weight_string(if(collation(`status`) = 'binary' or collation(`status`) like '%nopad%' or collation(`status`) like '%0900%', `status`, trim(trailing ' ' from `status`))), " +
			"if(collation(`status`) = 'binary' or collation(`status`) like '%nopad%' or collation(`status`) like '%0900%', '', weight_string(concat(left(`status`, 0), ' '))) from {table 0: sf_order} order by 1 asc{limit}",
	} {
		schema.Table("sf_order").SetCollations(map[string]string{"status": coll})
		k.ForgetPlans()
		if got, _, _ := strings.Cut(mergeOf(t, k, sql), " | "); got != want {
			t.Errorf("collation %q:\n got: %s\nwant: %s", coll, got, want)
		}
	}
}

// A statement whose functions do something beyond their value is not
// probed: the probe would run it once more.
func TestMergeProbeSkipsEffects(t *testing.T) {
	k, err := NewKeyspace(fixture(t), map[string]*backend.Cluster{"s0": testCluster(t, 1), "s1": testCluster(t, 1)})
	if err != nil {
		t.Fatal(err)
	}
	for sql, probed := range map[string]bool{
		"select id from sf_user order by id":                    true,
		"select id, sleep(0) from sf_user order by id":          false,
		"select id, get_lock('x', 0) from sf_user order by id":  false,
		"select id, shop.f(id) from sf_user order by id":        false,
		"select id, last_insert_id(id) from sf_user order by 1": false,
	} {
		var sh router.Shape
		router.ScanShape([]byte(sql), &sh)
		p := k.Plan([]byte(sql), &sh, "shop")
		if p.Merge == nil || (p.Merge.Probe != nil) != probed {
			t.Errorf("%s: merge %v, probed %v; want probed %v", sql, p.Merge != nil, p.Merge != nil && p.Merge.Probe != nil, probed)
		}
	}
}
