// Package names holds the one rule for the names a client gives comb: queue, partition and
// consumer-group names, a queue's namespace and task labels, and transactionIds (spec 0.4:
// 1..255 characters; spec 11 #27: anything else is a 400). httpapi asks it before a request
// reaches the broker, and the broker asks it again for the paths that do not pass through
// httpapi (comb import, streams, replay), so both refuse the same names with the same words.
//
// Names never become file paths (partition directories are named by UUID), so the rule is about
// refusing nonsense early and keeping distinct byte strings distinct names, not about the file
// system's safety.
//
// It is a leaf: it imports only the standard library.
package names
