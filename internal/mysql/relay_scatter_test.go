package mysql

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// capsWith are relay-side capabilities with or without DEPRECATE_EOF.
func capsWith(deprecateEOF bool) uint32 {
	caps := ClientProtocol41 | ClientSecureConnection | ClientMultiResults | ClientSessionTrack
	if deprecateEOF {
		caps |= ClientDeprecateEOF
	}
	return caps
}

// scatterDefs are the column definitions of the fixtures' result sets.
func scatterDefs() [][]byte {
	return [][]byte{columnDef("c", TypeVarString), columnDef("n", TypeLongLong)}
}

// scatterRow is the i-th row of a fixture.
func scatterRow(i int) []byte {
	return AppendLenEncStr(AppendLenEncStr(nil, fmt.Sprintf("row %d", i)), fmt.Sprint(i))
}

// resultStream is a server's result set as sent to a client with or without
// DEPRECATE_EOF, from sequence id 1; packets are split into frames as a
// server does. end, when not nil, replaces the terminator (an ERR).
func resultStream(t *testing.T, defs, rows [][]byte, deprecateEOF bool, warnings, status uint16, end []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewConn(&memConn{w: &buf})
	w.SetSeq(1)
	write := func(p []byte) {
		if err := w.WritePacket(p); err != nil {
			t.Fatal(err)
		}
	}
	write(AppendLenEncInt(nil, uint64(len(defs))))
	for _, d := range defs {
		write(d)
	}
	if !deprecateEOF {
		write(AppendEOF(nil, 0, status))
	}
	for _, r := range rows {
		write(r)
	}
	switch {
	case end != nil:
		write(end)
	case deprecateEOF:
		write(AppendOK(nil, HeaderEOF, &OKPacket{Status: status, Warnings: warnings}, 0))
	default:
		write(AppendEOF(nil, warnings, status))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// concat relays parts (backend streams from sequence id 1) through a Concat
// with a fresh Relay per part, as each backend connection has its own, and
// returns the client's output. It stops after a part's ERR or error.
func concat(t *testing.T, parts [][]byte, clientCaps, backendCaps uint32, chunk int, status uint16) ([]byte, *Concat, error) {
	t.Helper()
	var out bytes.Buffer
	client := NewConn(&memConn{w: &out})
	client.SetSeq(1)
	var c Concat
	c.Reset()
	for _, p := range parts {
		r := &Relay{Client: client, Backend: NewConn(&memConn{r: bytes.NewReader(p), chunk: chunk}),
			ClientCaps: clientCaps, BackendCaps: backendCaps}
		r.Backend.SetSeq(1)
		if err := c.Part(r); err != nil {
			return out.Bytes(), &c, err
		}
		if c.Info.Err != nil {
			break
		}
	}
	if err := c.Finish(status); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	return out.Bytes(), &c, nil
}

// queryRelay relays one backend stream with Query and returns the client's
// output: what the client gets from one server holding every row.
func queryRelay(t *testing.T, in []byte, clientCaps, backendCaps uint32) []byte {
	t.Helper()
	var out bytes.Buffer
	r := &Relay{Client: NewConn(&memConn{w: &out}), Backend: NewConn(&memConn{r: bytes.NewReader(in)}),
		ClientCaps: clientCaps, BackendCaps: backendCaps}
	r.Client.SetSeq(1)
	r.Backend.SetSeq(1)
	if err := r.Query(); err != nil {
		t.Fatalf("Query: %v", err)
	}
	return out.Bytes()
}

// TestConcatIsOneResultSet: the parts of a result set relayed with Concat
// give the client, byte for byte, what one server holding all their rows
// sends (relayed by Query), for every combination of client and backend
// DEPRECATE_EOF, parts with no rows, sequence ids wrapping, short reads, and
// rows of more than 16 MB.
func TestConcatIsOneResultSet(t *testing.T) {
	const status = StatusAutocommit | StatusInTrans
	huge := [][]byte{AppendLenEncString(nil, patterned(1<<24+5)), AppendLenEncString(nil, patterned(MaxPayload-4))}
	for _, tc := range []struct {
		name  string
		parts []int // rows per part
		huge  int   // part that also carries the huge rows, or -1
	}{
		{name: "rows in every part", parts: []int{3, 2, 4}, huge: -1},
		{name: "empty first part", parts: []int{0, 3}, huge: -1},
		{name: "empty last part", parts: []int{2, 0}, huge: -1},
		{name: "no rows at all", parts: []int{0, 0, 0}, huge: -1},
		{name: "one part", parts: []int{5}, huge: -1},
		{name: "sequence ids wrap", parts: []int{200, 150}, huge: -1},
		{name: "rows over 16 MB", parts: []int{1, 1}, huge: 1},
	} {
		for _, sel := range []struct{ client, backend bool }{{false, false}, {true, true}, {false, true}, {true, false}} {
			chunks := []int{0, 7}
			if tc.huge >= 0 {
				chunks = chunks[:1]
			}
			for _, chunk := range chunks {
				name := fmt.Sprintf("%s/clientDeprecateEOF=%v,backendDeprecateEOF=%v/chunk=%d", tc.name, sel.client, sel.backend, chunk)
				t.Run(name, func(t *testing.T) {
					var parts [][]byte
					var all [][]byte
					var warnings uint16
					n := 0
					for k, rows := range tc.parts {
						var prows [][]byte
						for i := 0; i < rows; i++ {
							prows = append(prows, scatterRow(n))
							n++
						}
						if k == tc.huge {
							prows = append(prows, huge...)
						}
						all = append(all, prows...)
						warnings += uint16(k + 1)
						parts = append(parts, resultStream(t, scatterDefs(), prows, sel.backend, uint16(k+1), status, nil))
					}
					want := queryRelay(t, resultStream(t, scatterDefs(), all, sel.backend, warnings, status, nil), capsWith(sel.client), capsWith(sel.backend))
					got, c, err := concat(t, parts, capsWith(sel.client), capsWith(sel.backend), chunk, status)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("client stream differs from one server's (first difference at byte %d of %d/%d)", firstDiff(got, want), len(got), len(want))
					}
					if c.Info.Rows != uint64(len(all)) || c.Info.Warnings != warnings || c.Info.Status != status ||
						!c.Info.ResultSet || c.Info.Err != nil || !c.Info.Sent {
						t.Fatalf("Info = %+v, want %d rows, %d warnings, status %#x", c.Info, len(all), warnings, status)
					}
				})
			}
		}
	}
}

// TestConcatPartErr: a part's ERR, as its answer or among its rows, reaches
// the client in place of the rest, exactly as one server's ERR mid-result
// would; Finish then adds nothing.
func TestConcatPartErr(t *testing.T) {
	errPacket := AppendErr(nil, NewError(1146, "42S02", "Table 'shop.sf_user_0005' doesn't exist"))
	rows := func(from, n int) [][]byte {
		var r [][]byte
		for i := from; i < from+n; i++ {
			r = append(r, scatterRow(i))
		}
		return r
	}
	for _, sel := range []struct{ client, backend bool }{{false, false}, {true, true}, {false, true}, {true, false}} {
		cc, bc := capsWith(sel.client), capsWith(sel.backend)
		for _, tc := range []struct {
			name  string
			parts [][]byte
			want  []byte // the one-server stream the client must see
			rows  int
		}{
			{
				name:  "first part answers ERR",
				parts: [][]byte{stream(1, errPacket), resultStream(t, scatterDefs(), rows(0, 2), sel.backend, 0, StatusAutocommit, nil)},
				want:  stream(1, errPacket),
			},
			{
				name:  "later part answers ERR",
				parts: [][]byte{resultStream(t, scatterDefs(), rows(0, 3), sel.backend, 0, StatusAutocommit, nil), stream(1, errPacket)},
				want:  resultStream(t, scatterDefs(), rows(0, 3), sel.backend, 0, StatusAutocommit, errPacket),
				rows:  3,
			},
			{
				name:  "ERR among a later part's rows",
				parts: [][]byte{resultStream(t, scatterDefs(), rows(0, 2), sel.backend, 0, StatusAutocommit, nil), resultStream(t, scatterDefs(), rows(2, 2), sel.backend, 0, 0, errPacket), stream(1, errPacket)},
				want:  resultStream(t, scatterDefs(), rows(0, 4), sel.backend, 0, StatusAutocommit, errPacket),
				rows:  4,
			},
			{
				name:  "later part answers ERR after empty parts",
				parts: [][]byte{resultStream(t, scatterDefs(), nil, sel.backend, 0, StatusAutocommit, nil), stream(1, errPacket)},
				want:  resultStream(t, scatterDefs(), nil, sel.backend, 0, StatusAutocommit, errPacket),
			},
		} {
			t.Run(fmt.Sprintf("%s/clientDeprecateEOF=%v,backendDeprecateEOF=%v", tc.name, sel.client, sel.backend), func(t *testing.T) {
				got, c, err := concat(t, tc.parts, cc, bc, 0, StatusAutocommit)
				if err != nil {
					t.Fatal(err)
				}
				if want := queryRelay(t, tc.want, cc, bc); !bytes.Equal(got, want) {
					t.Fatalf("client stream differs from one server's (first difference at byte %d of %d/%d)", firstDiff(got, want), len(got), len(want))
				}
				if c.Info.Err == nil || c.Info.Err.Code != 1146 || c.Info.ResultSet || c.Info.Rows != uint64(tc.rows) {
					t.Fatalf("Info = %+v, want the ERR and %d rows", c.Info, tc.rows)
				}
			})
		}
	}
}

// TestConcatRefusesMismatchedParts: a part that is not a result set, has
// another number of columns or columns of another type, or leaves more
// results behind, is a backend error saying why, never mixed into the rows.
func TestConcatRefusesMismatchedParts(t *testing.T) {
	first := resultStream(t, scatterDefs(), [][]byte{scatterRow(0)}, true, 0, StatusAutocommit, nil)
	wrongType := [][]byte{columnDef("c", TypeVarString), columnDef("n", TypeDouble)}
	unsigned := [][]byte{columnDef("c", TypeVarString), columnDef("n", TypeLongLong)}
	unsigned[1][len(unsigned[1])-5] |= byte(FlagUnsigned)
	for _, tc := range []struct {
		name string
		part []byte
		code uint16 // the SQL error carried, 0 for a protocol error
	}{
		{name: "OK instead of a result set", part: stream(1, AppendOK(nil, HeaderOK, &OKPacket{AffectedRows: 1}, 0)), code: ERUnknownError},
		{name: "fewer columns", part: resultStream(t, scatterDefs()[:1], nil, true, 0, StatusAutocommit, nil), code: ERWrongColumnCount},
		{name: "column of another type", part: resultStream(t, wrongType, nil, true, 0, StatusAutocommit, nil), code: ERUnknownError},
		{name: "column of other signedness", part: resultStream(t, unsigned, nil, true, 0, StatusAutocommit, nil), code: ERUnknownError},
		{name: "more results announced", part: resultStream(t, scatterDefs(), nil, true, 0, StatusMoreResultsExists, nil)},
		{name: "cursor opened", part: resultStream(t, scatterDefs(), nil, true, 0, StatusCursorExists, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c, err := concat(t, [][]byte{first, tc.part}, capsWith(true), capsWith(true), 0, StatusAutocommit)
			if !IsBackendError(err) {
				t.Fatalf("Part: %v, want a backend error", err)
			}
			var se *SQLError
			if got := errors.As(err, &se); got != (tc.code != 0) || (got && se.Code != tc.code) {
				t.Fatalf("Part: %v, want SQL error %d", err, tc.code)
			}
			if c.Info.Rows != 1 || !c.Info.Sent {
				t.Fatalf("Info = %+v, want the first part's row sent", c.Info)
			}
		})
	}
}

// TestConcatReusesBuffers: a Concat and relays that are reused allocate
// nothing per result, renaming or not.
func TestConcatReusesBuffers(t *testing.T) {
	var parts [][]byte
	for k := 0; k < 3; k++ {
		parts = append(parts, resultStream(t, scatterDefs(), [][]byte{scatterRow(2 * k), scatterRow(2*k + 1)}, true, 0, StatusAutocommit, nil))
	}
	client := NewConn(&memConn{})
	var srcs []*bytes.Reader
	var relays []*Relay
	for range parts {
		src := bytes.NewReader(nil)
		srcs = append(srcs, src)
		relays = append(relays, &Relay{Client: client, Backend: NewConn(&memConn{r: src}),
			ClientCaps: capsWith(false), BackendCaps: capsWith(true), RenameTable: renameShop})
	}
	var c Concat
	allocs := testing.AllocsPerRun(100, func() {
		c.Reset()
		client.SetSeq(1)
		for k, r := range relays {
			srcs[k].Reset(parts[k])
			r.Backend.SetSeq(1)
			if err := c.Part(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Finish(StatusAutocommit); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per result, want 0", allocs)
	}
}
