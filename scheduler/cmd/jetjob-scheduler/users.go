package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/internal/config"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

func usersCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "users",
		Short: "Manage users directly in the database (bootstrap)",
	}
	cmd.AddCommand(createAdminCmd())
	return cmd
}

func createAdminCmd() *cobra.Command {
	var (
		dbURL       string
		displayName string
		set         *config.Set
	)
	cmd := &cobra.Command{
		Use:   "create-admin NAME",
		Short: "Create an admin user (the first one, typically)",
		Long: `Create an admin user in the database, for the first login and the first API
keys (after that, admins manage users through the API). The password comes
from JETJOB_ADMIN_PASSWORD, else from the first line of standard input; it
must have at least 12 characters. The change is recorded in the audit log as
made by "system".`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := loadDB(cmd, set, &dbURL); err != nil {
				return err
			}
			pw := os.Getenv("JETJOB_ADMIN_PASSWORD")
			if pw == "" {
				line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
				if err != nil && !errors.Is(err, io.EOF) {
					return fmt.Errorf("read the password from standard input: %w", err)
				}
				pw = strings.TrimRight(line, "\r\n")
			}
			if err := auth.CheckPasswordPolicy(pw); err != nil {
				return usageError{Err: fmt.Errorf("%w (set JETJOB_ADMIN_PASSWORD or write it on standard input)", err)}
			}
			pool, err := openPool(cmd.Context(), dbURL)
			if err != nil {
				return err
			}
			defer pool.Close()
			if err := createAdmin(cmd.Context(), pool, args[0], displayName, pw); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "admin %s created\n", args[0])
			return nil
		},
	}
	set = config.New(cmd.Flags())
	set.String(&dbURL, "database-url", "JETJOB_DATABASE_URL", "", "PostgreSQL URL", config.SecretURL())
	set.String(&displayName, "display-name", "", "", "the user's display name")
	return cmd
}

// createAdmin stores an admin user with password pw.
func createAdmin(ctx context.Context, pool *pgxpool.Pool, name, displayName, pw string) error {
	st, err := store.Open(ctx, pool, 0)
	if err != nil {
		return err
	}
	h, err := auth.HashPassword(ctx, pw)
	if err != nil {
		return err
	}
	if _, err := st.CreateUser(ctx, store.System, store.User{Name: name, DisplayName: displayName, PasswordHash: h, Admin: true}); err != nil {
		return fmt.Errorf("create admin %q: %w", name, err)
	}
	return nil
}

// createAdminKey creates an API key for an admin user and returns its secret.
func createAdminKey(ctx context.Context, pool *pgxpool.Pool, user, name string) (string, error) {
	st, err := store.Open(ctx, pool, 0)
	if err != nil {
		return "", err
	}
	tok, prefix, hash, err := auth.NewKey()
	if err != nil {
		return "", err
	}
	if _, err := st.CreateKey(ctx, store.System, store.Key{Prefix: prefix, Name: name, User: user}, hash); err != nil {
		return "", fmt.Errorf("create key of %q: %w", user, err)
	}
	return tok, nil
}
