package auth

import (
	"crypto/sha256"
	"crypto/subtle"
)

// caching_sha2_password fast path
//
// The server's cache holds stage2 = SHA256(SHA256(password)). The client
// sends
//
//	SHA256(password) XOR SHA256(stage2 || nonce)
//
// (MySQL's documented XOR(SHA256(password), SHA256(SHA256(SHA256(password)),
// Nonce)): the digest comes first, then the nonce — the reverse of
// mysql_native_password's order). The server recovers stage1 =
// SHA256(password) with the mask and checks SHA256(stage1) == stage2.

// SHA2Scramble computes the client's caching_sha2_password fast-path auth
// response. An empty password yields an empty response, as MySQL clients
// send.
func SHA2Scramble(password, nonce []byte) []byte {
	if len(password) == 0 {
		return []byte{}
	}
	stage1 := sha256.Sum256(password)
	stage2 := sha256.Sum256(stage1[:])
	mask := sha2Mask(stage2, nonce)
	subtle.XORBytes(mask[:], mask[:], stage1[:])
	return mask[:]
}

// SHA2VerifyFast checks a client's caching_sha2_password fast-path response
// against stored = SHA256(SHA256(password)) and the nonce the server sent.
//
// An empty response (what clients send for an empty password) is accepted
// only when stored is the hash of "". Otherwise the response must be exactly
// 32 bytes and the nonce exactly ScrambleLen bytes; see NativeVerify for why
// other lengths fail. A false result is not necessarily a wrong password:
// the protocol then falls back to full authentication.
func SHA2VerifyFast(stored [sha256.Size]byte, nonce, response []byte) bool {
	if len(response) == 0 {
		return subtle.ConstantTimeCompare(stored[:], emptySHA2[:]) == 1
	}
	if len(response) != sha256.Size || len(nonce) != ScrambleLen {
		return false
	}
	mask := sha2Mask(stored, nonce)
	var stage1 [sha256.Size]byte
	subtle.XORBytes(stage1[:], response, mask[:])
	candidate := sha256.Sum256(stage1[:])
	return subtle.ConstantTimeCompare(candidate[:], stored[:]) == 1
}

// sha2Mask is SHA256(stage2 || nonce).
func sha2Mask(stage2 [sha256.Size]byte, nonce []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write(stage2[:])
	h.Write(nonce)
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// sha2Stage2 is SHA256(SHA256(password)), the form the fast path needs.
func sha2Stage2(password []byte) [sha256.Size]byte {
	stage1 := sha256.Sum256(password)
	return sha256.Sum256(stage1[:])
}
