package console

import (
	"errors"
	"net/url"
	"slices"
	"testing"
)

// A bulk form's ticked ids are read each once, in order; one that is not
// a positive number refuses the form, naming it and what it should be.
func TestBulkIDs(t *testing.T) {
	ids, err := bulkIDs(url.Values{"id": {"7", " 3 ", "7", "12"}}, "run")
	if err != nil || !slices.Equal(ids, []int64{7, 3, 12}) {
		t.Fatalf("ids %v, %v; want [7 3 12]", ids, err)
	}
	if ids, err := bulkIDs(url.Values{}, "job"); err != nil || len(ids) != 0 {
		t.Fatalf("no ids: %v, %v", ids, err)
	}
	for _, bad := range []string{"0", "-4", "x", "1e3"} {
		_, err := bulkIDs(url.Values{"id": {"5", bad}}, "job")
		var ae *APIError
		if !errors.As(err, &ae) || ae.Doc.Error != "id "+`"`+bad+`"`+": want a job id" {
			t.Errorf("id %q: %v, want a 400 naming it", bad, err)
		}
	}
}
