// Package deploytest holds the tests of deploy/'s artefacts, which an
// operator adopts as they are and which nothing else compiles:
//
//   - the Grafana dashboard (deploy/grafana) and the alert rules
//     (deploy/prometheus) name only series the binaries really export, so a
//     renamed metric breaks a test rather than a panel or a page;
//   - every alert rule has a promtool test where it fires and one where it
//     does not (promtool itself runs them: make rules-check);
//   - the Helm chart (deploy/helm) renders, with each example values file,
//     Deployments and a Service whose probes, ports and JETJOB_* settings
//     match what the binaries take.
//
// The chart's tests and the dashboard's parse need helm and promtool
// (JETJOB_HELM, JETJOB_PROMTOOL), which make deploy-test provides and
// passes in; make test-unit leaves the package to it. Without them (a plain
// go test ./...) those tests skip naming make deploy-test; the others run,
// in the short tier too.
//
// The package has no code of its own.
package deploytest
