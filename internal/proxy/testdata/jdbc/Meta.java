import java.sql.*;

// Meta prints what MySQL Connector/J's DatabaseMetaData reports about a
// database: getTables, getColumns, getPrimaryKeys and getIndexInfo of each
// table. Run by internal/proxy's TestConnectorJMetadata against a server
// and the proxy: the outputs must be equal. CARDINALITY is left out (an
// estimate that differs between any two servers).
public class Meta {
  static void dump(String title, ResultSet rs) throws SQLException {
    ResultSetMetaData md = rs.getMetaData();
    System.out.println("== " + title);
    StringBuilder h = new StringBuilder();
    for (int i = 1; i <= md.getColumnCount(); i++) {
      h.append(md.getColumnLabel(i)).append(':').append(md.getColumnTypeName(i)).append('|');
    }
    System.out.println(h);
    while (rs.next()) {
      StringBuilder b = new StringBuilder();
      for (int i = 1; i <= md.getColumnCount(); i++) {
        b.append("CARDINALITY".equals(md.getColumnLabel(i)) ? "-" : rs.getString(i)).append('|');
      }
      System.out.println(b);
    }
  }

  public static void main(String[] a) throws Exception {
    try (Connection c = DriverManager.getConnection(a[0], a[1], a[2])) {
      DatabaseMetaData m = c.getMetaData();
      String db = a[3];
      dump("getTables", m.getTables(db, null, "%", null));
      for (int i = 4; i < a.length; i++) {
        dump("getTables " + a[i], m.getTables(db, null, a[i], new String[] {"TABLE"}));
        dump("getColumns " + a[i], m.getColumns(db, null, a[i], "%"));
        dump("getPrimaryKeys " + a[i], m.getPrimaryKeys(db, null, a[i]));
        dump("getIndexInfo " + a[i], m.getIndexInfo(db, null, a[i], false, false));
      }
    }
  }
}
