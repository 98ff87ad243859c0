package api_test

import (
	"net/http"
	"testing"

	"github.com/jetjob/jetjob/internal/version"
)

// /healthz says which build answers, so a rollout can be followed.
func TestHealthzReportsVersion(t *testing.T) {
	srv, _ := server(t)
	var got struct {
		Status, Version, Commit, Date string
	}
	if code, msg := get(t, srv, "/healthz", &got); code != http.StatusOK {
		t.Fatalf("/healthz: %d %s", code, msg)
	}
	want := version.Get()
	if got.Status != "ok" || got.Version != want.Version || got.Version == "" || got.Commit != want.Commit || got.Date != want.Date {
		t.Errorf("/healthz = %+v, want status ok and %+v", got, want)
	}
}
