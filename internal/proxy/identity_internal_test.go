package proxy

import "testing"

func TestAuthPluginOf(t *testing.T) {
	for version, want := range map[string]string{
		"10.11.19-MariaDB-0+deb12u1": "mysql_native_password",
		"5.5.5-10.6.12-MariaDB-log":  "mysql_native_password",
		"11.4.2-MariaDB":             "mysql_native_password",
		"8.0.36":                     "caching_sha2_password",
		"8.4.0-commercial":           "caching_sha2_password",
		"9.1.0":                      "caching_sha2_password",
		"5.7.44-log":                 "mysql_native_password",
		"":                           "mysql_native_password",
		"garbage":                    "mysql_native_password",
	} {
		if got := authPluginOf(version); got != want {
			t.Errorf("authPluginOf(%q) = %s, want %s", version, got, want)
		}
	}
}
