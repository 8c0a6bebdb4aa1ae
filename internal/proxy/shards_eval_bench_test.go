package proxy_test

import (
	"database/sql"
	"fmt"
	"testing"

	"github.com/shardgate/shardgate/internal/mysql"
)

// BenchmarkShardedEvaluateJoin: an evaluated join of two copies of a
// 10,000-row table off its shard key: its rows copied to the evaluator
// (the default cluster, s0, which holds half of them), then joined
// there. (The rows are placed by sub-table, not by the hash: every row
// is read.)
func BenchmarkShardedEvaluateJoin(b *testing.B) {
	p, d0, d1, _, _, _ := shardedPairProxy(b, "sevj")
	for i, d := range []*sql.DB{d0, d0, d1, d1} {
		mustExec(b, d, fmt.Sprintf("INSERT INTO t_%04d (id, v) SELECT seq * 4 + %d, seq %% 97 FROM seq_0_to_2499", i, i))
	}
	cl := mfDial(b, p.Addrs()[0])
	if err := cl.greeting(); err != nil {
		b.Fatal(err)
	}
	if err := cl.authenticateAs(appUser, appPass); err != nil {
		b.Fatal(err)
	}
	h := &hotClient{mfClient: cl, p: p}
	q := append([]byte{mysql.ComQuery}, "SELECT COUNT(*), SUM(b.id) FROM t a JOIN t b ON b.v = a.id"...)
	h.roundTrip(b, q)
	b.ResetTimer()
	for range b.N {
		h.roundTrip(b, q)
	}
}
