package router

import "testing"

func TestShardHint(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		name string
		ok   bool
	}{
		{"/* shardgate:shard=s1 */ SELECT * FROM t_0004", "s1", true},
		{"SELECT /*+ SHARDGATE:SHARD=shard-2.a */ 1", "shard-2.a", true},
		{"SELECT 1 /* shardgate:shard=s0 */ /* shardgate:shard=s1 */", "s0", true},
		{"SELECT '/* shardgate:shard=s1 */'", "", false},
		{"SELECT 1 -- shardgate:shard=s1", "", false}, // only /* */ comments carry hints
		{"/*!50000 shardgate:shard=s1 */ SELECT 1", "", false},
		{"/* shardgate:shard= */ SELECT 1", "", false},
		{"/* shardgate:primary */ SELECT 1", "", false},
	} {
		name, ok := ShardHint([]byte(tc.sql))
		if name != tc.name || ok != tc.ok {
			t.Errorf("ShardHint(%q) = %q, %v; want %q, %v", tc.sql, name, ok, tc.name, tc.ok)
		}
		flagged := Classify([]byte(tc.sql)).Flags&FlagHintShard != 0
		if flagged != tc.ok && tc.name != "" {
			t.Errorf("Classify(%q) FlagHintShard = %v, want %v", tc.sql, flagged, tc.ok)
		}
	}
}

func TestShardHintKeepsReadsReadOnly(t *testing.T) {
	st := Classify([]byte("/* shardgate:shard=s1 */ SELECT c FROM t_0004 WHERE id = 1"))
	if !IsReadOnly(st) {
		t.Fatalf("a shard hint made a plain SELECT not read-only: %v", st.Flags)
	}
}

func TestExplainHint(t *testing.T) {
	for sql, want := range map[string]bool{
		"/* shardgate:explain */ SELECT * FROM t WHERE id = 1": true,
		"SELECT /*+ SHARDGATE:EXPLAIN */ 1":                    true,
		"SELECT '/* shardgate:explain */'":                     false,
		"/* shardgate:explained */ SELECT 1":                   false,
	} {
		if got := Classify([]byte(sql)).Flags&FlagHintExplain != 0; got != want {
			t.Errorf("Classify(%q) FlagHintExplain = %v, want %v", sql, got, want)
		}
	}
}
