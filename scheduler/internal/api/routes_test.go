package api

import (
	"net/http"
	"strings"
	"testing"
)

// A route declared without a permission rule stops the server at start.
func TestRouteWithoutRulePanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "GET /api/v1/new") {
			t.Errorf("mounting a route without a rule: recovered %v, want a panic naming the route", r)
		}
	}()
	s := &Server{mux: http.NewServeMux()}
	s.mount([]route{{pattern: "GET /api/v1/new", h: func(http.ResponseWriter, *http.Request) error { return nil }}})
}
