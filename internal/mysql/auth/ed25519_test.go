package auth

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha512"
	"testing"

	"filippo.io/edwards25519"
)

// The vector of MariaDB's plugin/auth_ed25519/ed25519-t.c (password
// "foobar", challenge of 32 'A's), as go-sql-driver/mysql's TestEd25519Auth
// checks it.
func TestEd25519SignKnownAnswer(t *testing.T) {
	want := []byte{
		232, 61, 201, 63, 67, 63, 51, 53, 86, 73, 238, 35, 170, 117, 146,
		214, 26, 17, 35, 9, 8, 132, 245, 141, 48, 99, 66, 58, 36, 228, 48,
		84, 115, 254, 187, 168, 88, 162, 249, 57, 35, 85, 79, 238, 167, 106,
		68, 117, 56, 135, 171, 47, 20, 14, 133, 79, 15, 229, 124, 160, 176,
		100, 138, 14,
	}
	got, err := Ed25519Sign([]byte("foobar"), bytes.Repeat([]byte{'A'}, 32))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("signature %v, want %v", got, want)
	}
}

// The signature verifies as standard Ed25519 under the public key MariaDB
// stores (PASSWORD()'s base64 of it): only the key derivation differs.
func TestEd25519SignVerifies(t *testing.T) {
	pw, challenge := []byte("s3cret pässword"), []byte("0123456789abcdef0123456789abcdef")
	sig, err := Ed25519Sign(pw, challenge)
	if err != nil {
		t.Fatal(err)
	}
	h := sha512.Sum512(pw)
	a, err := edwards25519.NewScalar().SetBytesWithClamping(h[:32])
	if err != nil {
		t.Fatal(err)
	}
	pub := ed25519.PublicKey(new(edwards25519.Point).ScalarBaseMult(a).Bytes())
	if !ed25519.Verify(pub, challenge, sig) {
		t.Fatal("signature does not verify under the password's public key")
	}
	if ed25519.Verify(pub, []byte("another challenge, 32 bytes long"), sig) {
		t.Fatal("signature verifies for another challenge")
	}
}
