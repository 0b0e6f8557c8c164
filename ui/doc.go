// Package ui serves comb's dashboard: the page at `/` and its files, embedded in the binary
// (static/, plain HTML, CSS and JavaScript modules with no build step, and uPlot vendored under
// static/assets/vendor with its licence), or a user-supplied directory instead (`comb serve
// --ui-dir`, for example a Queen dashboard build).
//
// It owns which GET paths are the dashboard's (spec 8.10): `/` and `/index.html` are the page,
// `/assets/*` are files (404 when missing), and any other GET path is a file of the tree when one
// exists and otherwise the page (the single-page fallback), except `/api*`, `/health*`,
// `/metrics*` and `/streams/v1*`, which are never claimed so that the API's 404 stays a 404. It also owns keeping a
// request inside the tree: every path segment is percent-decoded on its own, and a segment that
// decodes to "..", ".", or holds a '/', '\' or NUL is refused, so neither `..` nor an encoded
// slash can climb out; a directory is opened through os.Root, which also refuses a symbolic link
// that points outside it.
//
// It must not know about the broker, the routes of the API or authentication: httpapi routes a
// GET that no API route matched here (httpapi.Static), and serves it without a token, since the
// files hold no data (spec 9.1: the dashboard's static files are public). The page itself calls
// the API with the token the user entered, kept in the browser's localStorage; its actions (DLQ
// requeue and delete, consumer group seek and delete, the maintenance switches) ask for a
// confirmation and call the API's own routes, so the token needs each route's role.
package ui
