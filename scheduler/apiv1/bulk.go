package apiv1

// Bulk operations on runs:
//
//	POST /api/v1/runs/bulk  RunsBulk → RunsBulkResult
//
// Each item goes through its own route with the caller's credentials
// (POST /runs/{id}/kill; a re-run: GET /runs/{id}, then POST
// /jobs/{job}/trigger with the run's params), so it is authorized, checked
// and audited exactly as alone; an item refused is reported in its result
// and the others go on. At most 500 runs per request.

// Bulk actions on runs.
const (
	BulkKill  = "kill"
	BulkRerun = "rerun"
)

// RunsBulk is the body of POST /runs/bulk.
type RunsBulk struct {
	// Action is kill or rerun.
	Action string  `json:"action"`
	IDs    []int64 `json:"ids"`
}

// RunsBulkResult answers a bulk request: how many items were done and how
// many failed, and each item's result in the order asked (repeated ids
// once).
type RunsBulkResult struct {
	Done    int            `json:"done"`
	Failed  int            `json:"failed"`
	Results []RunsBulkItem `json:"results"`
}

// RunsBulkItem is one item's result: the HTTP status its own route answered,
// the run it made or changed (a re-run's new run), and the error when it
// was refused.
type RunsBulkItem struct {
	ID     int64  `json:"id"`
	Status int    `json:"status"`
	Run    int64  `json:"run,omitempty"`
	Error  string `json:"error,omitempty"`
}
