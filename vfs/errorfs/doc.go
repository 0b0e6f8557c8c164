// Package errorfs is the error-injecting twin of the vfs seam, for tests: FS
// wraps another vfs.FS (usually vfs.Mem) and fails chosen calls with chosen
// errors (ENOSPC, EIO, a short write that lands half its bytes): named
// failpoints (Op) at every write and sync boundary. Record and Trace list the
// calls of a clean run, and FaultAt fails exactly one of them, so a test can
// walk every boundary of a scenario and fail each in turn.
//
// It lives apart from vfs so that production code, which only ever runs on
// vfs.OS, links none of it (issue 26). It must not know about any format.
package errorfs
