package sharding

import "testing"

// The example: shards [s0, s1], sub_tables 4.
func TestLayoutNumbering(t *testing.T) {
	l, err := NewLayout([]string{"s0", "s1"}, 4)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := NewHash(l.SubTables())
	g, err := NewGroup(h, l)
	if err != nil {
		t.Fatal(err)
	}
	user := Table{Name: "sf_user", ShardKey: "id", Group: g}
	for i, want := range []string{"s0", "s0", "s0", "s0", "s1", "s1", "s1", "s1"} {
		if name, shard := user.SubTable(i); shard != want || name != SubTableName("sf_user", i) {
			t.Errorf("sub-table %d = %s on %s, want %s", i, name, shard, want)
		}
	}
	if name, _ := user.SubTable(3); name != "sf_user_0003" {
		t.Errorf("name = %s", name)
	}
	order := user.Like("sf_order", "user_id")
	if !CoLocated(user, order) || order.Group.Rule != user.Group.Rule {
		t.Error("like: must share rule and layout")
	}
	s := NewSet(8)
	s.Add(5)
	if got := l.Shards(s); len(got) != 1 || got[0] != "s1" {
		t.Errorf("Shards = %v", got)
	}
	if _, err := NewGroup(h, mustLayout(t, []string{"s0"}, 3)); err == nil {
		t.Error("rule and layout of different sizes accepted")
	}
}

func mustLayout(t *testing.T, shards []string, n int) Layout {
	l, err := NewLayout(shards, n)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// kingshard's locations: [2, 3] → sub-tables 0-1 on the first node, 2-4 on the second.
func TestLayoutCountsAndValidation(t *testing.T) {
	l, err := NewLayoutCounts([]string{"n1", "n2"}, []int{2, 3})
	if err != nil || l.SubTables() != 5 || l.Shard(1) != "n1" || l.Shard(2) != "n2" || l.Shard(4) != "n2" {
		t.Errorf("layout %v, %v", l, err)
	}
	for _, c := range []struct {
		shards []string
		counts []int
	}{{nil, nil}, {[]string{"a", "a"}, []int{1, 1}}, {[]string{"a"}, []int{0}}, {[]string{"a"}, []int{1, 2}}} {
		if _, err := NewLayoutCounts(c.shards, c.counts); err == nil {
			t.Errorf("layout %v %v accepted", c.shards, c.counts)
		}
	}
}

func TestLogicalName(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"sf_user_0003", "sf_user", true},
		{"t_12345", "t", true},
		{"t_003", "", false},
		{"_0003", "", false},
		{"t0003", "", false},
		{"orders", "", false},
	} {
		got, ok := LogicalName([]byte(tc.in))
		if string(got) != tc.want || ok != tc.ok {
			t.Errorf("LogicalName(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
