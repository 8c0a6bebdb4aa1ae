package backend

import "strings"

// GTIDCovered reports whether a MariaDB GTID position ("0-1-100,1-2-7", as in
// @@gtid_current_pos) includes the transaction gtid ("0-1-90"): for its
// replication domain the position has a sequence number at least as high.
// Malformed input counts as not covered. It does not allocate.
func GTIDCovered(pos, gtid string) bool {
	dom, _, seq, ok := splitGTID(gtid)
	if !ok {
		return false
	}
	for pos != "" {
		var part string
		part, pos, _ = strings.Cut(pos, ",")
		d, _, n, ok := splitGTID(strings.TrimSpace(part))
		if ok && d == dom && n >= seq {
			return true
		}
	}
	return false
}

// ValidGTID reports whether g is one MariaDB GTID, "domain-server-seq".
func ValidGTID(g string) bool {
	_, _, _, ok := splitGTID(g)
	return ok
}

// splitGTID parses "domain-server-seq".
func splitGTID(g string) (domain, server, seq uint64, ok bool) {
	var parts [3]uint64
	for i := range parts {
		var field string
		if i < 2 {
			var found bool
			field, g, found = strings.Cut(g, "-")
			if !found {
				return 0, 0, 0, false
			}
		} else {
			field = g
		}
		n, ok := parseUint(field)
		if !ok {
			return 0, 0, 0, false
		}
		parts[i] = n
	}
	return parts[0], parts[1], parts[2], true
}

func parseUint(s string) (uint64, bool) {
	if s == "" || len(s) > 20 {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (^uint64(0)-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}
