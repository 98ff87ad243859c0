package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// jobForm is the data of the one form that creates and edits jobs.
type jobForm struct {
	// Job is the job being edited; nil on create.
	Job *apiv1.Job
	// Version is the version the edit is based on (a hidden field): the
	// API refuses the save with 409 when the job changed since.
	Version  int64
	Sections []formSection
	// Errors are the API's problems that name no field.
	Errors []string
	// Conflict is set when the save met someone else's change: the form
	// then shows the current job, and Conflict what the user had typed.
	Conflict *formConflict
	Preview  schedulePreview
	// Handlers are the handler names each group's live workers registered,
	// one datalist per group the form offers: the handler field suggests
	// the chosen group's (console.js follows a change of group).
	Handlers []groupHandlers
}

// groupHandlers is a group's live handlers, as one <datalist>.
type groupHandlers struct {
	Group, ListID string
	Names         []string
}

// formSection is one fieldset of the form.
type formSection struct {
	Name   string
	Fields []formField
	// Schedule marks the section the live preview follows.
	Schedule bool
	// Advanced is the section folded by default (open when one of its
	// fields has an error, so that the error shows); Set counts its fields
	// that hold a value, for its summary.
	Advanced, Open bool
	Set            int
}

// formField is a field with what the form shows in it.
type formField struct {
	jobField
	Value, Error string
	// List is the id of the datalist suggesting values ("": none).
	List string
}

// ID is the control's element id.
func (f formField) ID() string { return "f-" + f.Name }

// formConflict is a save refused because the job changed meanwhile.
type formConflict struct {
	Message string
	// Yours are the fields where what the user typed differs from the
	// current job (shown in the form now).
	Yours []fieldChange
}

// fieldChange is one field's value in two versions.
type fieldChange struct {
	Label, Old, New string
}

// schedulePreview is the next fires of a schedule, in its zone and in UTC.
type schedulePreview struct {
	Zone  string
	Times []time.Time
	// Excluded are fires the job's calendars exclude, shown struck
	// through among the others (Rows).
	Excluded []apiv1.ExcludedFire
	Error    string
}

// The form's sections (issue #35): what every job needs first, then how
// it runs and whom it alerts, and the rest folded. The job page keeps
// jobSections; the form places the fields formLayout names in its order,
// and every other field (one added to jobFields later too) in Advanced,
// in jobFields' order.
const (
	formBasics    = "Basics"
	formBehaviour = "Behaviour"
	formAlerts    = "Alerts"
	formAdvanced  = "Advanced"
)

var formLayout = []struct {
	name   string
	fields []string
}{
	{formBasics, []string{"name", "group", "description", "handler", "script_language", "params",
		"schedule_type", "schedule_expr", "timezone", "enabled"}},
	{formBehaviour, []string{"route_strategy", "block_strategy", "max_concurrency", "misfire_policy",
		"misfire_threshold", "max_catchup", "timeout", "max_retries", "retry_backoff", "retry_initial", "retry_max"}},
	{formAlerts, []string{"alarm_webhook", "alarm_emails"}},
	{formAdvanced, nil},
}

// formSectionFor is the form section of field name.
func formSectionFor(name string) string {
	for _, sec := range formLayout {
		if slices.Contains(sec.fields, name) {
			return sec.name
		}
	}
	return formAdvanced
}

// previewRow is one fire of a preview; Calendar names the calendar that
// excludes it ("" for a fire that runs).
type previewRow struct {
	At       time.Time
	Calendar string
}

// Rows are the fires that run and the excluded ones, in time order.
func (p schedulePreview) Rows() []previewRow {
	out := make([]previewRow, 0, len(p.Times)+len(p.Excluded))
	for _, t := range p.Times {
		out = append(out, previewRow{At: t})
	}
	for _, e := range p.Excluded {
		out = append(out, previewRow{At: e.At, Calendar: e.Calendar})
	}
	slices.SortStableFunc(out, func(a, b previewRow) int { return a.At.Compare(b.At) })
	return out
}

// newJobForm is the form with spec's values, the errors placed under their
// fields, and the group choice of the user. A field that could not be read
// into spec at all shows its text from typed instead (nil: none).
func newJobForm(spec *apiv1.JobSpec, groups []string, fieldErrs map[string]string, typed url.Values) []formSection {
	out := make([]formSection, 0, len(formLayout))
	for _, sec := range formLayout {
		fs := formSection{Name: sec.name, Schedule: sec.name == formBasics, Advanced: sec.name == formAdvanced}
		fields := make([]jobField, 0, len(sec.fields))
		for _, name := range sec.fields {
			fields = append(fields, fieldNamed(name))
		}
		if fs.Advanced {
			fields = slices.DeleteFunc(slices.Clone(jobFields), func(f jobField) bool { return formSectionFor(f.Name) != formAdvanced })
		}
		for _, f := range fields {
			ff := formField{jobField: f, Value: f.get(spec), Error: fieldErrs[f.Name]}
			if ff.Error != "" && typed != nil {
				ff.Value = typed.Get(f.Name)
			}
			if f.Kind == "group" {
				ff.Options = groups
				if ff.Value != "" && !slices.Contains(groups, ff.Value) {
					ff.Options = append([]string{ff.Value}, groups...)
				}
			}
			if ff.Error != "" {
				fs.Open = true
			}
			if ff.Value != "" && ff.Value != "0" && ff.Value != "false" {
				fs.Set++
			}
			fs.Fields = append(fs.Fields, ff)
		}
		out = append(out, fs)
	}
	return out
}

// handlersOf lists, for each of groups, the handler names its live workers
// registered (GET /api/v1/workers: the scheduler's worker registry), and
// points the form's handler field at the list of its group. Suggestions
// are a help only: should the workers not be read, the form has none.
func (c *Console) handlersOf(r *http.Request, groups []string, sections []formSection) []groupHandlers {
	var wl apiv1.WorkerList
	if _, err := c.call(r, http.MethodGet, "/api/v1/workers", nil, nil, &wl); err != nil {
		c.log.Warn("job form without handler suggestions", zap.Error(err))
	}
	out := make([]groupHandlers, 0, len(groups))
	for i, g := range groups {
		gh := groupHandlers{Group: g, ListID: "handlers-" + strconv.Itoa(i)}
		for _, w := range wl.Workers {
			if w.Group == g {
				gh.Names = append(gh.Names, w.Handlers...)
			}
		}
		slices.Sort(gh.Names)
		gh.Names = slices.Compact(gh.Names)
		out = append(out, gh)
	}
	var group string
	for _, sec := range sections {
		for _, f := range sec.Fields {
			if f.Name == "group" {
				group = f.Value
			}
		}
	}
	for si := range sections {
		for fi := range sections[si].Fields {
			if f := &sections[si].Fields[fi]; f.Name == "handler" {
				for _, gh := range out {
					if gh.Group == group {
						f.List = gh.ListID
					}
				}
			}
		}
	}
	return out
}

// specFromForm reads the posted form into a JobSpec through jobFields;
// the errors are the values that could not be read at all, by field.
func specFromForm(form url.Values) (apiv1.JobSpec, map[string]error) {
	var spec apiv1.JobSpec
	errs := map[string]error{}
	for _, f := range jobFields {
		if err := f.set(&spec, form.Get(f.Name)); err != nil {
			errs[f.Name] = err
		}
	}
	return spec, errs
}

// meAndGroups is what a blank or refused job form needs: the user and the
// groups they may put a job in.
func (c *Console) meAndGroups(r *http.Request) (*User, []string, error) {
	u, err := c.me(r)
	if err != nil {
		return nil, nil, err
	}
	groups, err := c.operableGroups(r, u)
	if err != nil {
		return nil, nil, err
	}
	return u, groups, nil
}

// meAndNewGroups is meAndGroups for a blank new job or workflow form,
// refused (403) to a user who may put it in no group: saving would be.
func (c *Console) meAndNewGroups(r *http.Request) (*User, []string, error) {
	u, groups, err := c.meAndGroups(r)
	if err == nil && len(groups) == 0 {
		err = &APIError{Status: http.StatusForbidden, Doc: apiv1.Error{Error: "you operate no group: an admin grants the operator role of a group first"}}
	}
	return u, groups, err
}

// operableGroups are the groups the user may put a job in: every group
// for an admin, the groups they operate otherwise (from GET /groups, so
// only groups that exist).
func (c *Console) operableGroups(r *http.Request, u *User) ([]string, error) {
	var gl apiv1.GroupList
	if _, err := c.call(r, http.MethodGet, "/api/v1/groups", nil, nil, &gl); err != nil {
		return nil, err
	}
	var out []string
	for _, g := range gl.Groups {
		if u.CanOperate(g.Name) {
			out = append(out, g.Name)
		}
	}
	return out, nil
}

// preview asks the API for the next 10 fires of a schedule being written;
// a schedule the API refuses comes back with the API's words.
func (c *Console) preview(r *http.Request, spec *apiv1.JobSpec) schedulePreview {
	zone := spec.Timezone
	if zone == "" {
		zone = "UTC"
	}
	q := url.Values{"type": {spec.ScheduleType}, "expr": {spec.ScheduleExpr}, "timezone": {zone}, "n": {"10"}}
	for i, p := range spec.Schedules {
		if i > 0 {
			q.Add("also", p.Type+"|"+p.Expr+"|"+p.Timezone)
		}
	}
	if len(spec.ExcludeCalendars) > 0 {
		q.Set("exclude", strings.Join(spec.ExcludeCalendars, ","))
	}
	if len(spec.IncludeCalendars) > 0 {
		q.Set("include", strings.Join(spec.IncludeCalendars, ","))
	}
	var sp apiv1.SchedulePreview
	if _, err := c.call(r, http.MethodGet, "/api/v1/schedule/preview", q, nil, &sp); err != nil {
		return schedulePreview{Zone: zone, Error: err.Error()}
	}
	return schedulePreview{Zone: zone, Times: sp.Times, Excluded: sp.Excluded}
}

// newJob shows the empty form: defaults, and the group from ?group= when
// the user may operate it.
func (c *Console) newJob(w http.ResponseWriter, r *http.Request) error {
	u, groups, err := c.meAndNewGroups(r)
	if err != nil {
		return err
	}
	on := true
	spec := apiv1.JobSpec{ScheduleType: "cron", ScheduleExpr: "0 */5 * * * *", Timezone: "UTC", MisfirePolicy: "fire_once",
		RouteStrategy: "any", BlockStrategy: "serial", RetryBackoff: "exponential", Enabled: &on, Group: groups[0]}
	if g := r.URL.Query().Get("group"); slices.Contains(groups, g) {
		spec.Group = g
	}
	return c.renderJobForm(w, r, http.StatusOK, u, groups, nil, &spec, nil, nil, nil)
}

// mayEdit is nil when u may change the kind's object name of group, else
// the 403 its edit form answers: saving would be refused, so the form says
// so now rather than after the typing.
func mayEdit(u *User, kind, name, group string) error {
	if u.CanOperate(group) {
		return nil
	}
	return &APIError{Status: http.StatusForbidden, Doc: apiv1.Error{Error: "you may read " + kind + " " + name + " but not change it",
		Permission: "operator of group " + group}}
}

// editJob shows the form with the job's current values.
func (c *Console) editJob(w http.ResponseWriter, r *http.Request) error {
	u, j, err := c.userAndJob(r)
	if err != nil {
		return err
	}
	if err := mayEdit(u, "job", j.Name, j.Group); err != nil {
		return err
	}
	groups, err := c.operableGroups(r, u)
	if err != nil {
		return err
	}
	return c.renderJobForm(w, r, http.StatusOK, u, groups, &j, &j.JobSpec, nil, nil, nil)
}

// renderJobForm renders the form with spec's values; job is nil on
// create. The preview is rendered here too, so that it shows without
// JavaScript.
func (c *Console) renderJobForm(w http.ResponseWriter, r *http.Request, code int, u *User, groups []string,
	job *apiv1.Job, spec *apiv1.JobSpec, fieldErrs map[string]string, general []string, typed url.Values) error {
	data := &jobForm{Job: job, Sections: newJobForm(spec, groups, fieldErrs, typed), Errors: general,
		Preview: c.preview(r, spec)}
	data.Handlers = c.handlersOf(r, groups, data.Sections)
	l := c.lang(r, u)
	title := l.T("New job")
	if job != nil {
		data.Version = job.Version
		title = l.T("Edit %s", job.Name)
	}
	return c.render(w, r, code, "job_form", page{Title: title, User: u, Data: data})
}

// createJob posts the form to POST /api/v1/jobs and opens the new job; a
// refused job comes back as the form with each problem under its field.
func (c *Console) createJob(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return badForm(err)
	}
	spec, errs := specFromForm(r.PostForm)
	var j apiv1.Job
	err := formError(errs)
	if err == nil {
		_, err = c.call(r, http.MethodPost, "/api/v1/jobs", nil, spec, &j)
	}
	if err != nil {
		return c.refusedForm(w, r, err, nil, &spec, errs)
	}
	redirect(w, r, jobURL(j.ID), noticeJobCreated)
	return nil
}

// updateJob posts the form to PUT /api/v1/jobs/{id} with the version the
// form was opened at. A 409 for that version shows the job as it is now,
// with what the user typed listed beside it, so that nobody overwrites a
// change they have not seen.
func (c *Console) updateJob(w http.ResponseWriter, r *http.Request) error {
	id, err := postedForm(r, consoleID)
	if err != nil {
		return err
	}
	spec, errs := specFromForm(r.PostForm)
	spec.Version, err = strconv.ParseInt(r.PostForm.Get("version"), 10, 64)
	if err != nil || spec.Version <= 0 {
		return badForm(fmt.Errorf("version %q: want the positive version the form was opened at", r.PostForm.Get("version")))
	}
	var j apiv1.Job
	err = formError(errs)
	if err == nil {
		_, err = c.call(r, http.MethodPut, jobPath(id), nil, spec, &j)
	}
	if err != nil {
		return c.refusedForm(w, r, err, &id, &spec, errs)
	}
	redirect(w, r, jobURL(j.ID), noticeJobSaved)
	return nil
}

// errUnreadable marks a form whose values could not be put into a JSON
// document: the form comes back without asking the API.
var errUnreadable = errors.New("form has unreadable values")

func formError(errs map[string]error) error {
	if len(errs) > 0 {
		return errUnreadable
	}
	return nil
}

// refusedForm answers a save the API (or the form's own reading) refused:
// 400 shows the form as typed with each problem under its field, 409 on an
// edit shows the current job with the user's differing values, anything
// else is the error page.
func (c *Console) refusedForm(w http.ResponseWriter, r *http.Request, err error, id *int64, spec *apiv1.JobSpec, unread map[string]error) error {
	var ae *APIError
	code := http.StatusBadRequest
	var general []string
	var typed url.Values
	var errs map[string]string
	switch {
	case errors.Is(err, errUnreadable):
		typed = r.PostForm
	case errors.As(err, &ae) && ae.Status == http.StatusBadRequest:
		errs, general = placeProblems(ae.Doc.Error)
	case errors.As(err, &ae) && ae.Status == http.StatusConflict && ae.Doc.CurrentVersion > 0 && id != nil:
		return c.conflictForm(w, r, *id, spec, ae)
	case errors.As(err, &ae) && ae.Status == http.StatusConflict:
		// A taken name.
		code = http.StatusConflict
		errs, general = placeProblems(ae.Doc.Error)
	default:
		return err
	}
	u, groups, err := c.meAndGroups(r)
	if err != nil {
		return err
	}
	if typed != nil {
		l := c.lang(r, u)
		errs = map[string]string{}
		for name, e := range unread {
			errs[name] = inLang(e, l)
		}
	}
	var job *apiv1.Job
	if id != nil {
		job = &apiv1.Job{ID: *id, JobSpec: *spec, Version: spec.Version}
		job.Name = r.PostForm.Get("name")
	}
	return c.renderJobForm(w, r, code, u, groups, job, spec, errs, general, typed)
}

// conflictForm shows the job as it is now (at its new version) and lists
// the fields where the user's values differ, for them to apply again.
func (c *Console) conflictForm(w http.ResponseWriter, r *http.Request, id int64, yours *apiv1.JobSpec, ae *APIError) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	var cur apiv1.Job
	if _, err := c.call(r, http.MethodGet, jobPath(id), nil, nil, &cur); err != nil {
		return err
	}
	groups, err := c.operableGroups(r, u)
	if err != nil {
		return err
	}
	cur.JobSpec.Enabled = &cur.Enabled
	l := c.lang(r, u)
	conf := &formConflict{Message: l.T("Someone else changed this job while you edited it (it is now at version %d). The form shows their version; your values are listed here: apply them again and save.", cur.Version)}
	sections := newJobForm(&cur.JobSpec, groups, nil, nil)
	for _, f := range jobFields {
		if theirs, mine := f.get(&cur.JobSpec), f.get(yours); theirs != mine {
			conf.Yours = append(conf.Yours, fieldChange{Label: l.T(f.Label), Old: theirs, New: mine})
			if formSectionFor(f.Name) == formAdvanced {
				sections[len(sections)-1].Open = true // where the user retypes it
			}
		}
	}
	data := &jobForm{Job: &cur, Version: cur.Version, Sections: sections, Conflict: conf,
		Preview: c.preview(r, &cur.JobSpec)}
	data.Handlers = c.handlersOf(r, groups, data.Sections)
	return c.render(w, r, http.StatusConflict, "job_form", page{Title: l.T("Edit %s", cur.Name), User: u, Data: data})
}

// consoleID is the {id} of a job's console path; anything else is a page
// that does not exist.
func consoleID(r *http.Request) (int64, error) {
	return pathID(r, http.StatusNotFound, "no such page: job id %q is not a positive number")
}

// postedForm reads the id of the path with readID (consoleID, runID, ...)
// and parses the form posted about it: how every form and button about one
// object starts.
func postedForm(r *http.Request, readID func(*http.Request) (int64, error)) (int64, error) {
	id, err := readID(r)
	if err != nil {
		return 0, err
	}
	if err := r.ParseForm(); err != nil {
		return 0, badForm(err)
	}
	return id, nil
}

// pathID reads the {id} of a console route: a positive integer, checked
// here because it becomes part of an API path. Anything else answers
// status, with a message made by format of what was given.
func pathID(r *http.Request, status int, format string) (int64, error) {
	v := r.PathValue("id")
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		return 0, &APIError{Status: status, Doc: apiv1.Error{Error: fmt.Sprintf(format, v)}}
	}
	return id, nil
}

// jobPath is a job's API path; jobURL its console page.
func jobPath(id int64) string { return "/api/v1/jobs/" + strconv.FormatInt(id, 10) }

// userAndJob is what a job's pages start from: the signed-in user and the
// job of the path, read through the API (so a job of another group is the
// API's 404), with Enabled carried into the spec the templates read.
func (c *Console) userAndJob(r *http.Request) (*User, apiv1.Job, error) {
	u, j, err := userAndObject[apiv1.Job](c, r, consoleID, jobPath)
	if err != nil {
		return nil, j, err
	}
	j.JobSpec.Enabled = &j.Enabled
	return u, j, nil
}

// userAndObject reads the signed-in user and the object of the path: its
// id by readID, the object through the API at path(id), so that one the
// user may not read is the API's 404.
func userAndObject[T any](c *Console, r *http.Request, readID func(*http.Request) (int64, error), path func(int64) string) (*User, T, error) {
	var v T
	u, id, err := c.userAndID(r, readID)
	if err != nil {
		return nil, v, err
	}
	_, err = c.call(r, http.MethodGet, path(id), nil, nil, &v)
	return u, v, err
}

// userAndID reads the signed-in user and the id of the path (by readID).
func (c *Console) userAndID(r *http.Request, readID func(*http.Request) (int64, error)) (*User, int64, error) {
	id, err := readID(r)
	if err != nil {
		return nil, 0, err
	}
	u, err := c.me(r)
	if err != nil {
		return nil, 0, err
	}
	return u, id, nil
}
func jobURL(id int64) string { return "/jobs/" + strconv.FormatInt(id, 10) }
