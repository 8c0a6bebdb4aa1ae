package engine

import (
	"testing"

	"github.com/shardgate/shardgate/internal/backend"
)

func TestLogicalMessage(t *testing.T) {
	for _, tc := range []struct{ msg, want string }{
		{"Table 't_0000' already exists", "Table 't' already exists"},
		{"Unknown table 'shop.t_0000'", "Unknown table 'shop.t'"},
		{"Duplicate index `i` defined on the table `shop`.`t_0000`", "Duplicate index `i` defined on the table `shop`.`t`"},
		{"Table 'xt_0000' and 't_00001' and t_0000x are other names", "Table 'xt_0000' and 't_00001' and t_0000x are other names"},
		{"t_0000", "t"},
	} {
		if got := logicalMessage(tc.msg, "t_0000", "t"); got != tc.want {
			t.Errorf("logicalMessage(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}

func TestInfoWarnings(t *testing.T) {
	for _, tc := range []struct {
		info string
		w    uint16
		want string
	}{
		{"Records: 10  Duplicates: 0  Warnings: 4", 1, "Records: 10  Duplicates: 0  Warnings: 1"},
		{"Enregistrements: 10  Doublons: 0  Avertissements: 12", 3, "Enregistrements: 10  Doublons: 0  Avertissements: 3"},
		{"", 2, ""},
		{"Rows matched: 1  Changed: 1", 0, "Rows matched: 1  Changed: 1"},
	} {
		if got := string(infoWarnings([]byte(tc.info), tc.w)); got != tc.want {
			t.Errorf("infoWarnings(%q, %d) = %q, want %q", tc.info, tc.w, got, tc.want)
		}
	}
}

func TestDescribeParts(t *testing.T) {
	s0, s1 := &backend.Cluster{Name: "s0"}, &backend.Cluster{Name: "s1"}
	parts := []DDLPart{
		{Part: Part{Cluster: s0}, Name: "t_0000"}, {Part: Part{Cluster: s0}, Name: "t_0001"},
		{Part: Part{Cluster: s1}, Name: "t_0002"}, {Part: Part{Cluster: s0}, Name: "city"},
	}
	want := "t_0000, t_0001 (shard s0), t_0002 (shard s1), city (shard s0)"
	if got := describeParts(parts); got != want {
		t.Fatalf("describeParts = %q, want %q", got, want)
	}
}
