// Package smallfs is the file system seam (vfs.FS) that lets a partition's
// segment.Log run without a directory, a DESCRIPTOR or a segment file of its
// own (issue 23: on the project's VM those three inodes cost ~1.2 ms of CPU,
// more than a whole push request): a small partition's directory is
// virtual. Its segment file's bytes are the segments homed in the shared
// entry log (package entrylog), read back by extent, followed by an
// in-memory tail of what was appended since; its index and dedup files and
// its DESCRIPTOR live in memory (vfs.Mem: caches rebuilt from the segments,
// and a descriptor the registry can write again). Every other path is the
// real file system's. segment.Log does not know.
//
// Durability: Sync of a virtual file is a no-op. Its records are durable in
// the commit log until the flush pass homes them (Home, up to the offset the
// commit log made durable) and syncs the entry log once for every small
// partition; only then may the pass record them as synced and truncate the
// commit log. A virtual directory's existence is the registry's (its
// metadata entry); start-up attaches one for every registered partition
// without a real directory (Attach).
//
// Materialize gives a virtual directory its real files once it grows (the
// broker's threshold, broker/small.go); its open handles then forward to
// them.
package smallfs
