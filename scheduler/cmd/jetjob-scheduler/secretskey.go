package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/internal/config"
	jobsecrets "github.com/jetjob/jetjob/scheduler/internal/secrets"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// secretsCmd holds the administration of jobs' secrets that needs the
// keyring itself, which only the schedulers' host holds (docs/jobs.md,
// "Secrets"): generating a key and re-encrypting every secret under the
// keyring's primary key after a new one was put first.
func secretsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "secrets", Short: "Administer the keyring of jobs' secrets"}
	cmd.AddCommand(&cobra.Command{
		Use:   "generate-key",
		Short: "Print a new random key for --secrets-key-file or JETJOB_SECRETS_KEY",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), jobsecrets.GenerateKey())
			return err
		},
	}, rotateKeyCmd())
	return cmd
}

func rotateKeyCmd() *cobra.Command {
	var (
		dbURL, key, keyFile string
		set                 *config.Set
	)
	cmd := &cobra.Command{
		Use:   "rotate-key",
		Short: "Re-encrypt every secret under the keyring's primary (first) key",
		Long: `Re-encrypt every secret not under the keyring's primary key with it. Rotate
the key in three steps: put the new key first on every scheduler
("new:BASE64,old:BASE64"), run this once, then drop the old key. Each
re-encrypted secret is audited as secret.rekey; values do not change.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := loadDB(cmd, set, &dbURL); err != nil {
				return err
			}
			kr, err := jobsecrets.LoadKeyring(key, keyFile)
			if err != nil {
				return usageError{Err: err}
			}
			if !kr.Configured() {
				return usageError{Err: jobsecrets.ErrNoKey}
			}
			pool, err := openPool(cmd.Context(), dbURL)
			if err != nil {
				return err
			}
			defer pool.Close()
			st, err := store.Open(cmd.Context(), pool, 0, store.WithSecrets(kr))
			if err != nil {
				return err
			}
			n, err := st.RotateSecretsKey(cmd.Context(), store.Actor{Name: "rotate-key", Auth: "internal"})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "re-encrypted %d secrets under key %s\n", n, kr.Primary())
			return err
		},
	}
	set = config.New(cmd.Flags())
	set.String(&dbURL, "database-url", "JETJOB_DATABASE_URL", "", "PostgreSQL URL", config.SecretURL())
	registerSecretsKey(set, &key, &keyFile)
	cmd.Long += "\n" + envHelp(set)
	return cmd
}
