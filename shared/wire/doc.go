// Package wire is the message protocol between schedulers and workers.
//
// Every message is versioned JSON ("v": 1). A reader accepts any message whose
// version it knows and rejects the rest with ErrVersion, so that old workers and
// new schedulers can coexist during a rolling upgrade: a newer field is ignored by
// an older reader, a newer version is refused loudly rather than misread.
//
// Messages arrive from the network and are never trusted: Decode* functions
// validate what they decode and return errors that say which field is wrong.
package wire
