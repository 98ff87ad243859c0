package main

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/jetjob/jetjob/shared/trigsign"
)

// triggerKeyCmd makes and shows trigger signing keys (package trigsign;
// docs/operations.md, "Trigger signing").
func triggerKeyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trigger-key",
		Short: "Make a trigger signing key, or show the public key of one",
		Long: `Schedulers sign every trigger with an Ed25519 private key (--trigger-signing-key,
JETJOB_TRIGGER_SIGNING_KEY_FILE); workers run only triggers signed by a key
they accept (JETJOB_TRIGGER_PUBLIC_KEYS). These commands make such a key and
print its public half, in the form the workers take.`,
	}
	cmd.AddCommand(triggerKeyGenerateCmd(), triggerKeyPublicCmd())
	return cmd
}

func triggerKeyGenerateCmd() *cobra.Command {
	var out, publicOut string
	var env bool
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Make a signing key: write it to a file (or print both halves as variables)",
		Long: `Make a new Ed25519 trigger signing key. With --out, write it to that file (PEM,
mode 0600; an existing file is never overwritten) and print its public key,
base64, for the workers' JETJOB_TRIGGER_PUBLIC_KEYS. With --env, print
JETJOB_TRIGGER_SIGNING_KEY=... and JETJOB_TRIGGER_PUBLIC_KEYS=... lines instead,
for a shell to export (docker compose).`,
		Example: `  jetjob-scheduler trigger-key generate --out trigger.key
  eval "$(jetjob-scheduler trigger-key generate --env)"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (out == "") == !env {
				return usageError{Err: errors.New("give --out FILE or --env")}
			}
			priv, err := trigsign.GenerateKey()
			if err != nil {
				return err
			}
			pub := trigsign.EncodePublicKey(priv.Public().(ed25519.PublicKey))
			if env {
				// One line each: the seed, base64 (the variable takes
				// PEM too, which does not fit a line).
				fmt.Fprintf(cmd.OutOrStdout(), "JETJOB_TRIGGER_SIGNING_KEY=%s\nJETJOB_TRIGGER_PUBLIC_KEYS=%s\n",
					base64.StdEncoding.EncodeToString(priv.Seed()), pub)
				return nil
			}
			if err := writeKeyFile(out, priv); err != nil {
				return err
			}
			if publicOut != "" {
				if err := os.WriteFile(publicOut, []byte(pub+"\n"), 0o644); err != nil {
					return fmt.Errorf("public key: %w", err)
				}
			}
			fmt.Fprintln(cmd.OutOrStdout(), pub)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "file to write the private key to (PEM, mode 0600); it must not exist")
	cmd.Flags().StringVar(&publicOut, "public-out", "", "file to write the public key to as well (base64)")
	cmd.Flags().BoolVar(&env, "env", false, "print the key pair as JETJOB_TRIGGER_SIGNING_KEY and JETJOB_TRIGGER_PUBLIC_KEYS lines")
	return cmd
}

// writeKeyFile writes priv to a new file path, readable by its owner only.
func writeKeyFile(path string, priv ed25519.PrivateKey) error {
	data, err := trigsign.EncodePrivateKeyPEM(priv)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return usageError{Err: fmt.Errorf("%s exists: a signing key is never overwritten (remove it first, or rotate: docs/operations.md)", path)}
	}
	if err != nil {
		return fmt.Errorf("trigger signing key: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("trigger signing key: %w", err)
	}
	return f.Close()
}

func triggerKeyPublicCmd() *cobra.Command {
	var keyFile string
	cmd := &cobra.Command{
		Use:   "public",
		Short: "Print the public key of a signing key, for the workers",
		Long: `Print the public key of the trigger signing key in --key (or, without it,
JETJOB_TRIGGER_SIGNING_KEY_FILE or JETJOB_TRIGGER_SIGNING_KEY), base64, the form
of the workers' JETJOB_TRIGGER_PUBLIC_KEYS, and its key id (the Jetjob-Key header
of the triggers it signs) on standard error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if keyFile == "" {
				keyFile = os.Getenv("JETJOB_TRIGGER_SIGNING_KEY_FILE")
			}
			var priv ed25519.PrivateKey
			var err error
			switch {
			case keyFile != "":
				priv, err = trigsign.LoadPrivateKeyFile(keyFile)
			case os.Getenv("JETJOB_TRIGGER_SIGNING_KEY") != "":
				priv, err = trigsign.ParsePrivateKey([]byte(os.Getenv("JETJOB_TRIGGER_SIGNING_KEY")))
			default:
				return usageError{Err: errors.New("give --key FILE (or JETJOB_TRIGGER_SIGNING_KEY_FILE, JETJOB_TRIGGER_SIGNING_KEY)")}
			}
			if err != nil {
				return usageError{Err: err}
			}
			pub := priv.Public().(ed25519.PublicKey)
			fmt.Fprintln(cmd.OutOrStdout(), trigsign.EncodePublicKey(pub))
			fmt.Fprintln(cmd.ErrOrStderr(), "key id", trigsign.KeyID(pub))
			return nil
		},
	}
	cmd.Flags().StringVar(&keyFile, "key", "", "file of the signing key")
	return cmd
}
