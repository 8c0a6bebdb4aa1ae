package testenv

import (
	"database/sql"
	"fmt"
)

// XAPrepared lists the prepared XA branches of the server d is connected
// to (the data column of XA RECOVER, gtrid and bqual together) whose
// formatID is formatID.
func XAPrepared(d *sql.DB, formatID int) ([]string, error) {
	rows, err := d.Query("XA RECOVER")
	if err != nil {
		return nil, fmt.Errorf("XA RECOVER: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var f, gl, bl int
		var data string
		if err := rows.Scan(&f, &gl, &bl, &data); err != nil {
			return nil, err
		}
		if f == formatID {
			out = append(out, data)
		}
	}
	return out, rows.Err()
}
