package auth

import (
	"context"
	"testing"
)

// BenchmarkCheckPassword measures a login's hashing cost (the parameters'
// doc comment quotes it).
func BenchmarkCheckPassword(b *testing.B) {
	ctx := context.Background()
	h, err := HashPassword(ctx, "correct horse battery")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := CheckPassword(ctx, h, "correct horse battery"); err != nil {
			b.Fatal(err)
		}
	}
}
