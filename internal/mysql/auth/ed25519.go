package auth

import (
	"crypto/sha512"
	"fmt"

	"filippo.io/edwards25519"
)

// PluginEd25519 is MariaDB's client_ed25519 (server side auth_ed25519).
const PluginEd25519 = "client_ed25519"

// Ed25519Sign computes a client_ed25519 auth response: the Ed25519
// signature of the server's challenge under the key MariaDB derives from
// the password. It is not RFC 8032's key derivation: MariaDB hashes the
// password itself with SHA-512 (its ref10 crypto_sign over the password),
// where Ed25519 proper hashes a 32-byte seed. The steps follow MariaDB's
// plugin/auth_ed25519/ref10/sign.c, as go-sql-driver/mysql's authEd25519
// does; the proxy signs with it when it logs in to a backend account that
// uses ed25519 (users: from_backend).
func Ed25519Sign(password, challenge []byte) ([]byte, error) {
	h := sha512.Sum512(password)
	a, err := edwards25519.NewScalar().SetBytesWithClamping(h[:32])
	if err != nil {
		return nil, fmt.Errorf("auth: ed25519 key: %w", err)
	}
	pub := new(edwards25519.Point).ScalarBaseMult(a)

	nonceHash := sha512.New()
	nonceHash.Write(h[32:])
	nonceHash.Write(challenge)
	r, err := edwards25519.NewScalar().SetUniformBytes(nonceHash.Sum(nil))
	if err != nil {
		return nil, fmt.Errorf("auth: ed25519 nonce: %w", err)
	}
	R := new(edwards25519.Point).ScalarBaseMult(r)

	hram := sha512.New()
	hram.Write(R.Bytes())
	hram.Write(pub.Bytes())
	hram.Write(challenge)
	k, err := edwards25519.NewScalar().SetUniformBytes(hram.Sum(nil))
	if err != nil {
		return nil, fmt.Errorf("auth: ed25519 challenge hash: %w", err)
	}
	S := edwards25519.NewScalar().MultiplyAdd(k, a, r)
	return append(R.Bytes(), S.Bytes()...), nil
}
