package main

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/jetjob/jetjob/scheduler/client"
)

// authError is an API refusal (401, 403) rewritten to say what to do.
type authError struct {
	msg string
	err *client.APIError
}

func (e *authError) Error() string { return e.msg }
func (e *authError) Unwrap() error { return e.err }

// explain turns the API's 401 and 403 into messages that say what to do:
// a 401 names the credential that was refused (or that none was sent) and
// how to get one, a 403 the permission the server named. Other errors are
// returned as they are.
func (a *app) explain(err error) error {
	var ae *client.APIError
	if !errors.As(err, &ae) {
		return err
	}
	switch ae.StatusCode {
	case http.StatusUnauthorized:
		how := `log in with "jetjob login" (it saves an API key in the CLI config), or pass an API key with --token or ` + envToken
		if a.used.Token == "" {
			return &authError{msg: "the API requires authentication and no API key was sent: " + how, err: ae}
		}
		msg := ae.Message
		if msg == "" {
			msg = "invalid credentials"
		}
		return &authError{msg: fmt.Sprintf("the API refused the key from %s (%s): %s", a.used.TokenSource, msg, how), err: ae}
	case http.StatusForbidden:
		need := ae.Permission
		if need == "" {
			need = strings.TrimPrefix(ae.Message, "forbidden: ")
		} else {
			need = "this needs " + need
		}
		return &authError{msg: fmt.Sprintf(`permission denied: %s ("jetjob whoami" shows what you have)`, need), err: ae}
	}
	return err
}
