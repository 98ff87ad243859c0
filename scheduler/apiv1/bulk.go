package apiv1

// Bulk operations on runs:
//
//	POST /api/v1/runs/bulk  RunsBulk → RunsBulkResult
//
// The runs are named by ids, or picked by a filter: the query of GET
// /runs (job, group, worker, status, trigger_type, from, to), read with
// the caller's credentials, so only runs they may read are picked. Each
// item goes through its own route with the caller's credentials (POST
// /runs/{id}/kill; a re-run: GET /runs/{id}, then POST /jobs/{job}/trigger
// with the run's params; DELETE /runs/{id}), so it is authorized, checked
// and audited exactly as alone; an item refused is reported in its result
// and the others go on. At most 500 runs per request: a filter matching
// more is refused whole, before any run is touched.

// Bulk actions on runs.
const (
	BulkKill   = "kill"
	BulkRerun  = "rerun"
	BulkDelete = "delete"
)

// RunsBulk is the body of POST /runs/bulk.
type RunsBulk struct {
	// Action is kill, rerun or delete.
	Action string  `json:"action"`
	IDs    []int64 `json:"ids,omitempty"`
	// Filter picks every run GET /runs?<filter> matches instead of IDs
	// (give one): a query string such as "status=FAILED&job=7", without
	// limit or cursor.
	Filter string `json:"filter,omitempty"`
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
// the run it made or changed (a re-run's new run; none for a deletion,
// 204), and the error when it was refused.
type RunsBulkItem struct {
	ID     int64  `json:"id"`
	Status int    `json:"status"`
	Run    int64  `json:"run,omitempty"`
	Error  string `json:"error,omitempty"`
}
