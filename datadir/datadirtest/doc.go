// Package datadirtest makes data directories for the tests of the offline
// tools (fsck, dump, replay): written by the real broker (broker.Open), on
// disk (NewBrokerDir) or on the crash-simulating vfs.Mem and copied to disk
// as kill -9 or a power loss leaves it (NewMemBroker, Killed, PowerLost), so
// each tool's tests read exactly what a server writes. Tests only: no
// production package imports it.
package datadirtest
