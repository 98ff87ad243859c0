package alerts

import (
	"errors"
	"testing"

	"github.com/jetjob/jetjob/scheduler/internal/alarm"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
)

// Who may make a rule name a channel: admins any channel; a group's
// operator only the group's channels, from the group's rules; a viewer or
// another group's operator is told the channel is unknown, as for a
// missing one.
func TestMayName(t *testing.T) {
	admin := &auth.Principal{Name: "root", Admin: true}
	opA := &auth.Principal{Name: "op", Grants: map[string]auth.Grant{"a": {Role: auth.Operator}}}
	viewA := &auth.Principal{Name: "view", Grants: map[string]auth.Grant{"a": {Role: auth.Viewer}}}
	global := alarm.Channel{ID: 1}
	chanA := alarm.Channel{ID: 2, Group: "a"}
	chanB := alarm.Channel{ID: 3, Group: "b"}
	var forbidden *auth.Forbidden
	for _, c := range []struct {
		who       *auth.Principal
		ruleGroup string
		ch        alarm.Channel
		want      func(error) bool
	}{
		{admin, "", global, func(err error) bool { return err == nil }},
		{admin, "a", chanA, func(err error) bool { return err == nil }},
		{admin, "", chanA, func(err error) bool { return errors.Is(err, ErrInvalid) }},
		{opA, "a", chanA, func(err error) bool { return err == nil }},
		{opA, "a", global, func(err error) bool { return errors.As(err, &forbidden) }},
		{opA, "a", chanB, func(err error) bool { return errors.Is(err, ErrUnknownChannel) }},
		{viewA, "a", chanA, func(err error) bool { return errors.Is(err, ErrUnknownChannel) }},
		{nil, "a", chanA, func(err error) bool { return errors.Is(err, ErrUnknownChannel) }},
	} {
		if err := MayName(c.who, c.ruleGroup, c.ch); !c.want(err) {
			t.Errorf("%v naming channel %d (group %q) from a rule of %q: %v", c.who, c.ch.ID, c.ch.Group, c.ruleGroup, err)
		}
	}
}
