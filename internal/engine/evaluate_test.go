package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/backend"
)

// TestTemporaryDDL: a sub-table's SHOW CREATE TABLE becomes the creation
// of a temporary table of the logical name with the same columns and
// keys; foreign keys and partitioning, which a temporary table cannot
// have, are left out, and so are the commas they leave.
func TestTemporaryDDL(t *testing.T) {
	create := "CREATE TABLE `orders_0003` (\n" +
		"  `id` int(11) NOT NULL,\n" +
		"  `customer_id` int(11) NOT NULL,\n" +
		"  `note` varchar(20) COLLATE utf8mb4_bin DEFAULT NULL,\n" +
		"  PRIMARY KEY (`id`),\n" +
		"  KEY `c` (`customer_id`),\n" +
		"  CONSTRAINT `fk_c` FOREIGN KEY (`customer_id`) REFERENCES `customers_0003` (`id`)\n" +
		") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci\n" +
		" PARTITION BY HASH (`id`)\nPARTITIONS 2"
	got, err := TemporaryDDL(create, "`shop`.`orders`")
	if err != nil {
		t.Fatal(err)
	}
	want := "CREATE TEMPORARY TABLE `shop`.`orders` (\n" +
		"  `id` int(11) NOT NULL,\n" +
		"  `customer_id` int(11) NOT NULL,\n" +
		"  `note` varchar(20) COLLATE utf8mb4_bin DEFAULT NULL,\n" +
		"  PRIMARY KEY (`id`),\n" +
		"  KEY `c` (`customer_id`)\n" +
		") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"
	if got != want {
		t.Errorf("TemporaryDDL:\n%s\nwant\n%s", got, want)
	}
	for _, bad := range []string{"", "CREATE VIEW `v` AS SELECT 1", "CREATE TABLE `t` ("} {
		if _, err := TemporaryDDL(bad, "`shop`.`t`"); err == nil || !strings.Contains(err.Error(), "SHOW CREATE TABLE") {
			t.Errorf("TemporaryDDL(%q): %v, want an error naming SHOW CREATE TABLE", bad, err)
		}
	}
}

// TestAcquireOrder: a merge takes its parts' connections in the order of
// their clusters' names, whatever the parts' order, so that merges never
// wait for each other's pools in a cycle.
func TestAcquireOrder(t *testing.T) {
	cl := func(name string) *backend.Cluster { return &backend.Cluster{Name: name} }
	parts := []Part{{Cluster: cl("s1")}, {Cluster: cl("s0")}, {Cluster: cl("s2")}, {Cluster: cl("s0")}}
	got := acquireOrder(nil, parts)
	if want := []int{1, 3, 0, 2}; !slices.Equal(got, want) {
		t.Errorf("acquireOrder = %v, want %v", got, want)
	}
}

// acquireRecorder is a cursor that records the clusters whose
// connections a primitive asks for, and gives none.
type acquireRecorder struct {
	fakeCursor
	asked []string
}

// AcquireToSend implements engine.Cursor.
func (a *acquireRecorder) AcquireToSend(cl *backend.Cluster, replicaOK bool) (*backend.Conn, bool) {
	return a.Acquire(cl, replicaOK)
}

func (a *acquireRecorder) Acquire(cl *backend.Cluster, _ bool) (*backend.Conn, bool) {
	a.asked = append(a.asked, cl.Name)
	return nil, true
}

// TestEvaluateFetchOrder: an evaluation takes its fetches' connections
// in the order of their clusters' names too, whatever the fetches'
// order, so that it never waits in a cycle with a merge or another
// evaluation.
func TestEvaluateFetchOrder(t *testing.T) {
	var e Evaluate
	parts := []Part{{Cluster: &backend.Cluster{Name: "s1"}}, {Cluster: &backend.Cluster{Name: "s0"}}}
	c := &acquireRecorder{}
	var a *answered
	if err := e.copyParts(c, nil, &EvalCopy{Temp: "`db`.`t`"}, parts, false); !errors.As(err, &a) {
		t.Fatalf("copyParts without connections: %v, want the cursor's answer", err)
	}
	if !slices.Equal(c.asked, []string{"s0"}) {
		t.Errorf("copyParts asked first for %v, want s0's connection", c.asked)
	}
}
