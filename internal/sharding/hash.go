package sharding

import (
	"encoding/binary"
	"math"

	"github.com/cespare/xxhash/v2"
)

// hashValue is the documented placement hash: XXH64 (seed 0) of the
// canonical bytes of a non-NULL value.
func hashValue(v Value) uint64 {
	var buf [32]byte
	return xxhash.Sum64(appendCanonical(buf[:0], v))
}

// appendCanonical appends the bytes the hash rule hashes; they are part of
// the on-disk placement and must never change (see TestHashGolden).
func appendCanonical(dst []byte, v Value) []byte {
	switch v.kind {
	case KindInt, KindUint:
		return binary.BigEndian.AppendUint64(dst, uint64(v.i))
	case KindDouble:
		return binary.BigEndian.AppendUint64(dst, math.Float64bits(v.f))
	case KindDatetime:
		return append(dst, unpackDatetime(v.i).String()...)
	}
	return append(dst, v.s...) // decimal text, string weights
}
