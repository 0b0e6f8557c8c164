// Package doctest runs the shell blocks of a Markdown file (README.md) in order, in one bash
// session, the way a newcomer pastes them into a terminal, and says which block failed and why
// (issue 25: "every command block is tested by a script in the repository").
//
// It owns the file's conventions for runnable blocks, nothing about comb itself:
//
//   - A fenced block whose info string is `sh` or `bash` runs; every other fence (```text,
//     ```console, ```json, none) and every indented block is shown only.
//   - Blocks share one shell: a variable or function one block defines, the next one sees, and
//     the working directory carries over. The shell runs with `set -e -o pipefail`, so the first
//     command that fails ends the session with the README line it came from; `curl` is a
//     function adding `--fail-with-body`, so an HTTP error answer fails too (as it would catch
//     the eye of a reader).
//   - A comment line `# → TEXT` inside a block is what the commands above it print: after the
//     block ran, each such TEXT must appear in its output, in the block's order. In TEXT, `...`
//     stands for any text on the line and `<name>` for one value (an id, a number).
//   - An HTML comment on the lines right before a fence is a directive for the next block
//     (invisible on GitHub):
//     `<!-- readme-test: background URL -->` runs the block in its own process group, as a
//     second terminal would (`make run`), and waits until URL answers 200;
//     `<!-- readme-test: stop -->` first stops that background block as its reader does, with
//     Ctrl-C (SIGINT to its process group), and waits until every process of it exited;
//     `<!-- readme-test: skip REASON -->` does not run the block and says so with REASON;
//     `<!-- readme-test: needs VAR REASON -->` runs it only when the environment variable VAR is
//     set (a Queen PostgreSQL URL, say), and otherwise skips it with REASON.
//   - Ports: the session rewrites one port number the file uses (comb's 6632) to a free one, so
//     the run never collides with a `make run` already holding it. Every other
//     `localhost:N` / `127.0.0.1:N` a running block names must be free when the session
//     starts, or it refuses to start (saying which port and line).
//
// Every block has a deadline (Options.BlockTimeout); past it the session is killed and the
// block's output so far is reported. Whatever the session started (its process group, the
// background block's) is killed when it ends, whether it passed or not.
//
// The README run itself is readme_test.go, behind the build tag `readme` (`make test-readme`):
// it copies the source tree to a temporary directory, gives the session its own HOME (so
// `make install` lands in a fresh ~/.local/bin) and runs README.md there.
package doctest
