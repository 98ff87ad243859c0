package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ConfigEnv names the environment variable that overrides the CLI
// configuration file's path.
const ConfigEnv = "JETJOB_CONFIG"

// Config is the CLI configuration file: where the API is and the token to
// use. `jetjob-scheduler dev` writes it; the jetjob CLI reads it when no flag
// or environment variable gives the address or the token.
type Config struct {
	API   string `json:"api"`
	Token string `json:"token"`
}

// ConfigPath returns $JETJOB_CONFIG when set, else
// os.UserConfigDir()/jetjob/cli.json.
func ConfigPath() (string, error) {
	if p := os.Getenv(ConfigEnv); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("locating the jetjob CLI config (set %s to choose a file): %w", ConfigEnv, err)
	}
	return filepath.Join(dir, "jetjob", "cli.json"), nil
}

// LoadConfig reads the configuration file at path. A missing (or empty) file
// is not an error: it yields a zero Config.
func LoadConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("reading config: %w", err)
	}
	var c Config
	if len(bytes.TrimSpace(b)) == 0 {
		return c, nil
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// SaveConfig writes c to path atomically (a temporary file in the same
// directory, then a rename), creating missing directories with mode 0700.
// The file gets mode 0600: it holds a token.
func SaveConfig(path string, c Config) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding config: %w", err)
	}
	b = append(b, '\n')

	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating config directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing config: %w", err)
	}
	tmpName := tmp.Name()
	committed := false
	defer func() {
		if !committed {
			_ = tmp.Close()
			_ = os.Remove(tmpName)
		}
	}()
	// CreateTemp already uses 0600; make it explicit in case that changes.
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("writing config: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		return fmt.Errorf("writing config: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("writing config: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing config: %w", err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("writing config: %w", err)
	}
	committed = true
	// Make the rename durable; best effort (not every platform can sync a directory).
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
