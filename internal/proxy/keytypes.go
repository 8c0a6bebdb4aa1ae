package proxy

import (
	"context"
	"time"
)

// keyTypeRetry is how often shard-key types that could not be learnt are
// tried again; learnKeyTypesWait bounds the first attempt, which Start
// makes before serving so that the first statements route by key.
const (
	keyTypeRetry      = 2 * time.Second
	learnKeyTypesWait = 3 * time.Second
)

// startKeyTypes learns the shard-key column types of the sharded tables
// (planner.Keyspace.LearnKeyTypes): once before serving, then in the
// background until every one is known. Statements on a table whose key
// type is unknown go to all of its sub-tables meanwhile.
func (p *Proxy) startKeyTypes() {
	if len(p.keyspaceMap()) == 0 {
		return
	}
	pending := p.learnKeyTypesOnce(nil)
	if pending == nil {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.retryKeyTypes(pending)
	}()
}

// retryKeyTypes tries again every keyTypeRetry until nothing is pending or
// the proxy closes.
func (p *Proxy) retryKeyTypes(pending map[string]bool) {
	t := time.NewTicker(keyTypeRetry)
	defer t.Stop()
	for pending != nil {
		select {
		case <-p.closed:
			return
		case <-t.C:
		}
		pending = p.learnKeyTypesOnce(pending)
	}
	p.log.Info("shard-key types learnt for every sharded table; statements now route by key")
}

// learnKeyTypesOnce is learnKeyTypes within learnKeyTypesWait.
func (p *Proxy) learnKeyTypesOnce(before map[string]bool) map[string]bool {
	ctx, cancel := context.WithTimeout(context.Background(), learnKeyTypesWait)
	defer cancel()
	return p.learnKeyTypes(ctx, before)
}

// learnKeyTypes makes one attempt and returns what is still unknown, as
// messages. A message is logged when it first appears, not at each retry.
func (p *Proxy) learnKeyTypes(ctx context.Context, before map[string]bool) map[string]bool {
	var pending map[string]bool
	for _, ks := range p.keyspaceMap() {
		for _, err := range ks.LearnKeyTypes(ctx) {
			if pending == nil {
				pending = map[string]bool{}
			}
			msg := err.Error()
			pending[msg] = true
			if !before[msg] {
				p.log.Warn("shard-key type unknown: statements on this table go to all of its sub-tables until it is learnt", "err", msg)
			}
		}
	}
	return pending
}
