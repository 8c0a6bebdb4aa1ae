package backend

import (
	"context"
	"time"
)

// maintain runs off the hot path: it keeps MinIdle connections warm, retires
// connections idle past IdleTimeout (above MinIdle) or older than
// MaxLifetime, and pings connections that sat idle for a health-check
// interval so a dead one is found here rather than by a client.
func (p *Pool) maintain(ticking bool) {
	defer close(p.done)
	every := tickEvery(p.config())
	var tick *time.Ticker
	var ticks <-chan time.Time // nil (never ready) when not ticking
	if ticking {
		tick = time.NewTicker(every)
		defer tick.Stop()
		ticks = tick.C
	}
	p.warm()
	for {
		select {
		case <-p.stop:
			return
		case <-p.back:
			p.warm()
		case <-ticks:
			cfg := p.config() // SetConfig may have changed it
			if d := tickEvery(cfg); d != every {
				every = d
				tick.Reset(every)
			}
			p.tick(cfg)
		}
	}
}

// tick is maintenance's periodic work.
func (p *Pool) tick(cfg PoolConfig) {
	p.noteUses(time.Now())
	p.retireIdleLanes(cfg)
	p.expire(cfg)
	p.healthCheck(cfg)
	p.warm()
}

func tickEvery(cfg PoolConfig) time.Duration {
	d := cfg.HealthCheckInterval / 2
	if d > time.Second {
		d = time.Second
	}
	if d < 10*time.Millisecond {
		d = 10 * time.Millisecond
	}
	return d
}

// warm dials until MinIdle connections are open. It stops at the first
// failure (which opens the server's breaker); it resumes once the health
// checker has put the server back.
func (p *Pool) warm() {
	if s := p.server.Load(); s != nil && s.BreakerOpen() {
		return // out: its health checker probes it, no need to dial here too
	}
	for {
		p.mu.Lock()
		if p.closed || p.open >= p.cfg.MinIdle || p.open >= p.cfg.MaxOpen {
			p.mu.Unlock()
			return
		}
		p.open++
		connectTimeout := p.cfg.ConnectTimeout
		p.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), connectTimeout+time.Second)
		c, err := p.dialReserved(ctx, false)
		cancel()
		if err != nil {
			return
		}
		p.Release(c)
	}
}

// serverBack wakes maintain to warm up now: the health checker just put
// the server back in use.
func (p *Pool) serverBack() {
	select {
	case p.back <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// takeIdle removes from the idle stacks the connections pick selects.
func (p *Pool) takeIdle(pick func(c *Conn, idleCount int) bool) []*Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*Conn
	total := len(p.idle[0]) + len(p.idle[1])
	for fr := range p.idle {
		kept := p.idle[fr][:0]
		for _, c := range p.idle[fr] {
			if pick(c, total-len(out)) {
				c.idleIdx = -1
				out = append(out, c)
				continue
			}
			c.idleIdx = len(kept)
			kept = append(kept, c)
		}
		for i := len(kept); i < len(p.idle[fr]); i++ {
			p.idle[fr][i] = nil
		}
		p.idle[fr] = kept
	}
	return out
}

// noteUses sets lastUsed of the idle connections handed out since the
// previous tick to now. Taking the time here rather than at each release
// keeps a clock read off the hot path; idle expiry and health checks are
// then late by at most one tick.
func (p *Pool) noteUses(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for fr := range p.idle {
		for _, c := range p.idle[fr] {
			if c.uses != c.usesSeen {
				c.usesSeen, c.lastUsed = c.uses, now
			}
		}
	}
}

func (p *Pool) expire(cfg PoolConfig) {
	now := time.Now()
	old := p.takeIdle(func(c *Conn, idleCount int) bool {
		if cfg.MaxLifetime > 0 && now.Sub(c.createdAt) > cfg.MaxLifetime {
			return true
		}
		return cfg.IdleTimeout > 0 && idleCount > cfg.MinIdle && now.Sub(c.lastUsed) > cfg.IdleTimeout
	})
	for _, c := range old {
		p.closeConn(c)
		p.releaseSlot()
	}
}

func (p *Pool) healthCheck(cfg PoolConfig) {
	now := time.Now()
	stale := p.takeIdle(func(c *Conn, _ int) bool {
		return now.Sub(c.lastUsed) > cfg.HealthCheckInterval && now.Sub(c.lastChecked) > cfg.HealthCheckInterval
	})
	for _, c := range stale {
		_ = c.NetConn().SetDeadline(now.Add(cfg.ConnectTimeout + time.Second))
		err := c.Ping()
		_ = c.NetConn().SetDeadline(time.Time{})
		if err != nil {
			p.log.Warn("idle backend connection failed its health check", "thread_id", c.ThreadID, "err", err)
			p.Discard(c, true)
			continue
		}
		c.lastChecked = time.Now()
		p.Release(c) // a ping leaves uses alone: not use for idle expiry
	}
}
