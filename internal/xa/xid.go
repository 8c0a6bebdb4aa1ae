// Package xa is shardgate's two-phase commit over the servers' own XA:
// the ids of a transaction's branches, the decision table that holds a
// commit decision on the coordinator shard, recovery of branches left
// prepared, and the registry of the transactions open in this process.
// The session (internal/frontend) runs the protocol; docs/sharding.md
// ("Atomic transactions") writes it down step by step.
package xa

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// FormatID marks shardgate's XA branches ("SG"): recovery leaves the
// branches of other XA users of the servers alone.
const FormatID = 0x5347

// Limits of MariaDB's and MySQL's XA ids: gtrid and bqual are at most 64
// bytes each.
const (
	maxGtrid = 64
	maxBqual = 64
)

// MaxNames is how long an instance name and a cluster or schema name may
// be together for their ids to fit (see CheckNames).
const (
	gtridOverhead = len("sg1:") + bootLen + 1 + 13 + 1 // the longest sequence number is 13 base-36 digits
	bqualOverhead = 3 + 1 + 1                          // branch number, two colons
)

// XID names one branch of a transaction. The global part (gtrid) names
// the process that ran the transaction (its boot id), the transaction and
// the coordinator shard; the branch part (bqual) the branch, the
// configured instance name and the schema whose decision table, on the
// coordinator shard, holds the decision. Any instance can thus tell whose a
// branch is and where to read its decision.
type XID struct {
	Boot        string // the process's boot id (NewBoot)
	Seq         uint64 // the transaction, counted by the process
	Coordinator string // the cluster whose local transaction decides
	Branch      int    // the participant, numbered within the transaction
	Instance    string // the shardgate instance's configured name
	Schema      string // the database of the decision table
}

// Gtrid is the global transaction id shared by all branches.
func (x XID) Gtrid() string {
	return "sg1:" + x.Boot + ":" + strconv.FormatUint(x.Seq, 36) + ":" + x.Coordinator
}

// Bqual is the branch qualifier.
func (x XID) Bqual() string {
	return strconv.Itoa(x.Branch) + ":" + x.Instance + ":" + x.Schema
}

// SQL is the xid as XA statements take it: hex literals, whatever bytes
// the names hold.
func (x XID) SQL() string { return xidSQL(x.Gtrid(), x.Bqual()) }

func xidSQL(gtrid, bqual string) string {
	return "X'" + hex.EncodeToString([]byte(gtrid)) + "',X'" + hex.EncodeToString([]byte(bqual)) + "'," + strconv.Itoa(FormatID)
}

func (x XID) String() string { return x.Gtrid() + "," + x.Bqual() }

// ParseXID reads the parts of a branch's id as XA RECOVER lists it.
func ParseXID(gtrid, bqual string) (XID, error) {
	g := strings.SplitN(gtrid, ":", 4)
	if len(g) != 4 || g[0] != "sg1" || g[3] == "" {
		return XID{}, fmt.Errorf("not a shardgate gtrid: %q", gtrid)
	}
	seq, err := strconv.ParseUint(g[2], 36, 64)
	if err != nil {
		return XID{}, fmt.Errorf("gtrid %q: transaction number: %w", gtrid, err)
	}
	b := strings.SplitN(bqual, ":", 3)
	if len(b) != 3 {
		return XID{}, fmt.Errorf("not a shardgate bqual: %q", bqual)
	}
	n, err := strconv.Atoi(b[0])
	if err != nil {
		return XID{}, fmt.Errorf("bqual %q: branch number: %w", bqual, err)
	}
	return XID{Boot: g[1], Seq: seq, Coordinator: g[3], Branch: n, Instance: b[1], Schema: b[2]}, nil
}

// bootLen is the length of a boot id.
const bootLen = 8

// NewBoot returns a process's boot id: random, so that the transaction
// numbers of a restarted process never repeat the ids of branches its
// predecessor left prepared.
func NewBoot() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	v := uint64(b[0])<<32 | uint64(b[1])<<24 | uint64(b[2])<<16 | uint64(b[3])<<8 | uint64(b[4])
	s := strconv.FormatUint(v, 36)
	return strings.Repeat("0", bootLen-len(s)) + s
}

// CheckNames reports names that make ids longer than XA allows, or hold
// the separator an instance name may not.
func CheckNames(instance, cluster, schema string) error {
	switch {
	case instance == "":
		return errors.New("the instance name is empty")
	case strings.Contains(instance, ":"):
		return fmt.Errorf("instance name %q holds ':'", instance)
	case gtridOverhead+len(cluster) > maxGtrid:
		return fmt.Errorf("cluster name %q is too long for XA ids: at most %d bytes", cluster, maxGtrid-gtridOverhead)
	case bqualOverhead+len(instance)+len(schema) > maxBqual:
		return fmt.Errorf("instance name %q and schema name %q are too long for XA ids together: at most %d bytes",
			instance, schema, maxBqual-bqualOverhead)
	}
	return nil
}
