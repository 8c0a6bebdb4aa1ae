package backend

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/mysql/auth"
)

// Accounts are the backend servers' own accounts, as accounts clients log
// in to the proxy with (a cluster's users: from_backend): the proxy holds
// no copy of them. A login is proven by logging in to the home cluster's
// writer with the client's password, as the client; the server's answer
// decides, with the server's plugin (mysql_native_password, ed25519,
// caching_sha2_password). The verified password is held in memory, so
// that the account's statements run on pools of connections logged in as
// it (Account.Pool), on any server of any cluster: the grants are the
// server's.
//
// A verification is trusted for TTL: a login with the same password
// within TTL of the last verification at the server is not checked
// again (docs/configuration.md, clusters[].users_cache_ttl). A password
// the server refuses is never accepted.
type Accounts struct {
	home *Cluster
	ttl  time.Duration
	log  *slog.Logger
	// key makes fingerprints of passwords (fingerprint) that a memory
	// dump does not turn into a dictionary attack's target by itself.
	key []byte

	mu sync.Mutex
	m  map[string]*Account
}

// Account is one backend account logged in through the proxy: its
// verified password and its pools, one per server its statements reached.
type Account struct {
	User string

	mu         sync.Mutex
	password   string
	fp         [sha256.Size]byte // fingerprint(password)
	sha2       [sha256.Size]byte // SHA256(SHA256(password)): the caching_sha2 fast path
	verifiedAt time.Time
	// pools are by *Server, read without a lock by every statement of its
	// sessions (Pool).
	pools sync.Map
	log   *slog.Logger
}

// ErrAccountRefused wraps the server's answer to a login it refused (a
// wrong password, no such account, a locked account): the client's
// credentials, not the server's availability, failed.
var ErrAccountRefused = errors.New("the backend refused the login")

// NewAccounts verifies logins on home's writer, trusting a verification
// for ttl (0: every login is verified).
func NewAccounts(home *Cluster, ttl time.Duration, log *slog.Logger) (*Accounts, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate the key of backend accounts' fingerprints: %w", err)
	}
	return &Accounts{home: home, ttl: ttl, log: log, key: key, m: map[string]*Account{}}, nil
}

// Home is the cluster logins are verified on.
func (a *Accounts) Home() *Cluster { return a.home }

// TTL is how long a verification is trusted.
func (a *Accounts) TTL() time.Duration { return a.ttl }

func (a *Accounts) fingerprint(password []byte) [sha256.Size]byte {
	m := hmac.New(sha256.New, a.key)
	m.Write(password)
	var out [sha256.Size]byte
	m.Sum(out[:0])
	return out
}

// Login checks user's password and returns its account. A password
// verified at the server less than TTL ago is accepted without asking the
// server again; otherwise the proxy logs in to the home cluster's writer
// with it, and that connection becomes the account's first pooled one. The
// error wraps ErrAccountRefused (and the server's *mysql.SQLError) when
// the server refused the password, and is the cause otherwise (the
// server could not be reached).
func (a *Accounts) Login(ctx context.Context, user string, password []byte) (*Account, error) {
	fp := a.fingerprint(password)
	if acct := a.lookup(user); acct != nil && acct.holds(fp) && acct.fresh(a.ttl, time.Now()) {
		return acct, nil
	}
	return a.verify(ctx, user, string(password), fp)
}

// LoginFast is Login for a caching_sha2_password fast-path response,
// which proves that the client knows the password the account holds
// without showing it. ok is false when it proves nothing (no account
// held, another password): the caller asks for the password itself.
func (a *Accounts) LoginFast(ctx context.Context, user string, nonce, resp []byte) (acct *Account, ok bool, err error) {
	acct = a.lookup(user)
	if acct == nil || len(resp) == 0 {
		return nil, false, nil
	}
	acct.mu.Lock()
	sha2, password, fp := acct.sha2, acct.password, acct.fp
	acct.mu.Unlock()
	if !auth.SHA2VerifyFast(sha2, nonce, resp) {
		return nil, false, nil
	}
	if acct.fresh(a.ttl, time.Now()) {
		return acct, true, nil
	}
	acct, err = a.verify(ctx, user, password, fp)
	return acct, true, err
}

func (a *Accounts) lookup(user string) *Account {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.m[user]
}

// verify logs in to the home writer as user. Success makes password the
// account's (its pools, if they held another, are closed: their
// connections were logged in with a password the server no longer takes);
// a refusal of the password the account holds forgets the account (its
// password was changed, or it was dropped, on the server).
func (a *Accounts) verify(ctx context.Context, user, password string, fp [sha256.Size]byte) (*Account, error) {
	w := a.home.Writer()
	if w == nil {
		return nil, fmt.Errorf("cluster %s has no writable server to check the login with", a.home.Name)
	}
	dc := *w.Pool.dial
	dc.User, dc.Password, dc.Database = user, password, ""
	if cfg := w.Pool.config(); cfg.ConnectTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.ConnectTimeout)
		defer cancel()
	}
	c, err := Dial(ctx, &dc, false)
	if err != nil {
		var se *mysql.SQLError
		if !errors.As(err, &se) {
			return nil, fmt.Errorf("backend %s (%s): %w", w.Pool.Name, dc.Addr, err)
		}
		if acct := a.lookup(user); acct != nil && acct.holds(fp) {
			a.forget(acct, "the backend refused the password the proxy held")
		}
		return nil, fmt.Errorf("%w: %w", ErrAccountRefused, se)
	}
	acct := a.accept(user, password, fp)
	acct.Pool(w).adopt(c)
	return acct, nil
}

// accept records a verified password, making the account if it is new.
func (a *Accounts) accept(user, password string, fp [sha256.Size]byte) *Account {
	a.mu.Lock()
	acct := a.m[user]
	if acct == nil {
		acct = &Account{User: user, log: a.log.With("account", user)}
		a.m[user] = acct
	}
	a.mu.Unlock()
	acct.mu.Lock()
	defer acct.mu.Unlock()
	if acct.password != password || acct.verifiedAt.IsZero() {
		if !acct.verifiedAt.IsZero() {
			acct.log.Info("a backend account's password changed: its pooled connections close")
		}
		acct.closePools()
		acct.password, acct.fp = password, fp
		acct.sha2 = sha256.Sum256(sha256Sum(password))
	}
	acct.verifiedAt = time.Now()
	return acct
}

func sha256Sum(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// forget drops an account whose password the server refused: its pooled
// connections close (those in use as they are released), and a session
// logged in before gets the server's refusal when it needs a new one.
func (a *Accounts) forget(acct *Account, why string) {
	a.mu.Lock()
	if a.m[acct.User] == acct {
		delete(a.m, acct.User)
	}
	a.mu.Unlock()
	acct.log.Info("forgetting a backend account: its pooled connections close", "why", why)
	acct.mu.Lock()
	acct.closePools()
	acct.mu.Unlock()
}

// Close closes every account's pools (the proxy stops).
func (a *Accounts) Close() {
	a.mu.Lock()
	m := a.m
	a.m = map[string]*Account{}
	a.mu.Unlock()
	for _, acct := range m {
		acct.mu.Lock()
		acct.closePools()
		acct.mu.Unlock()
	}
}

func (acct *Account) holds(fp [sha256.Size]byte) bool {
	acct.mu.Lock()
	defer acct.mu.Unlock()
	return hmac.Equal(acct.fp[:], fp[:])
}

func (acct *Account) fresh(ttl time.Duration, now time.Time) bool {
	acct.mu.Lock()
	defer acct.mu.Unlock()
	return !acct.verifiedAt.IsZero() && now.Sub(acct.verifiedAt) < ttl
}

// Pool returns the account's pool on srv, made on first use with srv's
// pool's limits (no connections opened ahead of use, no pipelining): the
// statements of the account's sessions take their connections from it.
// One lock-free look-up when it exists.
func (acct *Account) Pool(srv *Server) *Pool {
	if p, ok := acct.pools.Load(srv); ok {
		return p.(*Pool)
	}
	acct.mu.Lock()
	defer acct.mu.Unlock()
	if p, ok := acct.pools.Load(srv); ok {
		return p.(*Pool)
	}
	p := newAccountPool(srv, acct.User, acct.password, acct.log)
	acct.pools.Store(srv, p)
	return p
}

// closePools closes the account's pools; acct.mu is held.
func (acct *Account) closePools() {
	acct.pools.Range(func(k, v any) bool {
		acct.pools.Delete(k)
		go v.(*Pool).Close() // waits for its maintenance to stop: not under the lock
		return true
	})
}

// newAccountPool is a pool of srv's server logged in as user.
func newAccountPool(srv *Server, user, password string, log *slog.Logger) *Pool {
	base := srv.Pool
	dc := *base.dial
	dc.User, dc.Password, dc.Database = user, password, ""
	cfg := base.config()
	cfg.MinIdle, cfg.PipelineConnections = 0, 0
	p := NewPool(base.Name+"/"+user, &dc, cfg, log)
	p.server.Store(srv)
	p.evaluator.server.Store(srv)
	return p
}

// adopt takes c, a connection dialed with the pool's credentials outside
// it, as one of its idle connections (or closes it when the pool is full).
func (p *Pool) adopt(c *Conn) {
	p.mu.Lock()
	if p.closed || p.open >= p.cfg.MaxOpen {
		p.mu.Unlock()
		_ = c.Close()
		return
	}
	p.open++
	c.pool, c.epoch, c.uses = p, p.epoch, 1
	p.mu.Unlock()
	p.Release(c)
}
