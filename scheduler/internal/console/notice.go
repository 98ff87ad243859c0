package console

import (
	"net/http"
	"net/url"
	"strings"
)

// A notice is the one-line confirmation a page shows after a change: the
// form's 303 names it by code (?notice=job-created), and the page shows
// the code's fixed text. Only the codes below show, each with its own
// words: a link made by someone else cannot put text of its choosing on a
// page of this site, the login page included (?flash=<text> could, as if
// the scheduler said it). An unknown code shows nothing. The texts name no
// job or run: the page the browser lands on shows which.
type notice struct{ code, text string }

// notices are the texts by code.
var notices = map[string]string{}

// newNotice declares a notice.
func newNotice(code, text string) notice {
	if _, dup := notices[code]; dup {
		panic("console: notice " + code + " declared twice")
	}
	notices[code] = text
	return notice{code, text}
}

var (
	noticeJobCreated   = newNotice("job-created", "Job created.")
	noticeJobSaved     = newNotice("job-saved", "Job saved.")
	noticeJobEnabled   = newNotice("job-enabled", "Job enabled.")
	noticeJobDisabled  = newNotice("job-disabled", "Job disabled.")
	noticeJobDeleted   = newNotice("job-deleted", "Job deleted.")
	noticeRunTriggered = newNotice("run-triggered", "Run triggered.")

	noticeScriptSaved      = newNotice("script-saved", "Script saved as a new version.")
	noticeScriptRolledBack = newNotice("script-rolled-back", "Rolled back: the old version's source is the new current version.")
	noticeRerun            = newNotice("run-rerun", "Job triggered again with the params of the run before.")
	noticeKillSent         = newNotice("kill-sent", "Kill sent: the run ends CANCELLED when its worker stops it.")
	noticeRunCancelled     = newNotice("run-cancelled", "Run cancelled before it started.")
	noticeRunDeleted       = newNotice("run-deleted", "Run deleted, with its log.")
	noticeGroupCreated     = newNotice("group-created", "Group created.")
	noticeGroupPaused      = newNotice("group-paused", "Group paused: no new run of its jobs starts until it is resumed.")
	noticeGroupDraining    = newNotice("group-draining", "Group draining: no new run starts; it reads drained once its running runs end.")
	noticeGroupLimits      = newNotice("group-limits", "Group limits set: they apply to the runs that start from now on.")
	noticeGroupResumed     = newNotice("group-resumed", "Group resumed: fires missed meanwhile follow each job's misfire policy.")
	noticeSignedOut        = newNotice("signed-out", "Signed out.")
	noticePasswordSet      = newNotice("password-set", "Password set: sign in with it.")

	noticeWorkflowCreated   = newNotice("workflow-created", "Workflow created.")
	noticeWorkflowSaved     = newNotice("workflow-saved", "Workflow saved.")
	noticeWorkflowDeleted   = newNotice("workflow-deleted", "Workflow deleted; its runs stay.")
	noticeWorkflowTriggered = newNotice("workflow-triggered", "Workflow triggered.")
	noticeWorkflowCancelled = newNotice("workflow-cancelled", "Cancel sent: running nodes are killed, the others will not start.")
	noticeWorkflowRetried   = newNotice("workflow-retried", "Retrying the failed and cancelled nodes.")
	noticeWorkflowRerun     = newNotice("workflow-rerun", "Re-run started: a new run of the workflow with the same params.")
	noticeNodeMarked        = newNotice("node-marked", "Node marked succeeded.")
	noticeNodeSkipped       = newNotice("node-skipped", "Node skipped; what follows it runs as if it succeeded.")

	noticeChannelSaved   = newNotice("channel-saved", "Channel saved.")
	noticeChannelDeleted = newNotice("channel-deleted", "Channel deleted.")
	noticeRuleSaved      = newNotice("rule-saved", "Alert rule saved.")
	noticeRuleDeleted    = newNotice("rule-deleted", "Alert rule deleted, with its alerts.")
	noticeAlertAcked     = newNotice("alert-acked", "Alert acknowledged: no more notices until it closes.")
	noticeAlertMuted     = newNotice("alert-muted", "Alert muted: its events are counted, nothing is sent until the silence ends.")
	noticeAlertUnmuted   = newNotice("alert-unmuted", "Alert's silence lifted.")
)

// noticeParam is the query parameter that names a page's notice.
const noticeParam = "notice"

// noticeOf is the text of the notice r's URL names, "" for none or an
// unknown code.
func noticeOf(r *http.Request) string { return notices[r.URL.Query().Get(noticeParam)] }

// redirect answers a form with 303 See Other to where (a path of this
// site), naming the notice the page shows.
func redirect(w http.ResponseWriter, r *http.Request, where string, n notice) {
	sep := "?"
	if strings.Contains(where, "?") {
		sep = "&"
	}
	http.Redirect(w, r, where+sep+noticeParam+"="+url.QueryEscape(n.code), http.StatusSeeOther)
}
