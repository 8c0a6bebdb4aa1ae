// Package sequence hands out AUTO_INCREMENT ids for sharded tables. Each
// (schema, table) has one counter in a backend table, the next id nobody has
// reserved yet; a proxy reserves a block of ids from it in one atomic
// statement and hands them out from memory. Several proxies on the same
// backends therefore never hand out the same id, and a restarted proxy never
// goes below what it, or any other, reserved before. See docs/sharding.md,
// "Sequences", for what is and is not promised.
package sequence

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
)

// Defaults for Config.
const (
	DefaultTable   = "shardgate_sequences"
	DefaultBlock   = 1000
	DefaultTimeout = 10 * time.Second
)

// Dialer opens a connection to the writable server of the cluster holding
// the sequences table. The Store keeps the connections it opens to itself:
// they never serve clients, so the session state of a client cannot leak
// into a reservation (autocommit=0 would hold the row lock and lose the
// reservation on rollback) nor a reservation's LAST_INSERT_ID into a client.
type Dialer func(ctx context.Context) (*backend.Conn, error)

// MaxFunc returns the largest value of a table's auto-increment key over
// all its sub-tables (0 when they are empty or hold only values below 1).
// A sequence calls it once, when its counter does not exist yet.
type MaxFunc func(ctx context.Context) (uint64, error)

// Config says where sequences are stored and how they are handed out.
type Config struct {
	Dial     Dialer
	Database string // database holding the sequences table (required)
	Table    string // default DefaultTable
	// Block is how many ids one round trip reserves (default DefaultBlock).
	// Larger blocks mean fewer round trips and larger gaps after a restart.
	Block uint64
	// Timeout bounds each round trip to the backend (default DefaultTimeout).
	Timeout time.Duration
}

// table is the counter storage a Sequence draws from: the backend table,
// or a fake in unit tests.
type table interface {
	// advance sets the counter of key to max(counter, floor) + n and returns
	// the new value; found is false when key has no counter.
	advance(ctx context.Context, key Key, floor, n uint64) (next uint64, found bool, err error)
	// create makes key's counter at least next, creating it if needed.
	create(ctx context.Context, key Key, next uint64) error
	close()
}

// Key names a sequence: the logical table whose auto-increment key it feeds.
// Names are compared exactly (binary), as given in the configuration.
type Key struct {
	Schema, Table string
}

func (k Key) String() string { return k.Schema + "." + k.Table }

// Store holds the sequences of one cluster and database.
type Store struct {
	t     table
	block uint64

	mu   sync.Mutex
	seqs map[Key]*Sequence
}

// NewStore checks cfg and returns a Store. It does not connect: the table is
// created, and each counter initialised, on first use.
func NewStore(cfg Config) (*Store, error) {
	if cfg.Dial == nil {
		return nil, errors.New("sequence: Config.Dial is required")
	}
	if cfg.Database == "" {
		return nil, errors.New("sequence: Config.Database is required")
	}
	if cfg.Table == "" {
		cfg.Table = DefaultTable
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	return newStore(newSQLTable(cfg), cfg.Block), nil
}

func newStore(t table, block uint64) *Store {
	if block == 0 {
		block = DefaultBlock
	}
	return &Store{t: t, block: block, seqs: map[Key]*Sequence{}}
}

// Close closes the Store's idle connections. Sequences must not be used
// afterwards.
func (s *Store) Close() { s.t.close() }

// Sequence returns the sequence of schema.table, the same one on every call,
// so that all statements on a table share its block. max is used by the
// first call only.
func (s *Store) Sequence(schema, table string, max MaxFunc) *Sequence {
	k := Key{Schema: schema, Table: table}
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.seqs[k]
	if q == nil {
		q = &Sequence{key: k, store: s, max: max}
		s.seqs[k] = q
	}
	return q
}

// Sequence hands out the ids of one table. It is safe for concurrent use.
type Sequence struct {
	key   Key
	store *Store
	max   MaxFunc

	mu sync.Mutex
	// [next, end) is the reserved block not handed out yet. end is also the
	// floor of the next reservation: ids only grow within this instance.
	next, end uint64
	// busy is non-nil while a round trip for this sequence is under way, and
	// closed when it ends. One at a time, so that a reservation and an
	// Observe cannot cross.
	busy chan struct{}
}

// Key returns the table the sequence feeds.
func (q *Sequence) Key() Key { return q.key }

// Next reserves n consecutive ids for one statement and returns the first:
// the statement's rows get first, first+1, ..., first+n-1 (what InnoDB's
// "consecutive" lock mode gives a simple multi-row INSERT). Ids grow from
// call to call within this process, but are not gap-free, and two proxies'
// ids interleave in no particular order.
func (q *Sequence) Next(ctx context.Context, n int) (first uint64, err error) {
	if n < 1 {
		return 0, fmt.Errorf("sequence %s: %d ids asked for", q.key, n)
	}
	want := uint64(n)
	for {
		q.mu.Lock()
		if q.end-q.next >= want {
			first = q.next
			q.next += want
			q.mu.Unlock()
			return first, nil
		}
		floor := q.end
		done, wait := q.claim()
		if wait != nil {
			if err := waitFor(ctx, wait); err != nil {
				return 0, fmt.Errorf("sequence %s: %w", q.key, err)
			}
			continue
		}
		return q.refill(ctx, floor, max(q.store.block, want), want, done)
	}
}

// Peek returns the first id Next would hand out now, without reserving
// it: the next of this process's block, or, when the block is used up,
// the floor of its next reservation (1 before the first), which another
// proxy may take first. It makes no round trip. For a statement that is
// shown, not run (EXPLAIN of an INSERT): where its rows would go if it
// ran now, as nearly as this process knows.
func (q *Sequence) Peek() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return max(q.next, 1)
}

// Observe reports an id a client gave explicitly, so that it is never
// handed out later. Call it before the statement inserting id runs: from
// then on this process hands out only larger ids (as MySQL's counter moves
// past an explicit value), and reservations made by any proxy after
// Observe returns lie above id. Blocks other proxies reserved before may
// still contain id (see docs/sharding.md). Ids below this process's next
// id cost nothing; others cost a round trip.
func (q *Sequence) Observe(ctx context.Context, id uint64) error {
	for {
		q.mu.Lock()
		switch {
		case id < q.next:
			q.mu.Unlock()
			return nil
		case id < q.end:
			q.next = id + 1
			q.mu.Unlock()
			return nil
		}
		done, wait := q.claim()
		if wait != nil {
			if err := waitFor(ctx, wait); err != nil {
				return fmt.Errorf("sequence %s: %w", q.key, err)
			}
			continue
		}
		if id == ^uint64(0) {
			q.release(done)
			return fmt.Errorf("sequence %s: explicit id %d leaves no id to hand out", q.key, id)
		}
		_, err := q.refill(ctx, id+1, q.store.block, 0, done)
		return err
	}
}

// claim is called with q.mu held and releases it. It returns either done,
// meaning the caller now owns the round trip and must end it with release
// or refill, or wait, a channel closed when someone else's ends.
func (q *Sequence) claim() (done, wait chan struct{}) {
	defer q.mu.Unlock()
	if q.busy != nil {
		return nil, q.busy
	}
	q.busy = make(chan struct{})
	return q.busy, nil
}

func (q *Sequence) release(done chan struct{}) {
	q.mu.Lock()
	q.busy = nil
	q.mu.Unlock()
	close(done)
}

func waitFor(ctx context.Context, ch chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// refill reserves size ids at or above floor, makes them the block, takes
// the first take of them for the caller and returns the first id. The
// previous block's remaining ids are dropped: they leave a gap, never a
// duplicate. On error the block is unchanged.
func (q *Sequence) refill(ctx context.Context, floor, size, take uint64, done chan struct{}) (uint64, error) {
	defer q.release(done)
	end, err := q.reserve(ctx, floor, size)
	if err != nil {
		return 0, fmt.Errorf("sequence %s: reserve %d ids: %w", q.key, size, err)
	}
	first := end - size
	q.mu.Lock()
	q.next, q.end = first+take, end
	q.mu.Unlock()
	return first, nil
}

// reserve advances the backend counter, creating it from the table's
// current maximum when it does not exist yet.
func (q *Sequence) reserve(ctx context.Context, floor, size uint64) (uint64, error) {
	t := q.store.t
	end, found, err := t.advance(ctx, q.key, floor, size)
	if err != nil || found {
		return end, err
	}
	m, err := q.max(ctx)
	if err != nil {
		return 0, fmt.Errorf("current maximum of the key: %w", err)
	}
	if m == ^uint64(0) {
		return 0, fmt.Errorf("the key already holds %d: no id left to hand out", m)
	}
	if err := t.create(ctx, q.key, m+1); err != nil {
		return 0, err
	}
	end, found, err = t.advance(ctx, q.key, floor, size)
	if err == nil && !found {
		err = errors.New("its counter vanished right after it was created")
	}
	return end, err
}

// Generates reports whether the value a row gives for the auto-increment
// column asks for a generated id, as MySQL decides: NULL does, and 0 does
// unless sql_mode has NO_AUTO_VALUE_ON_ZERO. A row that omits the column,
// or gives DEFAULT, asks for one too (the caller treats it as NULL).
func Generates(isNull, isZero, noAutoValueOnZero bool) bool {
	return isNull || (isZero && !noAutoValueOnZero)
}

// CheckIncrement refuses the session settings sequences do not implement:
// ids are consecutive, so auto_increment_increment must be 1. With 1, MySQL
// ignores auto_increment_offset, and so do sequences.
func CheckIncrement(increment uint64) error {
	if increment == 1 {
		return nil
	}
	return mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax,
		"This version of shardgate doesn't yet support 'auto_increment_increment = %d on a sharded table'",
		increment)
}
