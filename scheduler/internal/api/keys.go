package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// keyUser is whose keys a request is about: the named user, else the
// caller, who must then be a user (the bootstrap principal has no keys).
func keyUser(r *http.Request, named string) (string, error) {
	if named != "" {
		return named, nil
	}
	p := auth.FromContext(r.Context())
	if p.Method == auth.ByBootstrap || p.Method == auth.ByNone {
		return "", invalidf("%s is not a user and has no keys: name the user (\"user\")", p.Name)
	}
	return p.Name, nil
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, "user"); err != nil {
		return err
	}
	user, err := keyUser(r, r.URL.Query().Get("user"))
	if err != nil {
		return err
	}
	ks, err := s.store.ListKeys(r.Context(), user)
	if err != nil {
		return err
	}
	if ks == nil {
		ks = []store.Key{} // the list is [], never null
	}
	writeJSON(w, http.StatusOK, apiv1.KeyList{Keys: ks}) // a store.Key is the API's document
	return nil
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) error {
	var in apiv1.KeyCreate
	if err := decode(w, r, &in); err != nil {
		return err
	}
	name := strings.TrimSpace(in.Name)
	if name == "" || len(name) > maxNameLen {
		return invalidf("name is required (1-%d characters): say what the key is for", maxNameLen)
	}
	if p := nameProblem(name); p != "" {
		return invalidf("name %s", p)
	}
	if in.ExpiresAt != nil && !in.ExpiresAt.After(s.now()) {
		return invalidf("expires_at %s is in the past", in.ExpiresAt.Format("2006-01-02T15:04:05Z07:00"))
	}
	user, err := keyUser(r, in.User)
	if err != nil {
		return err
	}
	k, err := s.issueKey(r.Context(), actor(r), user, name, in.ExpiresAt)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, k)
	return nil
}

// issueKey creates an API key of user, recorded as a's: the one place
// keys are made (POST /keys, and a CLI's sign-in through a provider).
func (s *Server) issueKey(ctx context.Context, a store.Actor, user, name string, expires *time.Time) (apiv1.CreatedKey, error) {
	// A prefix collision (40 random bits) is retried with a new key.
	for range 3 {
		token, prefix, hash, err := auth.NewKey()
		if err != nil {
			return apiv1.CreatedKey{}, err
		}
		k, err := s.store.CreateKey(ctx, a, store.Key{Prefix: prefix, Name: name, User: user, ExpiresAt: expires}, hash)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return apiv1.CreatedKey{}, err
		}
		return apiv1.CreatedKey{Key: k, Secret: token}, nil
	}
	return apiv1.CreatedKey{}, errors.New("create key: three prefix collisions in a row")
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.store.RevokeKey(r.Context(), actor(r), pathKeyID(r)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
