// Package builtin holds the handlers the drop-in jetjob-worker binary offers:
// Shell runs a command, HTTP calls a URL. SDK users may register them too:
//
//	w.Handle("shell", builtin.Shell(builtin.ShellConfig{}))
//	w.Handle("http", builtin.HTTP(builtin.HTTPConfig{AllowHosts: []string{"*.internal.example.com"},
//		Egress: builtin.Egress{Allow: []string{"10.20.0.0/16"}}})) // where *.internal.example.com lives
//
// Both take their instructions from the job's params and write what happens
// to job.Logger, so it lands in the run's log on JETJOB_LOGS.
//
// Both are powerful: a worker with Shell runs any command whoever can edit
// jobs of its group asks for, and HTTP reaches any host its allow-list names
// (and, through its exact entries and Egress.Allow, internal addresses; see
// HTTPConfig). Enable them only on workers of groups whose job editors you
// trust that far.
// Shell gives commands a minimal environment, not the worker's (ShellConfig,
// BaseEnv), so that a job cannot print the credentials the worker holds.
package builtin
