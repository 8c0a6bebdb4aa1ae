package mysql

import (
	"bytes"
	"testing"
)

// part is one backend's OK for its part of a statement; rows > 0 feeds it
// with AddInsert.
type part struct {
	ok   OKPacket
	rows int
}

func okInfo(affected, id uint64, warnings uint16, info string) OKPacket {
	return OKPacket{AffectedRows: affected, LastInsertID: id, Status: StatusAutocommit, Warnings: warnings, Info: []byte(info)}
}

// TestOKMerge: the combined OK of a statement's parts is the one server's
// for the whole statement (the real-server test checks the same against
// MariaDB; this covers what one server cannot show: translated messages,
// saturation, session state).
func TestOKMerge(t *testing.T) {
	state := []byte{TrackSchema, 5, 4, 's', 'h', 'o', 'p'}
	for _, tc := range []struct {
		name  string
		kind  InsertKind
		parts []part
		want  OKPacket
	}{
		{name: "UPDATE", parts: []part{
			{ok: okInfo(2, 0, 0, "Rows matched: 3  Changed: 2  Warnings: 0")},
			{ok: okInfo(0, 0, 1, "Rows matched: 10  Changed: 0  Warnings: 1")},
		}, want: okInfo(2, 0, 1, "Rows matched: 13  Changed: 2  Warnings: 1")},
		{name: "DELETE", parts: []part{{ok: okInfo(2, 0, 0, "")}, {ok: okInfo(5, 0, 0, "")}}, want: okInfo(7, 0, 0, "")},
		{name: "translated info", parts: []part{
			{ok: okInfo(3, 0, 0, "Datensätze: 3  Duplikate: 0  Warnungen: 0"), rows: 3},
			{ok: okInfo(1, 0, 0, ""), rows: 1}, // a single row: no info
		}, kind: InsertPlain, want: okInfo(4, 0, 0, "Datensätze: 4  Duplikate: 0  Warnungen: 0")},
		{name: "single-row parts of a multi-row INSERT", kind: InsertPlain, parts: []part{
			{ok: okInfo(1, 41, 0, ""), rows: 1}, {ok: okInfo(1, 42, 0, ""), rows: 1},
		}, want: okInfo(2, 41, 0, "Records: 2  Duplicates: 0  Warnings: 0")},
		{name: "single-row INSERT", kind: InsertPlain, parts: []part{{ok: okInfo(1, 9, 0, ""), rows: 1}}, want: okInfo(1, 9, 0, "")},
		{name: "first generated id", kind: InsertPlain, parts: []part{
			{ok: okInfo(2, 0, 0, "Records: 2  Duplicates: 0  Warnings: 0"), rows: 2},
			{ok: okInfo(2, 77, 0, "Records: 2  Duplicates: 0  Warnings: 0"), rows: 2},
			{ok: okInfo(1, 90, 0, ""), rows: 1},
		}, want: okInfo(5, 77, 0, "Records: 5  Duplicates: 0  Warnings: 0")},
		{name: "INSERT IGNORE", kind: InsertIgnore, parts: []part{
			{ok: okInfo(0, 0, 1, ""), rows: 1},
			{ok: okInfo(1, 0, 1, "Records: 2  Duplicates: 1  Warnings: 1"), rows: 2},
		}, want: okInfo(1, 0, 2, "Records: 3  Duplicates: 2  Warnings: 2")},
		{name: "REPLACE", kind: InsertReplace, parts: []part{
			{ok: okInfo(2, 0, 0, ""), rows: 1}, {ok: okInfo(3, 0, 0, ""), rows: 1}, {ok: okInfo(1, 0, 0, ""), rows: 1},
		}, want: okInfo(6, 0, 0, "Records: 3  Duplicates: 3  Warnings: 0")},
		{name: "ON DUPLICATE KEY UPDATE", kind: InsertUpdate, parts: []part{
			{ok: okInfo(2, 0, 0, ""), rows: 1}, {ok: okInfo(0, 0, 0, ""), rows: 1}, {ok: okInfo(1, 0, 0, ""), rows: 1},
		}, want: okInfo(3, 0, 0, "Records: 3  Duplicates: 1  Warnings: 0")},
		{name: "warnings saturate", parts: []part{{ok: okInfo(0, 0, 65535, "")}, {ok: okInfo(0, 0, 2, "")}}, want: okInfo(0, 0, 65535, "")},
		{name: "session state of the last part that had one", parts: []part{
			{ok: OKPacket{Status: StatusAutocommit | StatusSessionStateChange, SessionState: state}},
			{ok: OKPacket{Status: StatusInTrans}},
		}, want: OKPacket{Status: StatusInTrans | StatusSessionStateChange, SessionState: state}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m OKMerge
			m.Reset()
			for i := range tc.parts {
				if tc.parts[i].rows > 0 {
					m.AddInsert(&tc.parts[i].ok, tc.parts[i].rows, tc.kind)
				} else {
					m.Add(&tc.parts[i].ok)
				}
			}
			got := m.OK()
			// Compare the packets a SESSION_TRACK client gets.
			if g, w := AppendOK(nil, HeaderOK, &got, ClientSessionTrack), AppendOK(nil, HeaderOK, &tc.want, ClientSessionTrack); !bytes.Equal(g, w) {
				t.Fatalf("got %+v (info %q), want %+v (info %q)", got, got.Info, tc.want, tc.want.Info)
			}
			if m.Parts != len(tc.parts) {
				t.Fatalf("Parts = %d, want %d", m.Parts, len(tc.parts))
			}
		})
	}
}

// TestOKMergeReuse: a reset merge forgets the last statement and allocates
// nothing once its buffers have grown.
func TestOKMergeReuse(t *testing.T) {
	var m OKMerge
	a := okInfo(1, 5, 0, "Rows matched: 1  Changed: 1  Warnings: 0")
	b := OKPacket{Status: StatusSessionStateChange, SessionState: []byte{TrackSchema, 2, 1, 'x'}}
	allocs := testing.AllocsPerRun(50, func() {
		m.Reset()
		m.Add(&a)
		m.Add(&b)
		_ = m.OK()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per statement, want 0", allocs)
	}
	m.Reset()
	m.Add(&OKPacket{AffectedRows: 1})
	if ok := m.OK(); ok.AffectedRows != 1 || ok.LastInsertID != 0 || len(ok.Info) != 0 || len(ok.SessionState) != 0 || m.Parts != 1 {
		t.Fatalf("after Reset: %+v", ok)
	}
}
