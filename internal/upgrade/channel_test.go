package upgrade

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"testing"
)

// A message larger than a datagram arrives whole, with the files sent
// along, whose descriptors work in the receiver.
func TestChannelChunksAndFiles(t *testing.T) {
	parent, childFile, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	child, err := FromFile(childFile)
	childFile.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	big := bytes.Repeat([]byte("0123456789"), 3*chunk/10) // three datagrams' worth
	go func() {
		_ = parent.Send(KindSession, json.RawMessage(`{"data":"`+string(big)+`"}`), w)
		w.Close()
	}()
	kind, body, files, err := child.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Data string }
	if err := json.Unmarshal(body, &got); err != nil || kind != KindSession || got.Data != string(big) {
		t.Fatalf("kind %q, %d bytes, err %v", kind, len(got.Data), err)
	}
	if len(files) != 1 {
		t.Fatalf("%d files received, want 1", len(files))
	}
	// The pipe's write end, received, writes into the pipe.
	if _, err := files[0].Write([]byte("through")); err != nil {
		t.Fatal(err)
	}
	files[0].Close()
	out, _ := io.ReadAll(r)
	if string(out) != "through" {
		t.Fatalf("read %q through the passed descriptor", out)
	}
	parent.Close()
	if _, _, _, err := child.Recv(); err == nil {
		t.Fatal("Recv after the other end closed succeeded")
	}
}
