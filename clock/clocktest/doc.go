// Package clocktest holds Fake, the in-memory twin of package clock's System (as
// vfs/errorfs holds the error-injecting file system): a Clock that moves only when a test moves
// it, whose timers fire in order of their due time. It lives apart so that the server binary
// links none of it.
package clocktest
