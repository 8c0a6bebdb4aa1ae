package proxy

import (
	"context"
	"fmt"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/planner"
	"github.com/shardgate/shardgate/internal/sequence"
)

// buildSequences gives each sharded schema its sequence store: counters
// in the sequence.DefaultTable table of the schema's database on its
// default cluster, reached through the cluster's current writer on
// connections of the store's own (docs/sharding.md, "Sequences"). Nothing
// connects until an INSERT needs an id.
func (p *Proxy) buildSequences() error {
	for _, ks := range p.keyspaceMap() {
		if err := p.setSequences(ks); err != nil {
			return err
		}
	}
	return nil
}

// setSequences gives a keyspace its schema's sequence store, made on first
// use: a keyspace a reload rebuilt keeps its schema's store.
func (p *Proxy) setSequences(ks *planner.Keyspace) error {
	st := p.sequences[ks.Schema.Name]
	if st == nil {
		var err error
		st, err = sequence.NewStore(sequence.Config{Dial: writerDialer(ks.Default), Database: ks.Schema.Name})
		if err != nil {
			return fmt.Errorf("schema %s: sequences: %w", ks.Schema.Name, err)
		}
		if p.sequences == nil {
			p.sequences = map[string]*sequence.Store{}
		}
		p.sequences[ks.Schema.Name] = st
	}
	ks.SetSequences(st)
	return nil
}

// writerDialer dials cl's writer of the moment, so that sequences follow
// a failover.
func writerDialer(cl *backend.Cluster) sequence.Dialer {
	return func(ctx context.Context) (*backend.Conn, error) {
		w := cl.Writer()
		if w == nil {
			return nil, fmt.Errorf("cluster %s has no writable server", cl.Name)
		}
		return w.Pool.Dial(ctx)
	}
}

func (p *Proxy) closeSequences() {
	for _, st := range p.sequences {
		st.Close()
	}
}
