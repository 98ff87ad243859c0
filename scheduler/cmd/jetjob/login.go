package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// loginExpiry is how long the key "jetjob login" makes lasts by default.
const loginExpiry = "90d"

func (a *app) loginCmd() *cobra.Command {
	var user, name, expires, provider string
	var pwStdin, loopback bool
	cmd := &cobra.Command{
		Use:   "login [--api URL] [--user NAME] [--password-stdin] | --sso PROVIDER",
		Short: "Log in with your password or identity provider and save an API key for the CLI",
		Long: `Log in to a scheduler with your user name and password: the CLI starts a
session, creates an API key with it (--name, --expires), ends the session,
and saves the address and the key in the CLI config file ($JETJOB_CONFIG,
else <user config dir>/jetjob/cli.json), replacing what the file held.
Later commands use them when no flag or environment variable gives others.

The address is --api's, else JETJOB_API's, else the config file's. The
password is asked on the terminal (without echo), or read from stdin with
--password-stdin.

With --sso PROVIDER you sign in at the company's identity provider instead
(docs/sso.md): the CLI shows a code to enter at the provider's page when the
provider offers device sign-in, else (or with --loopback) an address to open
in a browser on this machine, whose answer comes back to 127.0.0.1.`,
		Example: `  jetjob login --api https://jetjob.example.com --user alice
  printf '%s\n' "$PASSWORD" | jetjob login --user ci --password-stdin --expires 7d
  jetjob login --api https://jetjob.example.com --sso corp`,
		Args: needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.tokenFlag != "" {
				return usagef("login makes its own key: --token has no use here")
			}
			if provider != "" {
				if user != "" || pwStdin {
					return usagef("--sso signs in at the identity provider: --user and --password-stdin have no use with it")
				}
				return a.loginSSO(cmd.Context(), provider, name, expires, loopback)
			}
			if loopback {
				return usagef("--loopback goes with --sso")
			}
			if user == "" {
				if _, ok := a.terminal(); !ok {
					return usagef("missing required flag --user (stdin is not a terminal to ask for it)")
				}
				var err error
				if user, err = a.askLine("User: "); err != nil {
					return err
				}
			}
			if err := userArg(user); err != nil {
				return err
			}
			at, e, path, err := a.loginTarget(name, expires)
			if err != nil {
				return err
			}
			pw, err := a.readPassword(pwStdin, false, "Password for "+user)
			if err != nil {
				return err
			}
			c, err := a.newClient(e, "")
			if err != nil {
				return err
			}
			me, session, err := c.Login(cmd.Context(), user, pw)
			var ae *client.APIError
			if errors.As(err, &ae) && (ae.StatusCode == http.StatusUnauthorized || ae.StatusCode == http.StatusTooManyRequests) {
				return fmt.Errorf("login to %s as %s refused: %s", c.BaseURL(), user, ae.Message)
			}
			if err != nil {
				return err
			}
			sc, err := client.New(e.API, "", client.WithHTTPClient(a.httpClient), client.WithSessionCookie(session))
			if err != nil {
				return err
			}
			// The user is named although the session is theirs: a scheduler
			// under --insecure-no-auth takes every request for an anonymous
			// admin, who has no keys of its own.
			k, err := sc.CreateKey(cmd.Context(), apiv1.KeyCreate{Name: name, User: me.Name, ExpiresAt: at})
			// The session was only the way to the key: end it whatever
			// happened (best effort; it expires by itself anyway).
			logoutCtx, cancel := context.WithTimeout(context.WithoutCancel(cmd.Context()), 5*time.Second)
			_ = sc.Logout(logoutCtx)
			cancel()
			if err != nil {
				return fmt.Errorf("logged in as %s, but creating the CLI's API key failed: %w", me.Name, err)
			}
			return a.saveLogin(path, e.API, c.BaseURL(), me.Name, k)
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "your user name (asked when stdin is a terminal)")
	cmd.Flags().BoolVar(&pwStdin, "password-stdin", false, "read the password from stdin (one line)")
	cmd.Flags().StringVar(&name, "name", defaultKeyName("login"), "name of the API key it creates")
	cmd.Flags().StringVar(&expires, "expires", loginExpiry, "end the key after this long (90d, 36h), at an RFC 3339 time, or never")
	cmd.Flags().StringVar(&provider, "sso", "", "sign in at this identity provider of the scheduler (its id, docs/sso.md) instead of with a password")
	cmd.Flags().BoolVar(&loopback, "loopback", false, "with --sso: sign in through a browser on this machine (a redirect to 127.0.0.1) even when the provider offers device sign-in")
	return cmd
}

// saveLogin saves the key a login made for user to the config file and
// says so.
func (a *app) saveLogin(path, api, base, user string, k *apiv1.CreatedKey) error {
	if err := client.SaveConfig(path, client.Config{API: api, Token: k.Secret}); err != nil {
		return fmt.Errorf("saving the API key %d (%s) to %s: %w; revoke it with \"jetjob keys revoke %d\"", k.ID, k.Prefix, path, err, k.ID)
	}
	if a.output == outputJSON {
		return writeJSON(a.stdout, k.Key) // never the secret: it is in the file
	}
	fmt.Fprintf(a.stdout, "Logged in to %s as %s.\nSaved API key %d (%s, %s) to %s.\n", base, user, k.ID, k.Prefix, expiry(k.ExpiresAt), path)
	a.warnOverrides(base)
	return nil
}

// loginTarget checks the name and expiry of the key a login makes, and
// finds where it goes: the API to ask, and the CLI configuration file that
// keeps the key.
func (a *app) loginTarget(name, expires string) (*time.Time, endpoint, string, error) {
	if name == "" {
		return nil, endpoint{}, "", usagef("--name: must not be empty (say what the key is for)")
	}
	at, err := expiresAt(expires, time.Now())
	if err != nil {
		return nil, endpoint{}, "", err
	}
	e, err := a.resolveEndpoint()
	if err != nil {
		return nil, endpoint{}, "", err
	}
	path, err := client.ConfigPath()
	if err != nil {
		return nil, endpoint{}, "", err
	}
	return at, e, path, nil
}

// loginSSO is login --sso: a key from a sign-in at the identity provider.
func (a *app) loginSSO(ctx context.Context, provider, name, expires string, loopback bool) error {
	at, e, path, err := a.loginTarget(name, expires)
	if err != nil {
		return err
	}
	c, err := a.newClient(e, "")
	if err != nil {
		return err
	}
	k, err := a.ssoLogin(ctx, c, provider, name, at, loopback)
	if err != nil {
		return fmt.Errorf("login to %s through %s: %w", c.BaseURL(), provider, err)
	}
	return a.saveLogin(path, e.API, c.BaseURL(), k.User, k)
}

// warnOverrides says when the environment would override what login just
// saved for api.
func (a *app) warnOverrides(api string) {
	if v := os.Getenv(envAPI); v != "" && v != api {
		fmt.Fprintf(a.stderr, "note: %s=%s is set and takes precedence over the saved address\n", envAPI, v)
	}
	if os.Getenv(envToken) != "" {
		fmt.Fprintf(a.stderr, "note: %s is set and takes precedence over the saved key: unset it to use the key\n", envToken)
	}
}

func (a *app) logoutCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: `Revoke the API key "jetjob login" saved and remove it from the config file`,
		Args:  needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, err := client.ConfigPath()
			if err != nil {
				return err
			}
			cfg, err := client.LoadConfig(path)
			if err != nil {
				return err
			}
			if cfg.Token == "" {
				return fmt.Errorf("%s holds no API key: nothing to log out of", path)
			}
			c, err := client.New(cfg.API, cfg.Token, client.WithHTTPClient(a.httpClient))
			if err != nil {
				return fmt.Errorf("%w (from %s)", err, path)
			}
			me, err := c.Me(cmd.Context())
			var ae *client.APIError
			switch {
			case errors.As(err, &ae) && ae.StatusCode == http.StatusUnauthorized:
				// Already revoked or expired: only the file is left to clean.
			case err != nil:
				return err
			case me.Auth != "key":
				return fmt.Errorf("the token in %s is not an API key (it authenticates as %s, by %s): remove it from the file yourself", path, me.Name, me.Auth)
			default:
				if err := c.RevokeKey(cmd.Context(), me.KeyID); err != nil {
					return err
				}
			}
			if err := client.SaveConfig(path, client.Config{API: cfg.API}); err != nil {
				return err
			}
			if me != nil {
				fmt.Fprintf(a.stdout, "Revoked API key %d (%s) of %s and removed it from %s.\n", me.KeyID, me.KeyPrefix, me.Name, path)
			} else {
				fmt.Fprintf(a.stdout, "The API key in %s no longer worked; removed it.\n", path)
			}
			return nil
		},
	}
}

func (a *app) whoamiCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "whoami",
		Short: "Show who the API takes you for: user, role, grants and how you authenticated",
		Args:  needArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var api string
			return show(a, cmd, func(c *client.Client, ctx context.Context) (*apiv1.Me, error) {
				api = c.BaseURL()
				return c.Me(ctx)
			}, func(w io.Writer, me *apiv1.Me) error {
				var k kv
				k.add("User", me.Name)
				k.add("Display name", me.DisplayName)
				role := "admin (every group)"
				if !me.Admin {
					role = grantList(me.Grants, "\n")
					if role == "" {
						role = "no group granted"
					}
				}
				k.add("Role", role)
				k.add("Authenticated by", authenticatedBy(me))
				k.add("Credential from", a.used.TokenSource)
				k.add("API", api)
				return k.write(w)
			})
		},
	}
}

// authenticatedBy says how a request authenticated, from GET /me.
func authenticatedBy(me *apiv1.Me) string {
	switch me.Auth {
	case "key":
		return "API key " + strconv.FormatInt(me.KeyID, 10) + " (" + me.KeyPrefix + ")"
	case "session":
		if me.SessionExpiresAt != nil {
			return "session, ends by " + fmtTime(*me.SessionExpiresAt)
		}
		return "session"
	case "bootstrap":
		return "the bootstrap token (the scheduler's " + envToken + ")"
	case "none":
		return "none: the scheduler runs with --insecure-no-auth"
	}
	return me.Auth
}
