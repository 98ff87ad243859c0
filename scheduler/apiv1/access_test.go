package apiv1

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestAuditEntryChanges(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after string
		want          []FieldChange
		wantErr       bool
	}{
		{name: "create", after: `{"id": 1, "name": "a"}`},
		{name: "delete", before: `{"id": 1, "name": "a"}`},
		{name: "id and version are no change", before: `{"id": 1, "version": 1, "name": "a"}`, after: `{"id": 1, "version": 2, "name": "a"}`},
		{name: "white space is no change", before: `{"params": {"a": [1, 2]}}`, after: `{"params":{"a":[1,2]}}`},
		{
			name:   "changed, added and removed, by name",
			before: `{"version": 1, "timeout": "5s", "name": "a", "note": "x"}`,
			after:  `{"version": 2, "timeout": "10s", "name": "a", "alarm_webhook": "http://h"}`,
			want: []FieldChange{
				{Field: "alarm_webhook", After: json.RawMessage(`"http://h"`)},
				{Field: "note", Before: json.RawMessage(`"x"`)},
				{Field: "timeout", Before: json.RawMessage(`"5s"`), After: json.RawMessage(`"10s"`)},
			},
		},
		{name: "not an object", before: `[1]`, after: `{"a": 1}`, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := AuditEntry{ID: 7}
			if tc.before != "" {
				e.Before = json.RawMessage(tc.before)
			}
			if tc.after != "" {
				e.After = json.RawMessage(tc.after)
			}
			got, err := e.Changes()
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("changes = %+v, want %+v", got, tc.want)
			}
		})
	}
}
