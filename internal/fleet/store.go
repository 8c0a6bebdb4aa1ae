package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrNoConfig means etcd holds no configuration under the prefix.
var ErrNoConfig = errors.New("no configuration stored")

// ConflictError is a push refused because the stored configuration is no
// longer the revision the push was based on.
type ConflictError struct {
	Expected, Current int64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("the stored configuration is revision %d, not %d: someone pushed meanwhile; read it again (config get, config diff) and push again",
		e.Current, e.Expected)
}

// Document is one revision of the configuration.
type Document struct {
	Revision int64 // etcd's mod revision of the configuration key
	Data     []byte
	// ReadAt is etcd's revision when Get read it (0 otherwise): a watch
	// for newer revisions starts after it.
	ReadAt int64
}

// Checksum identifies a document's content: instances that applied the
// same bytes show the same checksum, whatever revision carried them.
func (d Document) Checksum() string { return Checksum(d.Data) }

// Checksum is the first 12 hex digits of data's SHA-256.
func Checksum(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:6])
}

// PushMeta records who wrote a revision; config history shows it.
type PushMeta struct {
	Time       time.Time `json:"time"`
	User       string    `json:"user,omitempty"`
	Host       string    `json:"host,omitempty"`
	Source     string    `json:"source,omitempty"` // the file pushed
	RollbackOf int64     `json:"rollback_of,omitempty"`
	Version    string    `json:"version,omitempty"` // shardgate's
	Checksum   string    `json:"checksum"`
}

// Store reads and writes the fleet's configuration in etcd.
type Store struct {
	opts Options
	cli  *clientv3.Client
}

// Open connects to etcd as o says; Close releases it.
func Open(o Options) (*Store, error) {
	cli, err := o.client()
	if err != nil {
		return nil, err
	}
	return &Store{opts: o, cli: cli}, nil
}

// Close closes the etcd client.
func (s *Store) Close() error { return s.cli.Close() }

// URL names the store in messages.
func (s *Store) URL() string { return s.opts.URL() }

// Get returns the current configuration, or ErrNoConfig.
func (s *Store) Get(ctx context.Context) (Document, error) {
	resp, err := s.cli.Get(ctx, s.opts.configKey())
	if err != nil {
		return Document{}, fmt.Errorf("etcd %s: read the configuration: %w", s.URL(), err)
	}
	if len(resp.Kvs) == 0 {
		return Document{}, fmt.Errorf("%s: %w", s.URL(), ErrNoConfig)
	}
	kv := resp.Kvs[0]
	return Document{Revision: kv.ModRevision, Data: kv.Value, ReadAt: resp.Header.Revision}, nil
}

// At returns the configuration revision rev, which must be a revision at
// which the configuration was written (config history lists them).
func (s *Store) At(ctx context.Context, rev int64) (Document, error) {
	resp, err := s.cli.Get(ctx, s.opts.configKey(), clientv3.WithRev(rev))
	if errors.Is(err, rpctypes.ErrCompacted) {
		return Document{}, fmt.Errorf("revision %d is older than etcd's compaction: etcd no longer holds it", rev)
	}
	if errors.Is(err, rpctypes.ErrFutureRev) {
		return Document{}, fmt.Errorf("revision %d is not written yet", rev)
	}
	if err != nil {
		return Document{}, fmt.Errorf("etcd %s: read revision %d: %w", s.URL(), rev, err)
	}
	if len(resp.Kvs) == 0 {
		return Document{}, fmt.Errorf("no configuration existed at revision %d", rev)
	}
	kv := resp.Kvs[0]
	if kv.ModRevision != rev {
		return Document{}, fmt.Errorf("revision %d did not write the configuration: the configuration then was revision %d (config history lists revisions)",
			rev, kv.ModRevision)
	}
	return Document{Revision: rev, Data: kv.Value}, nil
}

// Put writes data as the new configuration if the stored one is still
// revision expect (0: none is stored), with meta beside it in the same
// transaction. It returns the new revision, or a *ConflictError.
func (s *Store) Put(ctx context.Context, data []byte, expect int64, meta PushMeta) (int64, error) {
	meta.Checksum = Checksum(data)
	mj, err := json.Marshal(meta)
	if err != nil {
		return 0, fmt.Errorf("push record: %w", err)
	}
	key := s.opts.configKey()
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", expect)).
		Then(clientv3.OpPut(key, string(data)), clientv3.OpPut(s.opts.metaKey(), string(mj))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("etcd %s: write the configuration: %w", s.URL(), err)
	}
	if !resp.Succeeded {
		cur := int64(0)
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			cur = kvs[0].ModRevision
		}
		return 0, &ConflictError{Expected: expect, Current: cur}
	}
	return resp.Header.Revision, nil
}

// Entry is one revision in the configuration's history.
type Entry struct {
	Revision int64
	Checksum string
	Size     int
	// Meta is nil for a revision written without config push (etcdctl).
	Meta *PushMeta
}

// History lists up to limit configuration revisions, newest first. etcd
// keeps them until it is compacted: Truncated says older ones existed but
// are gone.
func (s *Store) History(ctx context.Context, limit int) (entries []Entry, truncated bool, err error) {
	doc, err := s.Get(ctx)
	if err != nil {
		return nil, false, err
	}
	key := s.opts.configKey()
	rev := doc.Revision
	for len(entries) < limit {
		resp, err := s.cli.Get(ctx, key, clientv3.WithRev(rev))
		if errors.Is(err, rpctypes.ErrCompacted) {
			return entries, true, nil
		}
		if err != nil {
			return entries, false, fmt.Errorf("etcd %s: read revision %d: %w", s.URL(), rev, err)
		}
		if len(resp.Kvs) == 0 {
			// Deleted before this revision: the history starts again.
			return entries, false, nil
		}
		kv := resp.Kvs[0]
		e := Entry{Revision: kv.ModRevision, Checksum: Checksum(kv.Value), Size: len(kv.Value)}
		e.Meta = s.metaAt(ctx, kv.ModRevision)
		entries = append(entries, e)
		if kv.Version == 1 {
			return entries, false, nil
		}
		rev = kv.ModRevision - 1
	}
	return entries, false, nil
}

// metaAt returns the push record written with revision rev, if any.
func (s *Store) metaAt(ctx context.Context, rev int64) *PushMeta {
	resp, err := s.cli.Get(ctx, s.opts.metaKey(), clientv3.WithRev(rev))
	if err != nil || len(resp.Kvs) == 0 || resp.Kvs[0].ModRevision != rev {
		return nil
	}
	var m PushMeta
	if json.Unmarshal(resp.Kvs[0].Value, &m) != nil {
		return nil
	}
	return &m
}
