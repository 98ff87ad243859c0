package main

import (
	"fmt"
	"os"

	"github.com/jetjob/jetjob/scheduler/client"
)

// Environment variables read by the CLI.
const (
	envAPI   = "JETJOB_API"
	envToken = "JETJOB_API_TOKEN"
)

// endpoint is a resolved API address and token, with where each came from.
type endpoint struct {
	API, APISource     string
	Token, TokenSource string
}

// resolveEndpoint finds the API address and the token, first that is set
// (non-empty) wins: the flags, the environment, the CLI config file. The
// file is read only when something is still missing, and its token is used
// only with its own address.
func (a *app) resolveEndpoint() (endpoint, error) {
	var e endpoint
	pick := func(val, src *string, v, s string) {
		if *val == "" && v != "" {
			*val, *src = v, s
		}
	}
	pick(&e.API, &e.APISource, a.apiFlag, "--api")
	pick(&e.Token, &e.TokenSource, a.tokenFlag, "--token")
	pick(&e.API, &e.APISource, os.Getenv(envAPI), envAPI)
	pick(&e.Token, &e.TokenSource, os.Getenv(envToken), envToken)
	if e.API != "" && e.Token != "" {
		return e, nil
	}

	path, err := client.ConfigPath()
	if err != nil {
		if e.API == "" {
			return e, fmt.Errorf("no API address: pass --api or set %s (%v)", envAPI, err)
		}
		return e, nil // the token is optional (--insecure-no-auth schedulers)
	}
	cfg, err := client.LoadConfig(path)
	if err != nil {
		return e, err
	}
	pick(&e.API, &e.APISource, cfg.API, path)
	// The file's token belongs to the file's address: never send it to a
	// server named by a flag or the environment.
	if e.API == cfg.API {
		pick(&e.Token, &e.TokenSource, cfg.Token, path)
	}
	if e.API == "" {
		return e, fmt.Errorf("no API address: start a local cluster with \"jetjob-scheduler dev\" (it saves its address to %s), or pass --api URL / set %s", path, envAPI)
	}
	return e, nil
}

// client returns an API client for the resolved endpoint.
func (a *app) client() (*client.Client, error) {
	e, err := a.resolveEndpoint()
	if err != nil {
		return nil, err
	}
	a.used = e
	return a.newClient(e, e.Token)
}

// newClient makes a client for e's address with token (login has none
// yet). A bad address is the user's to fix where it came from: a usage
// error when it was --api, else an error naming its source.
func (a *app) newClient(e endpoint, token string) (*client.Client, error) {
	c, err := client.New(e.API, token, client.WithHTTPClient(a.httpClient))
	if err != nil {
		if e.APISource == "--api" {
			return nil, &usageError{err: err}
		}
		return nil, fmt.Errorf("%w (from %s)", err, e.APISource)
	}
	return c, nil
}
