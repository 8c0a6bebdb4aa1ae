package proxy

import (
	"context"
	"fmt"
	"slices"

	"github.com/shardgate/shardgate/internal/sharding"
	"github.com/shardgate/shardgate/internal/xa"
)

// buildTransactions sets up atomic transactions across shards when a
// schema has cross_shard_writes: atomic: the registry that names this
// process in XA ids, their metrics, and the recovery of prepared branches
// over every cluster of those schemas (docs/sharding.md, "Atomic
// transactions").
func (p *Proxy) buildTransactions() error {
	cfg := p.runningConfig()
	instance := cfg.InstanceName()
	byCluster := map[string][]string{} // cluster -> atomic schemas on it
	var order []string
	for _, ks := range p.keyspaceMap() {
		if ks.Schema.CrossShardWrites != sharding.CrossShardAtomic {
			continue
		}
		for _, name := range ks.Schema.Shards {
			if err := xa.CheckNames(instance, name, ks.Schema.Name); err != nil {
				return fmt.Errorf("schema %s: cross_shard_writes: atomic: %w (set transactions.instance, or shorten the names)", ks.Schema.Name, err)
			}
			if _, ok := byCluster[name]; !ok {
				order = append(order, name)
			}
			if !slices.Contains(byCluster[name], ks.Schema.Name) {
				byCluster[name] = append(byCluster[name], ks.Schema.Name)
			}
		}
	}
	p.xaReg = xa.NewRegistry(instance)
	p.xaMetrics = xa.NewMetrics(p.registry)
	if len(order) == 0 {
		return nil
	}
	slices.Sort(order)
	var shards []xa.Shard
	for _, name := range order {
		shards = append(shards, xa.Shard{Name: name, Dial: writerDialer(p.clusters[name]), Schemas: byCluster[name]})
	}
	p.recoverer = xa.NewRecoverer(xa.Config{Registry: p.xaReg, Shards: shards,
		Interval: cfg.Transactions.RecoveryInterval, AbandonAfter: cfg.Transactions.AbandonAfter,
		Log: p.log.With("component", "xa-recovery"), Metrics: p.xaMetrics})
	p.xaReg.Tables = p.recoverer.CreateTable
	return nil
}

// startRecovery runs recovery until Close.
func (p *Proxy) startRecovery() {
	if p.recoverer == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.recoveryCancel = cancel
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.recoverer.Run(ctx)
	}()
	p.log.Info("XA recovery started", "instance", p.xaReg.Instance, "boot", p.xaReg.Boot,
		"interval", p.runningConfig().Transactions.RecoveryInterval.String())
}

func (p *Proxy) stopRecovery() {
	if p.recoveryCancel != nil {
		p.recoveryCancel()
	}
}

// Transactions are the open transactions with XA branches of this process.
func (p *Proxy) Transactions() []xa.TrxView { return p.xaReg.List() }

// InDoubt are the prepared branches the last recovery pass left.
func (p *Proxy) InDoubt() []xa.Branch {
	if p.recoverer == nil {
		return nil
	}
	return p.recoverer.InDoubt()
}

// RecoverNow makes a recovery pass at once (tests, and operators through
// the admin port) and returns what it left prepared.
func (p *Proxy) RecoverNow(ctx context.Context) []xa.Branch {
	if p.recoverer == nil {
		return nil
	}
	return p.recoverer.Pass(ctx)
}
