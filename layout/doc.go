// Package layout names the files and directories of a comb data directory, the one place the
// server (broker, cmd/comb), its metadata (meta) and the offline tools (fsck, dump, replay)
// take them from, so that a rename cannot leave one of them reading a directory the others no
// longer write. docs/format.md section 1 describes what each holds.
//
// It is a leaf: it imports only the standard library.
package layout
