package router

// shardHintPrefix follows "shardgate:" in a hint that names a shard.
const shardHintPrefix = "SHARD="

// shardgateHint reports whether a comment body starting at i (after
// "/*") is one of shardgate's hints: an optional '+' and blanks, then
// "shardgate:" in any case; and where the text after it starts.
func shardgateHint(s []byte, i int) (int, bool) {
	if i < len(s) && s[i] == '+' {
		i++
	}
	for i < len(s) && s[i] <= ' ' {
		i++
	}
	const prefix = "SHARDGATE:"
	if len(s)-i < len(prefix) || !eqUpper(s[i:i+len(prefix)], prefix) {
		return 0, false
	}
	return i + len(prefix), true
}

// hintName reads the name after "shardgate:shard=" in a comment body
// starting at i (after "/*"): letters, digits, '_', '-' and '.', as
// cluster names are written.
func hintName(s []byte, i int) (string, bool) {
	i, ok := shardgateHint(s, i)
	if !ok || len(s)-i < len(shardHintPrefix) || !eqUpper(s[i:i+len(shardHintPrefix)], shardHintPrefix) {
		return "", false
	}
	i += len(shardHintPrefix)
	j := i
	for j < len(s) && (isIdent[s[j]] || s[j] == '-' || s[j] == '.') {
		j++
	}
	return string(s[i:j]), j > i
}

// ShardHint returns the shard named by the first /* shardgate:shard=NAME */
// hint in sql, as Classify found it (FlagHintShard): the comments it reads
// are the ones the classifier reads, never text inside strings.
func ShardHint(sql []byte) (name string, ok bool) {
	note := func(i int, k commentEvent) {
		if ok || k != commentPlain || sql[i] != '/' {
			return
		}
		name, ok = hintName(sql, i+2)
	}
	l := lexer{s: sql}
	var t token
	gapStart, exec := 0, false
	for !ok {
		l.next(&t)
		exec = walkGap(sql, gapStart, t.start, exec, note)
		gapStart = t.end
		if t.kind == tEOF {
			break
		}
	}
	return name, ok
}
