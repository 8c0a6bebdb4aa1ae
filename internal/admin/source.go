package admin

import (
	"context"
	"time"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/frontend"
	"github.com/shardgate/shardgate/internal/telemetry"
	"github.com/shardgate/shardgate/internal/xa"
)

// Source is what the admin views read and the admin actions act through:
// the running proxy (internal/proxy implements it). Every method is safe
// to call from many goroutines at once.
type Source interface {
	// Backends describes every server of every cluster, by cluster name
	// and then in configuration order (the primary first).
	Backends() []Backend
	// Sessions are the client sessions of every client listener.
	Sessions() []frontend.Activity
	Digests() []telemetry.DigestStat
	ResetDigests()
	// Sharding lists where each sub-table of each schema lives.
	Sharding() []SubTable
	// Config is the running configuration, key by key, secrets masked.
	Config() []config.Setting
	Versions(ctx context.Context) Versions
	Status() Status
	// Transactions are the open transactions with XA branches of this
	// process (cross_shard_writes: atomic); InDoubt the prepared branches
	// the last recovery pass left unresolved, of any instance.
	Transactions() []xa.TrxView
	InDoubt() []xa.Branch
	// History is the samples the status page charts, oldest first.
	History() []Sample
	// Fleet lists the instances of shardgate that share this one's
	// configuration, this one included (Self); empty when it is not part
	// of a fleet.
	Fleet() []Proxy

	// SetBackendOffline drains (offline) or restores a server of a
	// cluster, named by its configured address or by the address it was
	// resolved to.
	SetBackendOffline(cluster, address string, offline bool) error
	// KillSession ends a client session as KILL CONNECTION does;
	// ErrNoSession when no client session has the id.
	KillSession(id uint32) error
	// ReloadConfig re-reads the configuration file and applies it as
	// SIGHUP does; on error nothing changed.
	ReloadConfig() ([]config.Change, error)
}

// Backend is one server of a cluster as SHOW BACKENDS shows it.
type Backend struct {
	Cluster string
	Address string // as configured
	Writer  bool   // takes the cluster's writes now
	Checked bool   // a health check has finished
	Up      bool
	// ReadOnly, Replicating and Lag are nil when unknown (not checked
	// yet, or the backend account may not read them).
	ReadOnly    *bool
	Replicating *bool
	Lag         *time.Duration
	BreakerOpen bool
	Offline     bool
	Weight      int
	// The pool: connections open, idle, in use; statements waiting.
	Open, Idle, InUse, Waiting int
	Running                    int64  // statements running on it now
	Errors                     uint64 // failed connects and connections discarded as broken
	WaitTimeouts               uint64 // statements that gave up waiting for a connection
	LastError                  string // the last health check's error
}

// SubTable is one place of a sharded schema's table: a sub-table on a
// cluster, a reference table's copy on a shard, or (Table "*") the
// cluster that holds the schema's unlisted tables.
type SubTable struct {
	Schema, Table string
	Type          string // sharded | reference | unlisted
	Rule          string // e.g. hash, "mod like orders"; "" for the others
	ShardKey      string
	SubTable      string
	Cluster       string
}

// Proxy is one instance of shardgate in a fleet: where it serves, what
// it runs, and which revision of the shared configuration it applied.
// Instances that agree show the same revision and checksum.
type Proxy struct {
	ID             string
	Addr           string
	Version        string
	Started        time.Time
	Admin          string // its admin HTTP address
	ConfigRevision int64
	ConfigChecksum string
	Self           bool // the instance answering
}

// ConfigSource is how an instance stands with its configuration in etcd.
type ConfigSource struct {
	URL       string
	Revision  int64 // applied
	Checksum  string
	FromCache bool // started from the local copy while etcd was down
	// Rejected is the newest revision that failed validation while it is
	// newer than the one applied, with the reason; 0 when none.
	Rejected      int64
	RejectedError string
	Reachable     bool
	LastError     string
}

// Versions are shardgate's and its servers'.
type Versions struct {
	Shardgate  string // the build
	Advertised string // the version clients are greeted with
	Servers    []ServerVersion
}

// ServerVersion is a backend server's @@version, or why it is unknown.
type ServerVersion struct {
	Cluster, Address string
	Version          string
	Err              error
}

// Status are the proxy's counters for SHOW STATUS.
type Status struct {
	Started         time.Time
	Clients         int64  // client connections open now
	ClientsTotal    uint64 // accepted since start
	Queries         uint64 // client commands since start
	Errors          uint64 // statements answered with an error (statement telemetry)
	ProxyErrors     uint64 // errors the proxy itself answered
	BackendFailures uint64 // backend connections that failed under a client command
	AuthFailures    uint64
	// RecentQPS is the client commands per second over the last 10 s
	// (since start, in the first 10 s).
	RecentQPS float64
	// Config is nil unless the configuration comes from etcd.
	Config *ConfigSource
}
