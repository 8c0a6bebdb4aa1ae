package difftest_test

import (
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/testenv"
)

// A server standing in for shardgate refuses through triggers that SIGNAL
// 1235 with shardgate's message: UPDATEs changing sf_user's key
// (refusable: counted, not different; the reference does not run them,
// so the contents stay equal) and DELETEs on sf_tag (not refusable: a
// difference).
const (
	refuseKeyUpdate = `CREATE TRIGGER refuse_key BEFORE UPDATE ON sf_user FOR EACH ROW
  IF NEW.id <> OLD.id THEN
    SIGNAL SQLSTATE '42000' SET MYSQL_ERRNO = 1235,
      MESSAGE_TEXT = 'This version of shardgate doesn''t yet support ''UPDATE of the shard key id of sf_user''';
  END IF`
	refuseTagDelete = `CREATE TRIGGER refuse_delete BEFORE DELETE ON sf_tag FOR EACH ROW
  SIGNAL SQLSTATE '42000' SET MYSQL_ERRNO = 1235,
    MESSAGE_TEXT = 'This version of shardgate doesn''t yet support ''ORDER BY across shards'''`
)

// testRefusals runs on the servers of TestHarnessAgainstTwoServers, whose
// databases it reloads (dropping the tables drops the triggers).
func testRefusals(t *testing.T, srvs []*testenv.Server) {
	ref := difftest.ServerTarget("reference", srvs[0], db)
	got := difftest.ServerTarget("refusing", srvs[1], db)
	gen := difftest.NewGenerator(13)
	difftest.Load(t, ref, got, gen)
	srvs[1].Exec(t, "USE "+db, refuseKeyUpdate, refuseTagDelete)
	rep, err := difftest.Check(ref, got, gen, 1500, difftest.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep.Summary())
	if c := rep.Kinds["refused_write"]; c == nil || c.Refused == 0 || c.Different != 0 {
		t.Errorf("refused_write: %+v, want refusals and no differences", c)
	}
	unexpected := 0
	for _, d := range rep.Differences {
		switch {
		case d.Table == "" && strings.HasPrefix(d.SQL, "DELETE FROM sf_tag") &&
			strings.Contains(d.Detail, "error: reference succeeded, got ERROR 1235 (42000): This version of shardgate"):
			unexpected++
		case d.Table == "sf_tag" || strings.Contains(d.SQL, "sf_tag"):
			// the refused DELETEs ran on the reference: sf_tag differs
		default:
			t.Errorf("unexpected difference: %v", d)
		}
	}
	if unexpected == 0 {
		t.Errorf("no difference for a refusal of a statement that may not be refused")
	}
}
