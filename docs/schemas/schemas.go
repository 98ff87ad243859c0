// Package schemas holds the JSON Schemas (draft 2020-12) of the messages
// jetjob's schedulers and workers exchange over NATS, described in
// docs/protocol.md. The files are the contract for a worker written in
// another language; schemas_test.go keeps them true to the Go encoders of
// shared/wire.
package schemas

import "embed"

// FS holds the schema files: common.json (shared definitions, which the
// others refer to by relative $ref) and one file per message.
//
//go:embed *.json
var FS embed.FS
