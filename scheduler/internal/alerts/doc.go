// Package alerts decides and delivers what operators are told about their
// jobs (docs/alerts.md): channels (where notices go), rules (which events
// of which jobs, with a threshold in a window, a re-notify interval and
// silence), and alerts (one live per rule and job, counting its events
// instead of repeating them, closed by a recovery).
//
// The path is durable end to end. The results applier writes the ends of
// runs an alert may follow from into alert_outbox in the transaction that
// records them (RecordEnds), so an end is never lost and never seen twice.
// The engine (one scheduler at a time, under an advisory lock) takes
// outbox rows in order, applies them to rules and alerts (Decide, without
// I/O) and queues one delivery per (rule, channel, event), deleting the
// rows in the same transaction. Deliveries are sent by any scheduler:
// claimed by moving them to sending with a lease, sent once through the
// alarm package's channels (the egress policy), recorded per attempt, and
// retried with backoff (or a receiver's Retry-After). A scheduler that
// stops during an attempt leaves its delivery sending; once the lease has
// passed it is recorded unknown and not repeated: at most once per
// (rule, channel, event). A dead channel delays nothing but its own
// deliveries, which run apart from the results path.
//
// A job's alarm_emails and alarm_webhook are channels and a rule of this
// model, marked managed_by_job: a trigger on jobs (jetjob_job_alarm,
// migration 0027) keeps them what the job's fields say, in the statement
// that writes the job, whichever path writes it, and the statements here
// refuse to edit or delete them (ErrManaged) or to let another rule name
// their channels.
package alerts
