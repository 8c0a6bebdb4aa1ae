package auth

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Stored password forms.
//
// shardgate's own form is
//
//	$sg1$<hex SHA1(SHA1(pw))>$<hex SHA256(SHA256(pw))>
//
// (lowercase hex). It holds exactly what each plugin's fast path needs, so
// both mysql_native_password and caching_sha2_password work without the
// plaintext. MySQL's native form "*" + 40 hex digits (SHA1(SHA1(pw)), as in
// mysql.user) is also accepted; with it only mysql_native_password's fast
// path is possible, though caching_sha2_password full authentication still
// works through MatchesPlain.
//
// Both hashes are password equivalents for their fast path: whoever has the
// stored hash and one sniffed handshake can log in. Treat them as secrets;
// for that reason errors never quote the input and Stored's String method
// redacts it.

const (
	sg1Prefix    = "$sg1$"
	nativePrefix = "*"
	// mysqlSHA2Prefix starts MySQL's caching_sha2_password stored form, a
	// salted SHA256-crypt that cannot yield SHA256(SHA256(pw)).
	mysqlSHA2Prefix = "$A$"
)

// Hashes of the empty password, against which empty auth responses are
// checked.
var (
	emptyNative = nativeStage2(nil)
	emptySHA2   = sha2Stage2(nil)
)

// Stored is a parsed stored password. The zero value matches nothing.
type Stored struct {
	Native    [sha1.Size]byte // SHA1(SHA1(pw)), valid if HasNative
	HasNative bool
	SHA2      [sha256.Size]byte // SHA256(SHA256(pw)), valid if HasSHA2
	HasSHA2   bool
	// Empty records that the password is "" (from a plaintext config, or a
	// stored hash of ""). Clients send an empty auth response for an empty
	// password, which only such a Stored accepts.
	Empty bool
}

// HashPassword returns shardgate's stored form of password.
func HashPassword(password string) string {
	native := nativeStage2([]byte(password))
	sha2 := sha2Stage2([]byte(password))
	return sg1Prefix + hex.EncodeToString(native[:]) + "$" + hex.EncodeToString(sha2[:])
}

// StoredFromPlain builds a Stored from a plaintext password with both
// hashes, so every plugin and path works.
func StoredFromPlain(password string) Stored {
	return Stored{
		Native:    nativeStage2([]byte(password)),
		HasNative: true,
		SHA2:      sha2Stage2([]byte(password)),
		HasSHA2:   true,
		Empty:     password == "",
	}
}

// ParseStored parses either stored form. Hex digits may be of either case.
// An empty string is rejected rather than read as "no password": a missing
// hash in a config is far more often a mistake than an intent, and an
// account without a password can be configured explicitly with
// HashPassword("") or StoredFromPlain("").
func ParseStored(s string) (Stored, error) {
	var st Stored
	switch {
	case s == "":
		return Stored{}, errors.New("auth: empty stored password")
	case strings.HasPrefix(s, sg1Prefix):
		nativeHex, sha2Hex, ok := strings.Cut(s[len(sg1Prefix):], "$")
		if !ok {
			return Stored{}, errors.New("auth: malformed $sg1$ stored password: missing second '$'")
		}
		if err := decodeHash(st.Native[:], nativeHex); err != nil {
			return Stored{}, fmt.Errorf("auth: malformed $sg1$ stored password: SHA1 part: %w", err)
		}
		if err := decodeHash(st.SHA2[:], sha2Hex); err != nil {
			return Stored{}, fmt.Errorf("auth: malformed $sg1$ stored password: SHA256 part: %w", err)
		}
		st.HasNative, st.HasSHA2 = true, true
	case strings.HasPrefix(s, nativePrefix):
		if err := decodeHash(st.Native[:], s[len(nativePrefix):]); err != nil {
			return Stored{}, fmt.Errorf("auth: malformed MySQL native stored password: %w", err)
		}
		st.HasNative = true
	case strings.HasPrefix(s, mysqlSHA2Prefix):
		return Stored{}, errors.New("auth: MySQL caching_sha2_password hashes ($A$...) are salted and cannot be used; " +
			"store the \"*\" native hash or a shardgate $sg1$ hash instead")
	default:
		return Stored{}, errors.New("auth: unrecognised stored password format (want $sg1$... or *<40 hex digits>)")
	}
	st.Empty = st.hashesOfEmpty()
	return st, nil
}

// decodeHash decodes exactly len(dst) bytes of hex from src.
func decodeHash(dst []byte, src string) error {
	if len(src) != 2*len(dst) {
		return fmt.Errorf("want %d hex digits, got %d characters", 2*len(dst), len(src))
	}
	if _, err := hex.Decode(dst, []byte(src)); err != nil {
		return errors.New("invalid hex digit")
	}
	return nil
}

// hashesOfEmpty reports whether at least one hash is present and every
// present hash is of the empty password.
func (s Stored) hashesOfEmpty() bool {
	if !s.HasNative && !s.HasSHA2 {
		return false
	}
	ok := 1
	if s.HasNative {
		ok &= subtle.ConstantTimeCompare(s.Native[:], emptyNative[:])
	}
	if s.HasSHA2 {
		ok &= subtle.ConstantTimeCompare(s.SHA2[:], emptySHA2[:])
	}
	return ok == 1
}

// emptyPassword reports whether s is the empty password. A present hash of
// a non-empty password always wins over the Empty flag: an inconsistent
// Stored fails closed.
func (s Stored) emptyPassword() bool {
	if !s.HasNative && !s.HasSHA2 {
		return s.Empty
	}
	return s.hashesOfEmpty()
}

// nativeHash returns SHA1(SHA1(pw)) if it is known, which it also is for
// an empty password with no stored hash.
func (s Stored) nativeHash() ([sha1.Size]byte, bool) {
	switch {
	case s.HasNative:
		return s.Native, true
	case s.emptyPassword():
		return emptyNative, true
	}
	return [sha1.Size]byte{}, false
}

// sha2Hash is nativeHash for SHA256(SHA256(pw)).
func (s Stored) sha2Hash() ([sha256.Size]byte, bool) {
	switch {
	case s.HasSHA2:
		return s.SHA2, true
	case s.emptyPassword():
		return emptySHA2, true
	}
	return [sha256.Size]byte{}, false
}

// VerifyNative checks a mysql_native_password auth response. An empty
// response is accepted exactly when the password is empty.
func (s Stored) VerifyNative(salt, resp []byte) bool {
	if len(resp) == 0 {
		return s.emptyPassword()
	}
	h, ok := s.nativeHash()
	return ok && NativeVerify(h, salt, resp)
}

// VerifySHA2Fast checks a caching_sha2_password fast-path auth response. An
// empty response is accepted exactly when the password is empty. Without
// a SHA256 hash (MySQL "*" form) it returns false for every non-empty
// response: the caller should then request full authentication, which
// MatchesPlain can still verify.
func (s Stored) VerifySHA2Fast(nonce, resp []byte) bool {
	if len(resp) == 0 {
		return s.emptyPassword()
	}
	h, ok := s.sha2Hash()
	return ok && SHA2VerifyFast(h, nonce, resp)
}

// MatchesPlain checks a cleartext password (full authentication: cleartext
// over TLS, or decrypted from RSA). Every hash present must match, so an
// inconsistent Stored fails closed; all comparisons run regardless of the
// outcome of the others, in constant time.
func (s Stored) MatchesPlain(password []byte) bool {
	if !s.HasNative && !s.HasSHA2 {
		return s.Empty && len(password) == 0
	}
	ok := 1
	if s.HasNative {
		h := nativeStage2(password)
		ok &= subtle.ConstantTimeCompare(h[:], s.Native[:])
	}
	if s.HasSHA2 {
		h := sha2Stage2(password)
		ok &= subtle.ConstantTimeCompare(h[:], s.SHA2[:])
	}
	return ok == 1
}

// Supports reports whether a client can authenticate against s with
// plugin. mysql_native_password needs the SHA1 hash. caching_sha2_password
// is supported with either hash: its fast path needs the SHA256 hash, but
// its full authentication (which the server can always request) yields
// the cleartext, which MatchesPlain checks against the SHA1 hash too. An
// empty password supports both. Unknown plugins are not supported.
func (s Stored) Supports(plugin string) bool {
	switch plugin {
	case PluginNative:
		_, ok := s.nativeHash()
		return ok
	case PluginCachingSHA2:
		return s.HasSHA2 || s.HasNative || s.emptyPassword()
	}
	return false
}

// String redacts the hashes, which are password equivalents, so a Stored
// that ends up in a log line or error message leaks nothing.
func (s Stored) String() string {
	return fmt.Sprintf("auth.Stored{HasNative:%t HasSHA2:%t Empty:%t}", s.HasNative, s.HasSHA2, s.Empty)
}

// GoString redacts %#v as String does %v.
func (s Stored) GoString() string { return s.String() }

// DummyStored is the stored form of a made-up password for an account that
// does not exist, derived from key (a secret of the process) and the user
// name: the same name gets the same form every time, and nobody can log in
// with it without key. A server checks a login for an unknown user against
// it, so the exchange and the work done are those of a real account with a
// wrong password and the replies do not tell which accounts exist. The
// caller must refuse the login even if the check passes.
func DummyStored(key []byte, user string) Stored {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(user))
	var password [sha256.Size]byte
	mac.Sum(password[:0])
	return StoredFromPlain(hex.EncodeToString(password[:]))
}
