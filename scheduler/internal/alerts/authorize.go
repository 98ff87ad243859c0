package alerts

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/alarm"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
)

// ErrUnknownChannel is a channel a rule may not name, answered in the same
// words whether it is missing or another group's, so that rules cannot
// probe other groups' channel ids.
var ErrUnknownChannel = errors.New("unknown channel")

// MayName is the one decision of who may make a rule notify a channel,
// asked where the reference is made (CreateRule). A rule's notices carry
// its jobs' names, statuses and messages to the channel's readers, and
// each notice costs the channel's owner a message:
//
//   - a global channel (the admins' ops room) is named only by admins;
//   - a group's channel only by an operator of that group, and only from a
//     rule of that group (or one of its jobs): a global rule, or another
//     group's, would send other groups' job names to this group's chat.
//
// A reference is authorized once, as its author's act, like a child job
// (package refs): it keeps working if the author later loses the grant.
func MayName(p *auth.Principal, ruleGroup string, ch alarm.Channel) error {
	switch {
	case p == nil:
		return fmt.Errorf("%w %d", ErrUnknownChannel, ch.ID)
	case ch.Group == "":
		if !p.Admin {
			return &auth.Forbidden{Permission: fmt.Sprintf("admin (channel %d is global)", ch.ID)}
		}
	case !p.Can(ch.Group, auth.Operator):
		return fmt.Errorf("%w %d", ErrUnknownChannel, ch.ID)
	case ch.Group != ruleGroup:
		return fmt.Errorf("%w: channel %d belongs to group %s; a rule of %s may name only its group's channels and (admins) global ones",
			ErrInvalid, ch.ID, ch.Group, orGlobal(ruleGroup))
	}
	return nil
}

func orGlobal(g string) string {
	if g == "" {
		return "every job (global)"
	}
	return "group " + g
}

// authorizeChannels reads the channels a rule names, locked against
// deletion until tx ends, and asks MayName of each.
func authorizeChannels(ctx context.Context, tx pgx.Tx, p *auth.Principal, ruleGroup string, ids []int64) error {
	for _, id := range ids {
		ch, err := scanChannel(tx.QueryRow(ctx, `SELECT `+channelColumns+` FROM alert_channels WHERE id = $1 FOR SHARE`, id))
		if errors.Is(err, ErrNotFound) {
			return fmt.Errorf("%w %d", ErrUnknownChannel, id)
		}
		if err != nil {
			return fmt.Errorf("read channel %d: %w", id, err)
		}
		if err := MayName(p, ruleGroup, ch.Channel); err != nil {
			return err
		}
		if ch.ManagedByJob != 0 {
			return fmt.Errorf("%w: channel %d is job %d's alarm fields' (alarm_emails / alarm_webhook), named by that job's rule only: make a channel of your own",
				ErrInvalid, id, ch.ManagedByJob)
		}
	}
	return nil
}
