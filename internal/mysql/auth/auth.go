// Package auth implements the cryptography of MySQL client authentication as
// used by shardgate, on both sides of the connection: computing the client's
// auth response, verifying it on the server, the RSA exchange used by
// caching_sha2_password over plain TCP, the stored password forms, and the
// self-signed TLS certificate MySQL 8 generates when none is configured.
//
// The package does no I/O on the wire and knows nothing about packets; the
// protocol code frames what is computed here. Every input that can come
// from a peer is treated as hostile: wrong lengths make verification fail or
// return an error, never panic.
package auth

import (
	"crypto/rand"
	"fmt"
)

// ScrambleLen is the length of the random salt (called "scramble" by
// mysql_native_password and "nonce" by caching_sha2_password) the server
// sends in its initial handshake.
const ScrambleLen = 20

// Plugin names as they appear on the wire.
const (
	PluginNative      = "mysql_native_password"
	PluginCachingSHA2 = "caching_sha2_password"
)

// NewScramble returns a fresh random salt in the form MySQL generates it:
// every byte is in 1..127 and none is '$'. The salt travels in a
// NUL-terminated handshake field, so it must not contain '\0'; MySQL also
// keeps it 7-bit and free of '$' (its generate_user_salt, shared with the
// "$A$..." stored-hash format, where '$' is the separator), and matching it
// exactly avoids surprising clients written against real servers.
//
// Unlike MySQL, which maps the excluded values onto their neighbours and so
// skews the distribution, this rejects them and draws again, keeping every
// allowed byte equally likely.
func NewScramble() ([ScrambleLen]byte, error) {
	var out [ScrambleLen]byte
	var buf [2 * ScrambleLen]byte
	n := 0
	for n < ScrambleLen {
		if _, err := rand.Read(buf[:]); err != nil {
			return [ScrambleLen]byte{}, fmt.Errorf("auth: generating scramble: %w", err)
		}
		for _, b := range buf {
			if b = b & 0x7f; !scrambleByteOK(b) {
				continue
			}
			out[n] = b
			if n++; n == ScrambleLen {
				break
			}
		}
	}
	return out, nil
}

// scrambleByteOK reports whether b may appear in a scramble.
func scrambleByteOK(b byte) bool {
	return b >= 1 && b <= 127 && b != '$'
}
