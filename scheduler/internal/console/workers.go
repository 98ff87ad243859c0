package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// workersPage is the workers page's data: every readable group with its
// capacity and backlog, and its live workers.
type workersPage struct {
	Filter string
	Groups []groupRow
	// Names are every readable group's name, the group filter's choices.
	Names []string
	// Form is the new-group form (admins), kept when the API refused it.
	Form      apiv1.Group
	FormError string
	// Limits is a group's limits form as sent, kept with why it was
	// refused (LimitsError) for that group (Limits.Group).
	Limits      limitsForm
	LimitsError string
}

type groupRow struct {
	apiv1.Group
	Backlog apiv1.GroupBacklog
	Workers []apiv1.Worker
}

func (c *Console) workers(w http.ResponseWriter, r *http.Request) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	data, err := c.workersData(r, r.URL.Query().Get("group"))
	if err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "workers", page{Title: c.lang(r, u).T("Workers"), User: u, Data: data})
}

// workersData reads the groups (filtered to the caller's by the API) and
// the live workers, and puts each worker and backlog under its group.
func (c *Console) workersData(r *http.Request, group string) (*workersPage, error) {
	var gl apiv1.GroupList
	if _, err := c.call(r, http.MethodGet, "/api/v1/groups", nil, nil, &gl); err != nil {
		return nil, err
	}
	q := url.Values{}
	if group != "" {
		q.Set("group", group)
	}
	var wl apiv1.WorkerList
	if _, err := c.call(r, http.MethodGet, "/api/v1/workers", q, nil, &wl); err != nil {
		return nil, err
	}
	data := &workersPage{Filter: group}
	for _, g := range gl.Groups {
		data.Names = append(data.Names, g.Name)
		if group != "" && g.Name != group {
			continue
		}
		row := groupRow{Group: g, Backlog: apiv1.GroupBacklog{Group: g.Name}}
		for _, b := range wl.Groups {
			if b.Group == g.Name {
				row.Backlog = b
			}
		}
		for _, wk := range wl.Workers {
			if wk.Group == g.Name {
				row.Workers = append(row.Workers, wk)
			}
		}
		slices.SortFunc(row.Workers, func(a, b apiv1.Worker) int { return strings.Compare(a.ID, b.ID) })
		data.Groups = append(data.Groups, row)
	}
	return data, nil
}

// createGroup creates a group through POST /api/v1/groups (admins); a
// refused name shows the workers page again with the API's words.
func (c *Console) createGroup(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return badForm(err)
	}
	g := apiv1.Group{Name: strings.TrimSpace(r.PostForm.Get("name")), Title: strings.TrimSpace(r.PostForm.Get("title"))}
	for _, h := range strings.Split(r.PostForm.Get("command_handlers"), ",") {
		if h = strings.TrimSpace(h); h != "" {
			g.CommandHandlers = append(g.CommandHandlers, h)
		}
	}
	_, err := c.call(r, http.MethodPost, "/api/v1/groups", nil, g, nil)
	if ae := formRefusal(err); ae != nil {
		u, merr := c.me(r)
		if merr != nil {
			return merr
		}
		data, derr := c.workersData(r, "")
		if derr != nil {
			return derr
		}
		data.Form, data.FormError = g, ae.Error()
		return c.render(w, r, ae.Status, "workers", page{Title: c.lang(r, u).T("Workers"), User: u, Data: data})
	}
	if err != nil {
		return err
	}
	redirect(w, r, "/workers?group="+url.QueryEscape(g.Name), noticeGroupCreated)
	return nil
}

// groupFlowNotices are the console's group flow actions and their notices.
var groupFlowNotices = map[string]notice{"pause": noticeGroupPaused, "drain": noticeGroupDraining, "resume": noticeGroupResumed}

// groupFlow pauses, drains or resumes a group through the API (which
// decides who may), with the form's note, and shows the group again.
func (c *Console) groupFlow(w http.ResponseWriter, r *http.Request) error {
	name, action := r.PathValue("name"), r.PathValue("action")
	done, ok := groupFlowNotices[action]
	if !ok {
		return &APIError{Status: http.StatusNotFound, Doc: apiv1.Error{Error: fmt.Sprintf("no such page: group action %q", action)}}
	}
	if err := r.ParseForm(); err != nil {
		return badForm(err)
	}
	body := apiv1.GroupFlowRequest{Note: strings.TrimSpace(r.PostForm.Get("note"))}
	if _, err := c.call(r, http.MethodPost, "/api/v1/groups/"+url.PathEscape(name)+"/"+action, nil, body, nil); err != nil {
		return err
	}
	redirect(w, r, "/workers?group="+url.QueryEscape(name), done)
	return nil
}
