package proxy

// LockReload holds the reload lock, as a Reload resolving host names
// does, until unlock is called.
func (p *Proxy) LockReload() (unlock func()) {
	p.reloadMu.Lock()
	return p.reloadMu.Unlock
}
