// Package doccheck holds no code, only tests: they keep the repository's
// prose true to its tree. Every path, package, Go symbol and constructor
// signature that docs/*.md and README.md name in backticks must exist as
// named, every link to a local file must resolve (its #anchor to a heading
// of the file it points into), and the README stays under its size bound.
// A rename that leaves a doc behind fails here, in the -short tier: the
// tests read files only, no server.
package doccheck
