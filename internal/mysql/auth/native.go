package auth

import (
	"crypto/sha1"
	"crypto/subtle"
)

// mysql_native_password
//
// The server stores stage2 = SHA1(SHA1(password)). The client proves it
// knows stage1 = SHA1(password) by sending
//
//	stage1 XOR SHA1(salt || stage2)
//
// and the server, which can compute the mask from what it stores, recovers
// stage1 and checks SHA1(stage1) == stage2.

// NativeScramble computes the client's mysql_native_password auth response.
// An empty password yields an empty response, as MySQL clients send.
func NativeScramble(password, salt []byte) []byte {
	if len(password) == 0 {
		return []byte{}
	}
	stage1 := sha1.Sum(password)
	stage2 := sha1.Sum(stage1[:])
	mask := nativeMask(salt, stage2)
	subtle.XORBytes(mask[:], mask[:], stage1[:])
	return mask[:]
}

// NativeVerify checks a client's mysql_native_password response against
// stored = SHA1(SHA1(password)) and the salt the server sent.
//
// An empty response is what clients send for an empty password, so it is
// accepted only when stored is the hash of "". Any other response must be
// exactly 20 bytes, and salt must be exactly ScrambleLen bytes: the server
// always issues that many, so any other length is a caller bug (typically
// the handshake field's trailing NUL left on) and failing closed is the only
// safe answer.
func NativeVerify(stored [sha1.Size]byte, salt, response []byte) bool {
	if len(response) == 0 {
		return subtle.ConstantTimeCompare(stored[:], emptyNative[:]) == 1
	}
	if len(response) != sha1.Size || len(salt) != ScrambleLen {
		return false
	}
	mask := nativeMask(salt, stored)
	var stage1 [sha1.Size]byte
	subtle.XORBytes(stage1[:], response, mask[:])
	candidate := sha1.Sum(stage1[:])
	return subtle.ConstantTimeCompare(candidate[:], stored[:]) == 1
}

// nativeMask is SHA1(salt || stage2); salt comes first, as in MySQL's
// scramble() and check_scramble().
func nativeMask(salt []byte, stage2 [sha1.Size]byte) [sha1.Size]byte {
	h := sha1.New()
	h.Write(salt)
	h.Write(stage2[:])
	var out [sha1.Size]byte
	h.Sum(out[:0])
	return out
}

// nativeStage2 is SHA1(SHA1(password)), the form MySQL stores.
func nativeStage2(password []byte) [sha1.Size]byte {
	stage1 := sha1.Sum(password)
	return sha1.Sum(stage1[:])
}
