package mysql

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
)

// rangeResult is a backend's answer to a sysbench range select: one column
// and n rows of a 120-character string, starting at sequence id 1.
func rangeResult(n int, deprecateEOF bool, rowLen func(i int) int) []byte {
	ps := [][]byte{{1}, columnDef("c", TypeVarString)}
	if !deprecateEOF {
		ps = append(ps, seedEOF())
	}
	for i := 0; i < n; i++ {
		l := 120
		if rowLen != nil {
			l = rowLen(i)
		}
		ps = append(ps, AppendLenEncStr(nil, strings.Repeat(string(rune('a'+i%26)), l)))
	}
	if deprecateEOF {
		ps = append(ps, AppendOK(nil, HeaderEOF, &OKPacket{Status: StatusAutocommit}, 0))
	} else {
		ps = append(ps, AppendEOF(nil, 0, StatusAutocommit))
	}
	return stream(1, ps...)
}

// TestRelayRowRuns: rows forwarded in runs leave the stream exactly as
// frame-by-frame forwarding does, whatever the read sizes (runs cut at every
// possible place), with consecutive sequence ids wrapping past 255, the row
// count right, and an ERR or the owed EOF of an old client still handled.
func TestRelayRowRuns(t *testing.T) {
	caps := ClientProtocol41 | ClientSecureConnection | ClientMultiResults
	varied := func(i int) int { return []int{0, 1, 250, 251, 120, 3000}[i%6] }
	for _, tc := range []struct {
		name           string
		rows           int
		rowLen         func(int) int
		clientDep, dep bool
		errAfter       bool
	}{
		{name: "classic EOF", rows: 300},
		{name: "deprecate EOF", rows: 300, clientDep: true, dep: true},
		{name: "old client, deprecate-EOF backend", rows: 40, dep: true},
		{name: "varied row sizes", rows: 100, rowLen: varied, clientDep: true, dep: true},
		{name: "ERR mid-rows", rows: 20, errAfter: true},
	} {
		in := rangeResult(tc.rows, tc.dep, tc.rowLen)
		if tc.errAfter {
			in = in[:len(in)-len(frame(0, seedEOF()))]
			in = append(in, frame(byte(tc.rows+3), seedErrs()[0])...)
		}
		for _, chunk := range []int{0, 1, 5, 127, 1000, 4099} {
			t.Run(fmt.Sprintf("%s/chunk=%d", tc.name, chunk), func(t *testing.T) {
				var out bytes.Buffer
				r := &Relay{
					Client:      NewConn(&memConn{w: &out, r: bytes.NewReader(nil)}),
					Backend:     NewConn(&memConn{r: bytes.NewReader(in), chunk: chunk}),
					ClientCaps:  caps,
					BackendCaps: caps,
				}
				if tc.clientDep {
					r.ClientCaps |= ClientDeprecateEOF
				}
				if tc.dep {
					r.BackendCaps |= ClientDeprecateEOF
				}
				r.Client.SetSeq(1)
				r.Backend.SetSeq(1)
				if err := r.Query(); err != nil {
					t.Fatal(err)
				}
				if r.Info.Rows != uint64(tc.rows) {
					t.Errorf("Info.Rows = %d, want %d", r.Info.Rows, tc.rows)
				}
				if tc.errAfter != (r.Info.Err != nil) {
					t.Errorf("Info.Err = %v, want an error: %v", r.Info.Err, tc.errAfter)
				}
				frames := refFrames(t, out.Bytes())
				for i, fr := range frames {
					if fr.seq != byte(1+i) {
						t.Fatalf("client frame %d has sequence id %d, want %d", i, fr.seq, byte(1+i))
					}
				}
				if tc.clientDep == tc.dep && !equalIgnoringSeq(out.Bytes(), in) {
					t.Fatalf("relay changed the stream")
				}
				if tc.clientDep != tc.dep && len(frames) != tc.rows+4 {
					t.Fatalf("old client got %d frames, want count, column, EOF, %d rows, EOF", len(frames), tc.rows)
				}
			})
		}
	}
}

// BenchmarkRelayRangeResult relays a 100-row, 12.5 KB result set (sysbench's
// range selects) from an in-memory backend to an in-memory client: the
// proxy's own work per result, without the kernel.
func BenchmarkRelayRangeResult(b *testing.B) {
	in := rangeResult(100, true, nil)
	src := bytes.NewReader(in)
	caps := ClientProtocol41 | ClientSecureConnection | ClientMultiResults | ClientDeprecateEOF
	r := &Relay{
		Client:      NewConn(&memConn{w: io.Discard, r: bytes.NewReader(nil)}),
		Backend:     NewConn(&memConn{r: src}),
		ClientCaps:  caps,
		BackendCaps: caps,
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		src.Reset(in)
		r.Client.SetSeq(1)
		r.Backend.SetSeq(1)
		if err := r.Query(); err != nil {
			b.Fatal(err)
		}
	}
}
