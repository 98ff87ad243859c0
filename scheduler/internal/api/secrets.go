package api

import (
	"net/http"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

// A secret's value reaches the commands of the jobs that reference it, so
// writing one (create, a new value, delete) needs what writing such a job
// needs: operator with scripts on its group. Its group's viewers list its
// name, version and the jobs that use it; no answer ever holds a value.
func secretWriteNeed(group string) auth.Need {
	return auth.Need{Group: group, Scripts: true, Why: "a secret's value reaches the commands of the jobs that use it"}
}

// secretBodyGroup is the group a new secret goes to.
func (s *Server) secretBodyGroup(r *http.Request, _ *auth.Principal) ([]auth.Need, error) {
	var f struct {
		Group string `json:"group"`
	}
	if _, err := peekBody(r, &f); err != nil {
		return nil, err
	}
	if err := wire.CheckName("group", f.Group); err != nil {
		return nil, invalidf("%v", err)
	}
	return []auth.Need{secretWriteNeed(f.Group)}, nil
}

// pathSecretGroup is the group of the path's secret (hidden when missing
// or another group's); write adds scripts.
func (s *Server) pathSecretGroup(write bool) auth.GroupOf {
	return func(r *http.Request, _ *auth.Principal) ([]auth.Need, error) {
		sec, what, err := pathRecord(r, "secret", s.store.GetSecret)
		if err != nil {
			return nil, err
		}
		n := auth.Need{Group: sec.Group, Hidden: true, What: what}
		if write {
			w := secretWriteNeed(sec.Group)
			n.Scripts, n.Why = w.Scripts, w.Why
		}
		return []auth.Need{n}, nil
	}
}

func secretDoc(sec store.Secret) apiv1.Secret {
	jobs := sec.Jobs
	if jobs == nil {
		jobs = []int64{}
	}
	return apiv1.Secret{ID: sec.ID, Group: sec.Group, Name: sec.Name, Version: sec.Version, KeyID: sec.KeyID,
		CreatedBy: sec.CreatedBy, CreatedAt: sec.CreatedAt, UpdatedBy: sec.UpdatedBy, UpdatedAt: sec.UpdatedAt, Jobs: jobs}
}

func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, "group"); err != nil {
		return err
	}
	list, err := s.store.ListSecrets(r.Context(), r.URL.Query().Get("group"), readable(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiv1.SecretList{Secrets: docs(list, secretDoc)})
	return nil
}

func (s *Server) getSecret(w http.ResponseWriter, r *http.Request) error {
	sec, _, err := pathRecord(r, "secret", s.store.GetSecret)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, secretDoc(sec))
	return nil
}

func (s *Server) createSecret(w http.ResponseWriter, r *http.Request) error {
	var in apiv1.SecretWrite
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if err := wire.CheckName("secret name", in.Name); err != nil {
		return invalidf("%v", err)
	}
	sec, err := s.store.CreateSecret(r.Context(), actor(r), in.Group, in.Name, []byte(in.Value))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, secretDoc(sec))
	return nil
}

func (s *Server) updateSecret(w http.ResponseWriter, r *http.Request) error {
	id, in, err := pathIDBody[apiv1.SecretWrite](w, r)
	if err != nil {
		return err
	}
	if in.Group != "" || in.Name != "" {
		return invalidf("a secret's group and name cannot change: send only its new value (or create another secret)")
	}
	sec, err := s.store.SetSecretValue(r.Context(), actor(r), id, []byte(in.Value))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, secretDoc(sec))
	return nil
}

func (s *Server) deleteSecret(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if err := s.store.DeleteSecret(r.Context(), actor(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
