package engine

import "testing"

func TestWithAutoIncrement(t *testing.T) {
	const head = "CREATE TABLE `t` (\n  `id` int(11) NOT NULL AUTO_INCREMENT COMMENT ' AUTO_INCREMENT=7',\n  PRIMARY KEY (`id`)\n)"
	for _, c := range []struct{ opts, counter, want string }{
		{" ENGINE=InnoDB AUTO_INCREMENT=3 DEFAULT CHARSET=latin1", "25", " ENGINE=InnoDB AUTO_INCREMENT=25 DEFAULT CHARSET=latin1"},
		{" ENGINE=InnoDB DEFAULT CHARSET=latin1", "25", " ENGINE=InnoDB AUTO_INCREMENT=25 DEFAULT CHARSET=latin1"},
		{" ENGINE=InnoDB DEFAULT CHARSET=latin1", "1", " ENGINE=InnoDB DEFAULT CHARSET=latin1"},
		{" ENGINE=InnoDB AUTO_INCREMENT=3", "", " ENGINE=InnoDB AUTO_INCREMENT=3"},
	} {
		var counter []byte
		if c.counter != "" {
			counter = []byte(c.counter)
		}
		if got := string(withAutoIncrement([]byte(head+c.opts), counter)); got != head+c.want {
			t.Errorf("counter %q on %q:\n got %q\nwant %q", c.counter, c.opts, got, head+c.want)
		}
	}
}

func TestRenameCreate(t *testing.T) {
	for ddl, want := range map[string]string{
		"CREATE TABLE `t_0000` (\n  `x` int\n)": "CREATE TABLE `t` (\n  `x` int\n)",
		"CREATE TABLE t_0000 (\n  `x` int\n)":   "CREATE TABLE t (\n  `x` int\n)",
	} {
		got, err := renameCreate([]byte(ddl), "t_0000", "t")
		if err != nil || string(got) != want {
			t.Errorf("renameCreate(%q) = %q, %v; want %q", ddl, got, err, want)
		}
	}
	if _, err := renameCreate([]byte("CREATE TABLE `other` (x int)"), "t_0000", "t"); err == nil {
		t.Error("a text naming another table was accepted")
	}
}
