// Package config reads the settings of jetjob's binaries. Each setting is a
// command-line flag bound to a JETJOB_* environment variable and to a key of
// an optional YAML file (--config FILE, keys = flag names). The first that
// is given wins:
//
//	flag > environment variable > config file > the flag's default
//
// Why the environment is applied after parsing instead of becoming the
// flags' defaults (the obvious pflag idiom): a default is printed by --help,
// so JETJOB_DATABASE_URL=postgres://u:secret@… would show its password to
// anyone reading the help or a CI log of it. Here help only ever shows the
// built-in defaults.
//
// Every value is parsed by its flag's own type, so JETJOB_MIGRATE=1 means
// what --migrate=1 means (booleans take exactly what strconv.ParseBool
// takes). An environment variable set to the empty string counts as unset,
// as does a key with no value (null) in the file: container environments
// often pass empty variables for "nothing". Every bad value, unknown key or
// unreadable file is reported at once, in one error naming where the value
// came from; the value of a setting marked Secret is never shown, in help,
// errors or Values.
package config

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// FileFlag is the flag naming the YAML config file.
const FileFlag = "config"

// reserved are flags that a config file cannot set: they are about the
// command line itself.
var reserved = []string{FileFlag, "help", "version"}

// Source says where a setting's value came from.
type Source string

// Sources of a value, from the strongest.
const (
	FromFlag    Source = "flag"
	FromEnv     Source = "environment"
	FromFile    Source = "config file"
	FromDefault Source = "default"
)

// Option modifies how a setting is bound.
type Option func(*setting)

// Secret marks a setting whose value must never be shown: help shows no
// default for it, errors about it do not quote it, and Values hides it.
func Secret() Option { return func(s *setting) { s.show = hide } }

// SecretURL marks a setting holding URLs (comma-separated) that may carry a
// password: it is shown with the password replaced by "xxxxx", and not at
// all when it is not a URL (a key=value connection string may hold one too).
func SecretURL() Option { return func(s *setting) { s.show = RedactURLs } }

func hide(v string) string {
	if v == "" {
		return ""
	}
	return "xxxxx"
}

// RedactURLs is how a SecretURL setting is shown: each of the
// comma-separated URLs with its password, or its user name when it has no
// password (NATS takes a token there), replaced by "xxxxx"; all of it
// hidden when any part is not a URL.
func RedactURLs(v string) string {
	parts := strings.Split(v, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		u, err := url.Parse(p)
		if err != nil || !strings.Contains(p, "://") {
			return hide(v)
		}
		if u.User != nil {
			if _, ok := u.User.Password(); !ok {
				u.User = url.User("xxxxx")
			}
		}
		parts[i] = u.Redacted()
	}
	return strings.Join(parts, ",")
}

// setting is what the Set knows of one flag or environment-only variable.
type setting struct {
	flag   string              // "" for an environment-only setting
	env    string              // "" for a flag without a variable
	show   func(string) string // nil: the value may be shown as it is
	def    string              // the default, as the flag's Value would print it
	usage  string
	envPtr *string // environment-only settings
	source Source
}

// Set binds the flags of one command to their environment variables and to
// the config file. Bind every setting, let the command line be parsed, then
// call Load.
type Set struct {
	fs       *pflag.FlagSet
	file     string
	byFlag   map[string]*setting
	envOnly  []*setting
	fileName string // for messages; the path as given
}

// New returns a Set registering its flags on fs, starting with --config.
func New(fs *pflag.FlagSet) *Set {
	s := &Set{fs: fs, byFlag: map[string]*setting{}}
	fs.StringVar(&s.file, FileFlag, "", "YAML file of settings, keys named like the flags (precedence: flag, environment, file, default)")
	return s
}

// String binds a string flag to env ("" for none).
func (s *Set) String(p *string, name, env, def, usage string, opts ...Option) {
	s.fs.StringVar(p, name, def, "")
	s.adopt(name, env, usage, opts)
}

// Int binds an int flag to env.
func (s *Set) Int(p *int, name, env string, def int, usage string, opts ...Option) {
	s.fs.IntVar(p, name, def, "")
	s.adopt(name, env, usage, opts)
}

// Bool binds a boolean flag to env.
func (s *Set) Bool(p *bool, name, env string, def bool, usage string, opts ...Option) {
	s.fs.BoolVar(p, name, def, "")
	s.adopt(name, env, usage, opts)
}

// Duration binds a duration flag to env.
func (s *Set) Duration(p *time.Duration, name, env string, def time.Duration, usage string, opts ...Option) {
	s.fs.DurationVar(p, name, def, "")
	s.adopt(name, env, usage, opts)
}

// Var binds a flag of any pflag.Value to env; v's current value is the
// default.
func (s *Set) Var(v pflag.Value, name, env, usage string, opts ...Option) {
	s.fs.Var(v, name, "")
	s.adopt(name, env, usage, opts)
}

// Env binds a setting that only the environment can give: a secret that
// belongs neither on a command line (visible to every local user) nor in a
// file kept in git.
func (s *Set) Env(p *string, env, usage string, opts ...Option) {
	st := &setting{env: env, usage: usage, envPtr: p, def: *p, source: FromDefault}
	for _, o := range opts {
		o(st)
	}
	s.envOnly = append(s.envOnly, st)
}

// adopt records the flag just registered and completes its help text.
func (s *Set) adopt(name, env, usage string, opts []Option) {
	f := s.fs.Lookup(name)
	st := &setting{flag: name, env: env, usage: usage, def: f.DefValue, source: FromDefault}
	for _, o := range opts {
		o(st)
	}
	if st.show != nil {
		// Whatever prints the Value (help's default, pflag's and cobra's
		// messages) sees only what may be shown.
		f.Value = &secretValue{f.Value, st.show}
		f.DefValue = f.Value.String()
	}
	if env != "" {
		usage += " (" + env + ")"
	}
	f.Usage = usage
	s.byFlag[name] = st
}

// Load applies the environment (through lookup, normally os.LookupEnv) and
// the config file to every flag the command line did not set, and the
// environment to environment-only settings. Keys of the file that name no
// flag of this command are an error, except those in otherKeys: flags of
// the binary's other commands, so that one file serves them all.
func (s *Set) Load(lookup func(string) (string, bool), otherKeys ...string) error {
	var errs []error
	file, err := s.readFile()
	if err != nil {
		errs = append(errs, err)
	}
	for _, kv := range file {
		f := s.fs.Lookup(kv.key)
		switch {
		case slices.Contains(reserved, kv.key):
			errs = append(errs, fmt.Errorf("config file %s: key %q cannot be set in a config file", s.fileName, kv.key))
		case f == nil && !slices.Contains(otherKeys, kv.key):
			errs = append(errs, fmt.Errorf("config file %s: unknown key %q: keys are the flags' names, like %q", s.fileName, kv.key, "log-level"))
		}
	}

	s.fs.VisitAll(func(f *pflag.Flag) {
		st := s.byFlag[f.Name]
		if st == nil {
			// A flag bound elsewhere (help, version, a flag of the command
			// registered directly): flag or file only.
			st = &setting{flag: f.Name, def: f.DefValue, source: FromDefault}
			s.byFlag[f.Name] = st
		}
		if f.Changed {
			st.source = FromFlag
			return
		}
		if st.env != "" {
			if v, ok := lookup(st.env); ok && v != "" {
				if err := s.set(f, st, v); err != nil {
					errs = append(errs, fmt.Errorf("%s%s: %w", st.env, s.quote(st, v), err))
				} else {
					st.source = FromEnv
				}
				return
			}
		}
		if slices.Contains(reserved, f.Name) {
			return
		}
		for _, kv := range file {
			if kv.key != f.Name || kv.null {
				continue
			}
			if err := s.set(f, st, kv.value); err != nil {
				errs = append(errs, fmt.Errorf("config file %s: %s%s: %w", s.fileName, kv.key, s.quote(st, kv.value), err))
			} else {
				st.source = FromFile
			}
		}
	})
	for _, st := range s.envOnly {
		if v, ok := lookup(st.env); ok && v != "" {
			*st.envPtr = v
			st.source = FromEnv
		}
	}
	return errors.Join(errs...)
}

// set parses v with f's own type; on failure the flag keeps its default
// (pflag's setters may store a zero value before failing).
func (s *Set) set(f *pflag.Flag, st *setting, v string) error {
	err := f.Value.Set(v)
	if err == nil {
		return nil
	}
	_ = f.Value.Set(st.def)
	return errors.New(want(f.Value.Type()))
}

// quote is how a message shows a value: `="v"`, redacted or left out for
// a secret.
func (s *Set) quote(st *setting, v string) string {
	if st.show != nil {
		v = st.show(v)
		if v == "" || v == "xxxxx" {
			return " (value hidden)"
		}
	}
	return "=" + strconv.Quote(v)
}

// want describes the values a flag type accepts.
func want(typ string) string {
	switch typ {
	case "bool":
		return "want true or false (or 1, 0, t, f, T, F, TRUE, FALSE, True, False)"
	case "int", "int32", "int64", "uint", "uint32", "uint64":
		return "want an integer"
	case "duration":
		return "want a duration like 30s or 1m"
	}
	return "want a valid " + typ
}

// Name is how messages name a flag's setting: "--group / JETJOB_GROUP", or
// "--flag" when it has no variable.
func (s *Set) Name(flag string) string {
	if st := s.byFlag[flag]; st != nil && st.env != "" {
		return "--" + flag + " / " + st.env
	}
	return "--" + flag
}

// Errorf returns an error about a flag's value, named as by Name.
func (s *Set) Errorf(flag, format string, args ...any) error {
	return fmt.Errorf("%s: %s", s.Name(flag), fmt.Sprintf(format, args...))
}

// Source says where a flag's (or an environment-only variable's) value came
// from; meaningful after Load.
func (s *Set) Source(name string) Source {
	if st := s.byFlag[name]; st != nil {
		return st.source
	}
	for _, st := range s.envOnly {
		if st.env == name {
			return st.source
		}
	}
	return FromDefault
}

// Values lists every setting as "name=value (source)", secrets hidden, for
// a start-up log line that says what a process is running with.
func (s *Set) Values() []string {
	var out []string
	s.fs.VisitAll(func(f *pflag.Flag) {
		st := s.byFlag[f.Name]
		if st == nil || slices.Contains(reserved, f.Name) {
			return
		}
		v := f.Value.String() // a secret's Value redacts itself
		out = append(out, fmt.Sprintf("%s=%s (%s)", f.Name, v, st.source))
	})
	for _, st := range s.envOnly {
		v := *st.envPtr
		if st.show != nil {
			v = st.show(v)
		}
		out = append(out, fmt.Sprintf("%s=%s (%s)", st.env, v, st.source))
	}
	return out
}

// EnvUsage describes the environment-only settings, for a command's help.
func (s *Set) EnvUsage() string {
	var b strings.Builder
	w := 0
	for _, st := range s.envOnly {
		w = max(w, len(st.env))
	}
	for _, st := range s.envOnly {
		fmt.Fprintf(&b, "  %-*s  %s\n", w, st.env, st.usage)
	}
	return b.String()
}

// fileValue is one key of the config file.
type fileValue struct {
	key, value string
	null       bool
}

// readFile reads --config, if given, into its keys in file order.
func (s *Set) readFile() ([]fileValue, error) {
	if s.file == "" {
		return nil, nil
	}
	s.fileName = s.file
	f, err := os.Open(s.file)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	return parseFile(f, s.file)
}

// parseFile reads a YAML mapping of flag names to scalars or lists of
// scalars (a list is joined with commas, as the flags that take several
// values expect).
func parseFile(r io.Reader, name string) ([]fileValue, error) {
	dec := yaml.NewDecoder(r)
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil // an empty file sets nothing
		}
		return nil, fmt.Errorf("config file %s: %w", name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("config file %s: want one YAML document", name)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil, nil // only comments
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("config file %s: want a mapping of setting names to values (line %d)", name, root.Line)
	}
	var out []fileValue
	var errs []error
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			errs = append(errs, fmt.Errorf("config file %s: line %d: want a setting name as key", name, k.Line))
			continue
		}
		if seen[k.Value] {
			errs = append(errs, fmt.Errorf("config file %s: line %d: key %q appears twice", name, k.Line, k.Value))
			continue
		}
		seen[k.Value] = true
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		fv := fileValue{key: k.Value}
		switch v.Kind {
		case yaml.ScalarNode:
			fv.value, fv.null = v.Value, v.Tag == "!!null"
		case yaml.SequenceNode:
			items := make([]string, 0, len(v.Content))
			for _, it := range v.Content {
				if it.Kind != yaml.ScalarNode {
					errs = append(errs, fmt.Errorf("config file %s: %s: line %d: want a list of plain values", name, k.Value, it.Line))
					continue
				}
				items = append(items, it.Value)
			}
			fv.value = strings.Join(items, ",")
		default:
			errs = append(errs, fmt.Errorf("config file %s: %s: line %d: want a value or a list of values", name, k.Value, v.Line))
			continue
		}
		out = append(out, fv)
	}
	return out, errors.Join(errs...)
}

// secretValue hides a flag's value from everything that prints a Value
// (help's default, cobra's and pflag's messages); the flag's variable holds
// the real value.
type secretValue struct {
	pflag.Value
	show func(string) string
}

func (v *secretValue) String() string { return v.show(v.Value.String()) }
