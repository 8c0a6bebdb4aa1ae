package mysql

import "fmt"

// A command packet may start with statements of the proxy's own, a
// multi-statement whose first statements bring the connection's session
// in step with a client's (a backend connection's state sync riding in
// the packet of the statement it prepares, instead of costing a round
// trip of its own). Their results come first, one OK each, and the
// reads consume them, so that whoever reads the command's answer sees
// it alone, as if the command had been written by itself.

// prefixRead is what remains of a prefix's results to consume.
type prefixRead struct {
	n, ok int                       // results still to read; OKs read
	done  func(ok int, failed bool) // told once the prefix is read
}

// ExpectPrefix says that the command just written starts with n
// statements whose results the reads consume before the command's
// answer. done is told how many of them succeeded and whether one
// failed: the server runs nothing after a statement that fails, so its
// ERR is then read as the command's answer (the command did not run).
// done is not told when the connection fails first.
func (c *Conn) ExpectPrefix(n int, done func(ok int, failed bool)) {
	c.prefix = prefixRead{n: n, done: done}
}

// readPastPrefix reads the prefix's results, then the first frame of the
// command's answer: the ERR that ended the prefix, if one did.
func (c *Conn) readPastPrefix() ([]byte, bool, error) {
	for c.prefix.n > 0 {
		p, more, err := c.readFrame()
		if err != nil {
			c.prefix = prefixRead{} // the connection is done for
			return nil, false, err
		}
		switch status, isOK := okStatus(p, more); {
		case len(p) > 0 && p[0] == HeaderErr && !more:
			c.endPrefix(true)
			return p, false, nil
		case !isOK:
			c.prefix = prefixRead{}
			return nil, false, fmt.Errorf("a statement ahead of a command answered %d bytes, not OK or ERR: %w", len(p), ErrMalformed)
		case status&StatusMoreResultsExists == 0:
			c.prefix = prefixRead{}
			return nil, false, fmt.Errorf("a statement ahead of a command ended the answer: %w", ErrMalformed)
		}
		c.prefix.n--
		c.prefix.ok++
	}
	c.endPrefix(false)
	return c.readFrame()
}

// endPrefix tells the prefix's done that it has been read.
func (c *Conn) endPrefix(failed bool) {
	pr := c.prefix
	c.prefix = prefixRead{}
	if pr.done != nil {
		pr.done(pr.ok, failed)
	}
}

// okStatus returns the status flags of an OK packet (the whole packet in
// one frame); isOK is false for anything else.
func okStatus(p []byte, more bool) (status uint16, isOK bool) {
	if more || len(p) < 7 || p[0] != HeaderOK {
		return 0, false
	}
	r := NewReader(p[1:])
	r.LenEncInt() // affected rows
	r.LenEncInt() // last insert id
	status = r.Uint16()
	return status, r.OK()
}
