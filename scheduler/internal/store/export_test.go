package store

// SearchSQL exposes the search statement to the external tests, which
// EXPLAIN it.
var SearchSQL = searchSQL
