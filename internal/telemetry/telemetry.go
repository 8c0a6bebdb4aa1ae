// Package telemetry records what each client statement cost: per-digest
// counters and latency histograms, the slow query log and the statement
// metrics Prometheus scrapes. The frontend records; the admin views read.
package telemetry

import "time"

// DigestStat is one row of SHOW QUERY DIGESTS: the statements of one
// normalized shape run by one user in one database.
type DigestStat struct {
	Digest        uint64 // router.Stmt.Digest
	Text          string // the normalized statement, literals replaced by ?
	User, DB      string
	Count         uint64
	Errors        uint64
	RowsSent      uint64
	RowsAffected  uint64
	ShardsTouched uint64 // summed over the statements (a sharded statement's parts' shards)
	Total, Max    time.Duration
	Mean          time.Duration
	P50, P99      time.Duration
	FirstSeen     time.Time
	LastSeen      time.Time
}

// Recorder holds the digests. STUB: the telemetry helper replaces this
// file's bodies; the exported names and meanings are the contract with
// the admin views.
type Recorder struct{}

// Digests returns every digest's statistics, in no particular order.
func (r *Recorder) Digests() []DigestStat { return nil }

// ResetDigests forgets every digest (RESET QUERY DIGESTS).
func (r *Recorder) ResetDigests() {}
