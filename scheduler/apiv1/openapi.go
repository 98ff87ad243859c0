package apiv1

import _ "embed" // the OpenAPI document

// openAPI is the API's OpenAPI 3.1 document, generated from the server's
// route table and the types of this package (make openapi): a test of
// the server fails when it differs from what they generate.
//
//go:embed openapi.json
var openAPI string

// OpenAPI returns the API's OpenAPI 3.1 document (JSON), the one the
// server serves at GET /api/v1/openapi.json: clients in other languages
// generate their types from it, as this package's are its source.
func OpenAPI() string { return openAPI }
