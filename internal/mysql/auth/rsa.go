package auth

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
)

// caching_sha2_password full authentication over an unencrypted connection.
//
// Without TLS the client may not send its password in clear, so it asks for
// (or is configured with) the server's RSA public key and sends
//
//	RSA-OAEP-SHA1((password || '\0') XOR nonce)
//
// with the nonce repeated to the length of the plaintext. XORing with the
// nonce binds the ciphertext to this handshake, so a captured ciphertext
// cannot be replayed on another connection.

// rsaKeyBits is the size MySQL uses for its auto-generated key pair.
const rsaKeyBits = 2048

// EncryptPassword produces the client's encrypted password for
// caching_sha2_password full authentication (and sha256_password).
func EncryptPassword(password, nonce []byte, pub *rsa.PublicKey) ([]byte, error) {
	if pub == nil {
		return nil, errors.New("auth: encrypting password: no RSA public key")
	}
	if len(nonce) == 0 {
		return nil, errors.New("auth: encrypting password: empty nonce")
	}
	plain := make([]byte, len(password)+1) // the trailing NUL is part of the protocol
	copy(plain, password)
	xorCyclic(plain, nonce)
	ciphertext, err := rsa.EncryptOAEP(sha1.New(), rand.Reader, pub, plain, nil)
	clear(plain)
	if err != nil {
		return nil, fmt.Errorf("auth: encrypting password: %w", err)
	}
	return ciphertext, nil
}

// DecryptPassword reverses EncryptPassword on the server and returns the
// password without its trailing NUL. A plaintext that does not end in NUL
// after unmasking means the client used another nonce (or is not speaking
// the protocol), and is rejected rather than returned as a wrong password.
func DecryptPassword(ciphertext, nonce []byte, priv *rsa.PrivateKey) ([]byte, error) {
	if priv == nil {
		return nil, errors.New("auth: decrypting password: no RSA private key")
	}
	if len(nonce) == 0 {
		return nil, errors.New("auth: decrypting password: empty nonce")
	}
	plain, err := rsa.DecryptOAEP(sha1.New(), nil, priv, ciphertext, nil)
	if err != nil {
		return nil, fmt.Errorf("auth: decrypting password: %w", err)
	}
	xorCyclic(plain, nonce)
	if len(plain) == 0 || plain[len(plain)-1] != 0 {
		clear(plain)
		return nil, errors.New("auth: decrypting password: plaintext is not NUL-terminated (wrong nonce?)")
	}
	return plain[:len(plain)-1], nil
}

// xorCyclic XORs buf in place with key repeated as often as needed.
// key must not be empty.
func xorCyclic(buf, key []byte) {
	for i := range buf {
		buf[i] ^= key[i%len(key)]
	}
}

// GenerateRSAKey creates a 2048-bit key pair, the size MySQL auto-generates.
func GenerateRSAKey() (*rsa.PrivateKey, error) {
	key, err := rsa.GenerateKey(rand.Reader, rsaKeyBits)
	if err != nil {
		return nil, fmt.Errorf("auth: generating RSA key: %w", err)
	}
	return key, nil
}

// PublicKeyPEM encodes pub as a PKIX "PUBLIC KEY" PEM block, the form MySQL
// sends when a client requests the server's public key.
func PublicKeyPEM(pub *rsa.PublicKey) ([]byte, error) {
	if pub == nil {
		return nil, errors.New("auth: encoding public key: nil key")
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("auth: encoding public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// ParsePublicKeyPEM decodes the first RSA public key in b. It accepts the
// PKIX "PUBLIC KEY" form MySQL sends and, because key files made with
// `openssl rsa -RSAPublicKey_out` are common, PKCS#1 "RSA PUBLIC KEY".
func ParsePublicKeyPEM(b []byte) (*rsa.PublicKey, error) {
	for rest := b; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("auth: parsing public key: no PEM public key found")
		}
		switch block.Type {
		case "PUBLIC KEY":
			key, err := x509.ParsePKIXPublicKey(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("auth: parsing public key: %w", err)
			}
			rsaKey, ok := key.(*rsa.PublicKey)
			if !ok {
				return nil, fmt.Errorf("auth: parsing public key: got %T, need an RSA key", key)
			}
			return rsaKey, nil
		case "RSA PUBLIC KEY":
			key, err := x509.ParsePKCS1PublicKey(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("auth: parsing public key: %w", err)
			}
			return key, nil
		}
	}
}

// LoadRSAKeyPair loads the RSA private key from privFile (PEM, PKCS#1
// "RSA PRIVATE KEY" or PKCS#8 "PRIVATE KEY"; unencrypted). If pubFile is not
// empty, the public key in it must belong to that private key: serving a
// public key clients cannot be decrypted with would make every full
// authentication fail with a confusing error, so it is caught at load time.
// With pubFile empty the public key is the private key's own.
func LoadRSAKeyPair(privFile, pubFile string) (*rsa.PrivateKey, error) {
	data, err := os.ReadFile(privFile)
	if err != nil {
		return nil, fmt.Errorf("auth: loading RSA private key: %w", err)
	}
	priv, err := parsePrivateKeyPEM(data)
	if err != nil {
		return nil, fmt.Errorf("auth: loading RSA private key %s: %w", privFile, err)
	}
	if pubFile == "" {
		return priv, nil
	}
	data, err = os.ReadFile(pubFile)
	if err != nil {
		return nil, fmt.Errorf("auth: loading RSA public key: %w", err)
	}
	pub, err := ParsePublicKeyPEM(data)
	if err != nil {
		return nil, fmt.Errorf("auth: loading RSA public key %s: %w", pubFile, err)
	}
	if !priv.PublicKey.Equal(pub) {
		return nil, fmt.Errorf("auth: RSA public key %s does not match private key %s", pubFile, privFile)
	}
	return priv, nil
}

// parsePrivateKeyPEM returns the first RSA private key in data, skipping
// other blocks (such as a certificate in the same file).
func parsePrivateKeyPEM(data []byte) (*rsa.PrivateKey, error) {
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("no PEM private key found")
		}
		if isEncryptedPEM(block) {
			return nil, errors.New("encrypted private keys are not supported")
		}
		switch block.Type {
		case "RSA PRIVATE KEY":
			key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("parsing PKCS#1 key: %w", err)
			}
			return key, nil
		case "PRIVATE KEY":
			key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("parsing PKCS#8 key: %w", err)
			}
			rsaKey, ok := key.(*rsa.PrivateKey)
			if !ok {
				return nil, fmt.Errorf("got a %T, need an RSA key", key)
			}
			return rsaKey, nil
		}
	}
}

// isEncryptedPEM recognises both PKCS#8 encrypted keys and legacy
// OpenSSL-encrypted PEM ("Proc-Type: 4,ENCRYPTED"), so the user gets a
// clear message instead of an ASN.1 parse error.
func isEncryptedPEM(block *pem.Block) bool {
	return block.Type == "ENCRYPTED PRIVATE KEY" ||
		strings.Contains(block.Headers["Proc-Type"], "ENCRYPTED")
}
