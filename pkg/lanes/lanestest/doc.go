// Package lanestest holds the test helpers of the processors built on
// pkg/lanes (pkg/fifo, pkg/kafka): a log buffer and slog handlers that
// panic or act when something is logged, a recorder of handler starts, the
// recording core of their fake quarantines and the faults those inject. It
// imports only the standard library, as pkg/lanes does, and nothing in it
// knows a transport.
package lanestest
